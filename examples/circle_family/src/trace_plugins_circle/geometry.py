"""Circles ``[cx, cy, r]`` in pixels and their closed-form IoU (float64).

The intersection of two circles is a lens whose area has a closed form, so the
IoU is exact: no rasterising, no sampling.
"""

from __future__ import annotations

import math
from typing import Any

from trace_tasks.family import AnnotationParseError, coordinates, is_flat

Circle = tuple[float, float, float]


def parse_circle(value: Any) -> Circle:
    """A circle from ``[cx, cy, r]``: three finite numbers, radius strictly positive.

    A zero or negative radius is a parse failure (like a zero-area box), not a
    circle of area 0, so a model cannot hedge with degenerate shapes.
    """
    cx, cy, r = coordinates(value, 3)
    if not r > 0:
        raise AnnotationParseError("circle radius must be positive")
    return (cx, cy, r)


def is_circle(value: Any) -> bool:
    """Whether a raw value looks like one flat circle (so a set given one circle reads it)."""
    return is_flat(value, 3)


def intersection_area(a: Circle, b: Circle) -> float:
    """Area of the lens where two circles overlap.

    Three cases by centre distance ``d``: apart (``d >= r1 + r2``): 0; one inside
    the other (``d <= |r1 - r2|``): the smaller disc; otherwise the sum of two
    circular segments, written in the usual form
    ``r1² acos(.) + r2² acos(.) - ½ sqrt((-d+r1+r2)(d+r1-r2)(d-r1+r2)(d+r1+r2))``.
    """
    r1, r2 = a[2], b[2]
    d = math.hypot(a[0] - b[0], a[1] - b[1])
    if d >= r1 + r2:
        return 0.0
    if d <= abs(r1 - r2):
        r = min(r1, r2)
        return math.pi * r * r
    # Clamp the cosines: rounding can push them a hair outside [-1, 1].
    c1 = min(1.0, max(-1.0, (d * d + r1 * r1 - r2 * r2) / (2.0 * d * r1)))
    c2 = min(1.0, max(-1.0, (d * d + r2 * r2 - r1 * r1) / (2.0 * d * r2)))
    kite = (-d + r1 + r2) * (d + r1 - r2) * (d - r1 + r2) * (d + r1 + r2)
    return r1 * r1 * math.acos(c1) + r2 * r2 * math.acos(c2) - 0.5 * math.sqrt(max(kite, 0.0))


def iou(a: Circle, b: Circle, ctx: object = None) -> float:
    """Intersection over union of two discs; a non-finite result (overflow) counts as 0.

    ``ctx`` is the :class:`~trace_tasks.ScoringContext`; circles need nothing from it.
    """
    inter = intersection_area(a, b)
    union = math.pi * a[2] * a[2] + math.pi * b[2] * b[2] - inter
    if not (union > 0 and math.isfinite(union) and math.isfinite(inter)):
        return 0.0
    value = inter / union
    # Guard the [0, 1] promise the core relies on against rounding at the edges.
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0
