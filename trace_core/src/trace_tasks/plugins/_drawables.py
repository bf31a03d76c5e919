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


#: What a type may declare its flat items draw as (``AnnotationTypeSpec.drawn_as``), each drawn by
#: :func:`flat_drawing`; "" (no declaration) is not listed.
FLAT_DRAWINGS = ("box", "point", "polyline")
#: The length of a flat item of each drawing of one fixed length (a polyline's is any even length from 2).
FLAT_ITEM_LENGTHS = {"box": 4, "point": 2}


def is_flat_item(kind: str, item: object) -> bool:
    """Whether ``item`` is what ``flat_drawing(kind, item)`` reads: a tuple of the drawing's length."""
    if type(item) is not tuple:
        return False
    length = FLAT_ITEM_LENGTHS.get(kind)
    return len(item) == length if length is not None else len(item) >= 2 and len(item) % 2 == 0


def flat_drawing(kind: str, item: Sequence[float]) -> list[Drawable]:
    """The drawing ``AnnotationTypeSpec.drawn_as`` declares for one parsed item of alternating x and y coordinates.

    ``"box"``: ``(x0, y0, x1, y1)`` is ``Box(x0, y0, x1, y1)``; ``"point"``:
    ``(x, y)`` is ``Point(x, y)``; ``"polyline"``: ``(x0, y0, x1, y1, ...)`` is
    the ``Polyline`` through its pairs (a segment is two of them). The kit's
    primitives draw with it (``Primitive.drawn_as``); the family kit's
    ``drawn-as`` check compares a type's draw hook with it.
    """
    if kind == "box":
        return [Box(*item)]
    if kind == "point":
        return [Point(*item)]
    if kind == "polyline":
        return [Polyline(zip(item[0::2], item[1::2], strict=False))]
    raise ValueError(f"drawn_as must be one of {FLAT_DRAWINGS}, got {kind!r}")


def anchor(shapes: Sequence[Drawable]) -> tuple[float, float] | None:
    """The centre of the points bounding ``shapes`` (where a pair's link line ends), or None."""
    pts = [p for s in shapes for p in extent_points(s)]
    if not pts:
        return None
    return (sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts))
