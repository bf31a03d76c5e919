"""Drawable primitives: what a family's ``trace_draw_annotation`` returns.

Tools (``trace-tasks explain --png``, ``validate``'s image-frame check, any
future report) never guess at a family's parsed values: they ask the owning
family to turn one item into these records, all in pixel coordinates of the
source image, and draw or measure those.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Union

import attrs


def _points(value: object) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in value)  # type: ignore[attr-defined]


@attrs.frozen(slots=True)
class Box:
    """An axis-aligned rectangle from (x0, y0) to (x1, y1)."""

    x0: float
    y0: float
    x1: float
    y1: float


@attrs.frozen(slots=True)
class Point:
    """A single pixel location."""

    x: float
    y: float


@attrs.frozen(slots=True)
class Polyline:
    """An open path through ``points`` (a segment is a two-point polyline)."""

    points: tuple[tuple[float, float], ...] = attrs.field(converter=_points)


@attrs.frozen(slots=True)
class Polygon:
    """A closed path through ``points`` (the last point joins the first)."""

    points: tuple[tuple[float, float], ...] = attrs.field(converter=_points)


@attrs.frozen(slots=True)
class Circle:
    """A circle of radius ``r`` around (cx, cy)."""

    cx: float
    cy: float
    r: float


@attrs.frozen(slots=True)
class Label:
    """Text a family wants shown at (x, y), beside the core's own labels."""

    x: float
    y: float
    text: str


Drawable = Union[Box, Point, Polyline, Polygon, Circle, Label]
DRAWABLES = (Box, Point, Polyline, Polygon, Circle, Label)


def extent_points(shape: Drawable) -> Iterator[tuple[float, float]]:
    """The points that bound ``shape`` (corners, vertices, the circle's bounding box)."""
    if isinstance(shape, Box):
        yield (shape.x0, shape.y0)
        yield (shape.x1, shape.y1)
    elif isinstance(shape, (Point, Label)):
        yield (shape.x, shape.y)
    elif isinstance(shape, (Polyline, Polygon)):
        yield from shape.points
    elif isinstance(shape, Circle):
        yield (shape.cx - shape.r, shape.cy - shape.r)
        yield (shape.cx + shape.r, shape.cy + shape.r)


def anchor(shapes: Sequence[Drawable]) -> tuple[float, float] | None:
    """The centre of the points bounding ``shapes`` (where a pair's link line ends), or None."""
    pts = [p for s in shapes for p in extent_points(s)]
    if not pts:
        return None
    return (sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts))
