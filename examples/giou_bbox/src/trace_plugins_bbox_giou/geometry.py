"""Generalized IoU of two boxes, as the ``bbox`` owner parses them.

The ``bbox`` type belongs to trace-plugins-bbox; its parse hook returns a
``tuple (x0, y0, x1, y1) of floats with x0 < x1 and y0 < y1`` (finite, corners
already ordered, zero area refused). That is all this module relies on: it
never parses anything itself.

GIoU (Rezatofighi et al., 2019) is ``IoU - (C - U) / C`` with ``U`` the area of
the union and ``C`` the area of the smallest box enclosing both. It lies in
(-1, 1] and, unlike IoU, still tells two disjoint boxes apart by how far apart
they are. The reward is ``(GIoU + 1) / 2``, in [0, 1]: 1 for identical boxes,
0.5 for boxes that touch without overlapping and fill their hull, towards 0 as
they move apart.
"""

from __future__ import annotations

import math

from trace_tasks.family import ScoringContext

Box = tuple[float, float, float, float]


def giou(a: Box, b: Box) -> float:
    """Generalized IoU in [-1, 1]; ``-1.0`` when a result is not finite (overflowing coordinates)."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    iw = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    ih = max(0.0, min(ay1, by1) - max(ay0, by0))
    inter = iw * ih
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    hull = (max(ax1, bx1) - min(ax0, bx0)) * (max(ay1, by1) - min(ay0, by0))
    if not (union > 0 and hull > 0 and math.isfinite(union) and math.isfinite(hull)):
        return -1.0
    value = inter / union - (hull - union) / hull
    return min(1.0, max(-1.0, value)) if math.isfinite(value) else -1.0


def giou01(a: Box, b: Box, ctx: ScoringContext | None = None) -> float:
    """The reward of ``bbox_giou_v1``: ``(giou + 1) / 2`` in [0, 1]."""
    return (giou(a, b) + 1.0) / 2.0
