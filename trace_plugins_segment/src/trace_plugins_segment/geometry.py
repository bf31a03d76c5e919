"""Undirected segments ``[[x0, y0], [x1, y1]]`` and their soft endpoint distance.

The distance of a predicted segment to a target is the better of the two
endpoint pairings, each pairing measured by its larger endpoint distance; it
then goes through the core's point kernel, so reversed endpoints score the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_tasks.family import (
    AnnotationParseError,
    ScoringContext,
    coordinates,
    from_numpy,
    hypot_grid,
    soft_similarity,
    soft_similarity_grid,
)

Segment = tuple[float, float, float, float]  # x0, y0, x1, y1

#: Below this many cells a Python double loop beats numpy's per-call overhead.
#: Measured crossover of the whole set match (matrix, assignment, re-sum) at
#: 5x5 items: see ``benchmarks/bench_scoring.py`` and benchmarks/README.md.
NUMPY_MIN_CELLS = 25


def parse_segment(value: Any) -> Segment:
    """Two ``[x, y]`` endpoints of finite, non-boolean numbers."""
    value = from_numpy(value)  # a target read from parquet may be an array
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise AnnotationParseError("a segment is [[x0, y0], [x1, y1]]")
    x0, y0 = coordinates(value[0], 2)
    x1, y1 = coordinates(value[1], 2)
    return (x0, y0, x1, y1)


def segment_distance(a: Segment, b: Segment) -> float:
    """min over the two pairings of the larger endpoint distance."""
    same = max(math.hypot(a[0] - b[0], a[1] - b[1]), math.hypot(a[2] - b[2], a[3] - b[3]))
    swapped = max(math.hypot(a[0] - b[2], a[1] - b[3]), math.hypot(a[2] - b[0], a[3] - b[1]))
    return min(same, swapped)


def similarity(a: Segment, b: Segment, ctx: ScoringContext) -> float:
    return soft_similarity(segment_distance(a, b), ctx.half_life_px)


def similarity_matrix(preds: Sequence[Segment], gts: Sequence[Segment], ctx: ScoringContext) -> Any:
    """Pairwise similarity (rows: predictions), float64; numpy only for large sets.

    Used to choose the assignment; the reported total is re-summed with
    :func:`similarity`, so the two paths cannot disagree on the reward.
    """
    if len(preds) * len(gts) < NUMPY_MIN_CELLS:
        return [[similarity(p, g, ctx) for g in gts] for p in preds]
    p = np.asarray(preds, dtype=np.float64)[:, None, :]
    g = np.asarray(gts, dtype=np.float64)[None, :, :]
    with np.errstate(all="ignore"):  # exact differences; an overflow is an infinite distance, similarity 0
        # math.hypot, as segment_distance computes it (numpy's may differ in the last bit, by CPU); max and min of
        # equal values are equal, so the distances are segment_distance's and the pairs are chosen on the reward's values
        same = np.maximum(
            hypot_grid(p[..., 0] - g[..., 0], p[..., 1] - g[..., 1]),
            hypot_grid(p[..., 2] - g[..., 2], p[..., 3] - g[..., 3]),
        )
        swapped = np.maximum(
            hypot_grid(p[..., 0] - g[..., 2], p[..., 1] - g[..., 3]),
            hypot_grid(p[..., 2] - g[..., 0], p[..., 3] - g[..., 1]),
        )
    return soft_similarity_grid(np.minimum(same, swapped), ctx.half_life_px)
