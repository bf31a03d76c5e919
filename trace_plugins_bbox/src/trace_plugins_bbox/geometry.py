"""Boxes ``[x0, y0, x1, y1]`` in pixels and their raw IoU (float64)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_tasks.family import AnnotationParseError, ScoringContext, coordinates, is_flat

Box = tuple[float, float, float, float]

#: Below this many cells a Python double loop beats numpy's per-call overhead.
#: Measured crossover of the whole set match (matrix, assignment, sum): Python
#: wins at 10x10, numpy at 16x16 (see benchmarks/README.md).
NUMPY_MIN_CELLS = 200


def parse_box(value: Any) -> Box:
    """Corners reordered to left/top/right/bottom; zero width or height fails; no clipping."""
    x0, y0, x1, y1 = coordinates(value, 4)
    if x0 > x1:
        x0, x1 = x1, x0
    if y0 > y1:
        y0, y1 = y1, y0
    if x0 == x1 or y0 == y1:
        raise AnnotationParseError("zero-area box")
    return (x0, y0, x1, y1)


def xywh_corners(value: Any) -> list[float]:
    """A box written ``[x, y, width, height]`` (COCO's order) as its corners ``[x, y, x + width, y + height]``.

    A reading for the tools' mismatch hints only (``Primitive.rereadings``), never the reward.
    """
    x, y, w, h = coordinates(value, 4)
    return [x, y, x + w, y + h]


def is_box(value: Any) -> bool:
    return is_flat(value, 4)


def iou(a: Box, b: Box, ctx: ScoringContext | None = None) -> float:
    """Raw intersection over union; a non-finite result (overflowing coordinates) is 0."""
    # Conditional expressions instead of min()/max(): the same values (ties keep
    # the first argument, as min and max do) at a third of the cost per pair.
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    iw = (bx1 if bx1 < ax1 else ax1) - (bx0 if bx0 > ax0 else ax0)
    if not iw > 0:
        return 0.0
    ih = (by1 if by1 < ay1 else ay1) - (by0 if by0 > ay0 else ay0)
    if not ih > 0:
        return 0.0
    inter = iw * ih
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    if not union > 0:
        return 0.0
    value = inter / union
    return value if 0.0 <= value <= 1.0 else 0.0


def _python_matrix(preds: Sequence[Box], gts: Sequence[Box]) -> list[list[float]]:
    """``[[iou(p, g) for g in gts] for p in preds]``, bit for bit, with :func:`iou` inlined.

    A call per pair was a third of the cost of a 14x14 matrix; the areas are
    computed once per box, by the same expressions, so every value is the same.
    """
    areas = [(bx1 - bx0) * (by1 - by0) for bx0, by0, bx1, by1 in gts]
    rows = []
    for ax0, ay0, ax1, ay1 in preds:
        area = (ax1 - ax0) * (ay1 - ay0)
        row = []
        for (bx0, by0, bx1, by1), other in zip(gts, areas, strict=True):
            iw = (bx1 if bx1 < ax1 else ax1) - (bx0 if bx0 > ax0 else ax0)
            if not iw > 0:
                row.append(0.0)
                continue
            ih = (by1 if by1 < ay1 else ay1) - (by0 if by0 > ay0 else ay0)
            if not ih > 0:
                row.append(0.0)
                continue
            inter = iw * ih
            union = area + other - inter
            value = inter / union if union > 0 else 0.0
            row.append(value if 0.0 <= value <= 1.0 else 0.0)
        rows.append(row)
    return rows


def _corners(boxes: Sequence[Box]) -> Any:
    """Boxes as an (n, 4) float64 array: ``np.asarray(boxes, dtype=np.float64)``, at 60% of its cost.

    ``asarray`` inspects every nested sequence to find the shape; the boxes are 4-tuples of floats
    (parsed), so their numbers are read in one flat pass. A box of another length makes the reshape fail.
    """
    flat = np.fromiter(itertools.chain.from_iterable(boxes), dtype=np.float64)
    return flat.reshape(len(boxes), 4)


def iou_matrix(preds: Sequence[Box], gts: Sequence[Box], ctx: ScoringContext | None = None) -> Any:
    """Pairwise IoU (rows: predictions); numpy for large sets, Python for small ones."""
    if len(preds) * len(gts) < NUMPY_MIN_CELLS:
        return _python_matrix(preds, gts)
    p = _corners(preds)[:, None, :]
    g = _corners(gts)[None, :, :]
    with np.errstate(all="ignore"):
        iw = np.minimum(p[..., 2], g[..., 2]) - np.maximum(p[..., 0], g[..., 0])
        ih = np.minimum(p[..., 3], g[..., 3]) - np.maximum(p[..., 1], g[..., 1])
        inter = np.where((iw > 0) & (ih > 0), iw * ih, 0.0)
        union = (p[..., 2] - p[..., 0]) * (p[..., 3] - p[..., 1]) + (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1]) - inter
        out = np.where(union > 0, inter / union, 0.0)
    # NaN and the infinities fail one of the two comparisons, so they come out 0 without an isfinite pass.
    return np.where((out >= 0) & (out <= 1), out, 0.0)
