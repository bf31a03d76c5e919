"""The picture of ``trace-tasks explain --png`` (needs Pillow, ``trace-core[viz]``).

Nothing here knows what a family's parsed values look like. Every item of the
family's :class:`~trace_tasks.specs.AnnotationExplanation` is handed to the
type owner's draw capability (``trace_draw_annotation``), which answers with
records of :mod:`trace_tasks.drawing` in pixel coordinates of the source image,
and only those are drawn: a :class:`~trace_tasks.drawing.Box` as a rectangle, a
``Point`` as a marked circle, a ``Polyline`` open with a dot at each end, a
``Polygon`` closed, a ``Circle`` as an ellipse, a ``Label`` as text.

Targets are green, predictions red; each matched pair is joined by a thin blue
line between the :func:`~trace_tasks.drawing.anchor` of its two drawings.
Targets are labelled above (``T#0``), predictions below with the pair's
similarity (``P#0 IoU 0.50``, or ``P#2 unmatched``); a label with no room on
its side goes to the other, and labels are clamped inside the canvas, clear of
the footer. The footer's last line names the reward id and
``annotation_reward``; above it go short notes (the full text is returned to
the caller, who prints it) when items lie outside the canvas or could not be
drawn, so a blank picture is never silent: a model answering in normalized
0-1 or 0-1000 coordinates draws into a corner or off the canvas.

The file type follows the name: ``.png`` is PNG, ``.jpg``/``.jpeg`` JPEG;
anything else is refused by :func:`picture_format` before any work is done.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from trace_tasks.cli._extraction_view import item_name, plain, show_number
from trace_tasks.drawing import DRAWABLES, Box, Circle, Drawable, Label, Point, Polygon, Polyline, anchor, extent_points
from trace_tasks.specs import AnnotationExplanation

TARGET_RGB = (0, 160, 0)
PRED_RGB = (220, 30, 30)
LINK_RGB = (30, 90, 230)
TEXT_RGB = (0, 0, 0)
DEFAULT_CANVAS = (640, 480)
LINE_WIDTH = 3
POINT_RADIUS = 6
END_DOT_RADIUS = 3
LABEL_GAP = 2
#: Coordinates beyond this (in pixels, either sign) are not drawn, only counted.
MAX_COORDINATE = 1e6
#: Largest blank canvas drawn (a side, in pixels) when the image size comes from the instance.
MAX_CANVAS_SIDE = 20_000
#: Most drawables kept per item (a family answering with millions is cut short).
MAX_DRAWABLES_PER_ITEM = 10_000

#: File suffix -> Pillow format.
FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}

VIZ_MISSING = "drawing needs Pillow: pip install 'trace-core[viz]'"

Rgb = tuple[int, int, int]
DrawItem = Callable[[Any], Any]


class DrawingUnavailable(RuntimeError):
    """Pillow is not installed."""


class CannotDraw(RuntimeError):
    """The family cannot draw its items (no capability, a crash), or the canvas would be absurd."""


def picture_format(path: str) -> str:
    """``PNG`` or ``JPEG`` for the file name ``path``; ``ValueError`` for any other suffix."""
    suffix = Path(path).suffix.lower()
    found = FORMATS.get(suffix)
    if found is None:
        raise ValueError(
            f"--png {path}: cannot tell the picture format from {suffix or 'a name without a suffix'!r}; "
            "name the file .png (PNG) or .jpg/.jpeg (JPEG)"
        )
    return found


@attrs.frozen
class Figure:
    """One explained item as drawn: its drawables, colour and caption."""

    shapes: tuple[Drawable, ...]
    colour: Rgb
    caption: str
    below: bool  # predictions are captioned under their drawing, targets above
    skipped: int = 0  # drawables not drawn (non-finite or absurd coordinates, not a drawable)


@attrs.frozen
class Picture:
    """What :func:`render` wrote: size, format and the notes shown in the picture."""

    width: int
    height: int
    format: str
    items: int
    outside: int
    notes: tuple[str, ...] = ()


def _pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as exc:
        raise DrawingUnavailable(VIZ_MISSING) from exc
    return Image, ImageDraw, ImageFont


def _numbers(shape: Drawable) -> Iterable[Any]:
    if isinstance(shape, Box):
        yield from (shape.x0, shape.y0, shape.x1, shape.y1)
    elif isinstance(shape, (Point, Label)):
        yield from (shape.x, shape.y)
    elif isinstance(shape, (Polyline, Polygon)):
        for x, y in shape.points:
            yield x
            yield y
    elif isinstance(shape, Circle):
        yield from (shape.cx, shape.cy, shape.r)


def _drawable(shape: Any) -> bool:
    """A drawing record with finite coordinates Pillow can handle."""
    if not isinstance(shape, DRAWABLES):
        return False
    try:
        values = [float(v) for v in _numbers(shape)]
    except (TypeError, ValueError, OverflowError):
        return False
    if isinstance(shape, Circle) and not values[2] >= 0:
        return False
    return all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in values)


def _figure(draw_item: DrawItem, owner: str, item: Any, prefix: str, colour: Rgb, caption: str | None) -> Figure:
    label = getattr(item, "label", "?")
    name = item_name(prefix, label)
    try:
        result = draw_item(getattr(item, "value", None))
    except Exception as exc:
        raise CannotDraw(f"{owner} failed to draw {name}: {type(exc).__name__}: {exc}") from exc
    if result is None:
        raise CannotDraw(f"{owner} cannot draw its items (trace_draw_annotation returned None for {name}); nothing drawn")
    if isinstance(result, DRAWABLES):
        result = [result]
    shapes: list[Drawable] = []
    skipped = 0
    try:
        for n, shape in enumerate(result):
            if n >= MAX_DRAWABLES_PER_ITEM:
                skipped += 1
                break
            if _drawable(shape):
                shapes.append(shape)
            else:
                skipped += 1
    except Exception as exc:  # not iterable, or an iterator that breaks
        raise CannotDraw(f"{owner} returned {type(result).__name__} for {name}, not a list of drawables") from exc
    return Figure(tuple(shapes), colour, name if caption is None else f"{name} {caption}", prefix == "P", skipped)


def figures(
    explanation: AnnotationExplanation, draw_item: DrawItem, *, owner: str, metric: str
) -> tuple[list[Figure], list[Figure], list[tuple[Figure, Figure]]]:
    """``(targets, predictions, matched pairs)`` of an explanation, drawn by the owner's capability."""
    targets: list[Figure] = []
    predictions: list[Figure] = []
    links: list[tuple[Figure, Figure]] = []
    pairs = explanation.pairs if isinstance(explanation.pairs, (tuple, list)) else ()
    for pair in pairs:
        similarity = show_number(getattr(pair, "similarity", None), 2)
        target = _figure(draw_item, owner, getattr(pair, "target", None), "T", TARGET_RGB, None)
        prediction = _figure(draw_item, owner, getattr(pair, "prediction", None), "P", PRED_RGB, f"{metric} {similarity}")
        targets.append(target)
        predictions.append(prediction)
        links.append((target, prediction))
    for item in explanation.unmatched_targets if isinstance(explanation.unmatched_targets, (tuple, list)) else ():
        targets.append(_figure(draw_item, owner, item, "T", TARGET_RGB, None))
    for item in explanation.unmatched_predictions if isinstance(explanation.unmatched_predictions, (tuple, list)) else ():
        predictions.append(_figure(draw_item, owner, item, "P", PRED_RGB, "unmatched"))
    return targets, predictions, links


def _xy(x: float, y: float) -> tuple[float, float]:
    return (float(x), float(y))


def _draw_shape(draw: Any, shape: Drawable, colour: Rgb, font: Any) -> None:
    if isinstance(shape, Box):
        x0, x1 = sorted((float(shape.x0), float(shape.x1)))
        y0, y1 = sorted((float(shape.y0), float(shape.y1)))
        draw.rectangle([x0, y0, x1, y1], outline=colour, width=LINE_WIDTH)
    elif isinstance(shape, Point):
        (x, y), r = _xy(shape.x, shape.y), float(POINT_RADIUS)
        draw.ellipse([x - r, y - r, x + r, y + r], outline=colour, width=LINE_WIDTH)
        draw.line([x - r, y, x + r, y], fill=colour, width=1)
        draw.line([x, y - r, x, y + r], fill=colour, width=1)
    elif isinstance(shape, Circle):
        (x, y), r = _xy(shape.cx, shape.cy), float(shape.r)
        draw.ellipse([x - r, y - r, x + r, y + r], outline=colour, width=LINE_WIDTH)
    elif isinstance(shape, (Polyline, Polygon)):
        pts = [_xy(x, y) for x, y in shape.points]
        closed = isinstance(shape, Polygon)
        if len(pts) == 1 or (closed and len(set(pts)) == 1):
            _dot(draw, pts[0], END_DOT_RADIUS, colour)
        elif pts:
            draw.line([*pts, pts[0]] if closed else pts, fill=colour, width=LINE_WIDTH, joint="curve")
            if not closed:
                _dot(draw, pts[0], END_DOT_RADIUS, colour)
                _dot(draw, pts[-1], END_DOT_RADIUS, colour)
    elif isinstance(shape, Label):
        _text(draw, _xy(shape.x, shape.y), plain(shape.text, 200), colour, font)


def _text(draw: Any, xy: tuple[float, float], text: str, colour: Rgb, font: Any) -> None:
    """Text, with anything the font cannot encode written as escapes instead."""
    try:
        draw.text(xy, text, fill=colour, font=font)
    except (UnicodeError, ValueError):
        draw.text(xy, text.encode("ascii", "backslashreplace").decode("ascii"), fill=colour, font=font)


def _dot(draw: Any, point: tuple[float, float], r: float, colour: Rgb) -> None:
    x, y = point
    draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)


def _text_size(draw: Any, text: str, font: Any) -> tuple[float, float]:
    try:
        _, _, right, bottom = draw.textbbox((0, 0), text, font=font)
    except (UnicodeError, ValueError):
        _, _, right, bottom = draw.textbbox((0, 0), text.encode("ascii", "backslashreplace").decode("ascii"), font=font)
    return right, bottom


def _clamped(value: float, low: float, high: float) -> float:
    return min(max(value, low), max(high, low))


def _caption(draw: Any, figure: Figure, font: Any, width: int, bottom: float) -> None:
    """The figure's caption beside it: targets above, predictions below, on the other side when
    that side has no room, and always inside ``[0, width] x [0, bottom]``."""
    pts = [p for s in figure.shapes for p in extent_points(s)]
    if not pts or not figure.caption:
        return
    tw, th = _text_size(draw, figure.caption, font)
    x = min(float(p[0]) for p in pts) + LABEL_GAP
    above = min(float(p[1]) for p in pts) - th - POINT_RADIUS
    below = max(float(p[1]) for p in pts) + POINT_RADIUS
    first, second = (below, above) if figure.below else (above, below)
    y = first if 0 <= first <= bottom - th else second if 0 <= second <= bottom - th else first
    x, y = _clamped(x, 0, width - tw), _clamped(y, 0, bottom - th)
    _text(draw, (x, y), figure.caption, figure.colour, font)


def _outside(figure: Figure, width: int, height: int) -> bool:
    if figure.skipped:
        return True
    return any(not (0 <= x <= width and 0 <= y <= height) for s in figure.shapes for x, y in extent_points(s))


def _notes(targets: list[Figure], predictions: list[Figure], width: int, height: int) -> tuple[int, list[tuple[str, str]]]:
    """``(items outside, [(note in the picture, note for the terminal)])``."""
    notes = []
    everything = targets + predictions
    outside = [f for f in everything if _outside(f, width, height)]
    if outside:
        names = ", ".join(f.caption.split(" ")[0] for f in outside[:6]) + (", ..." if len(outside) > 6 else "")
        notes.append((
            f"{len(outside)} of {len(everything)} items outside the canvas ({names})",
            f"{len(outside)} of {len(everything)} items lie (partly) outside the {width}x{height} canvas or could not "
            f"be drawn ({names}); coordinates are pixels of the source image (normalized 0-1000 answers land off the canvas)",
        ))  # fmt: skip
    points = [p for f in predictions for s in f.shapes for p in extent_points(s)]
    if points and max(width, height) > 2 and all(0 <= x <= 1 and 0 <= y <= 1 for x, y in points):
        notes.append((
            "every predicted coordinate is within [0, 1]",
            "every predicted coordinate lies within [0, 1]: normalized coordinates? they are drawn in the top-left pixel",
        ))  # fmt: skip
    if not everything:
        notes.append(("nothing to draw", "the explanation lists no items on either side: nothing to draw"))
    return len(outside), notes


def _wrap(draw: Any, text: str, font: Any, width: int) -> list[str]:
    """``text`` broken at spaces into lines that fit ``width`` pixels (a long word stays whole)."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if line and _text_size(draw, candidate, font)[0] + 2 * LABEL_GAP > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    return [*lines, line]


def _bottom_lines(draw: Any, texts: list[str], font: Any, width: int, height: int) -> float:
    """``texts`` at the bottom-left, wrapped, black on white, the last one lowest; returns their top.

    They take at most the bottom third of the canvas: on a small canvas the
    first lines are left out (the caller prints every note anyway).
    """
    lines = [line for text in texts for line in _wrap(draw, text, font, width)]
    y = float(height)
    for text in reversed(lines):
        tw, th = _text_size(draw, text, font)
        if y - th - LABEL_GAP < height * 2 / 3:
            break
        y -= th + LABEL_GAP
        draw.rectangle([0, max(y - 1, 0), max(min(tw + 2 * LABEL_GAP, width - 1), 0), y + th], fill=(255, 255, 255))
        _text(draw, (LABEL_GAP, y), text, TEXT_RGB, font)
    return max(y - 1, 0)


def _canvas(Image: Any, size: tuple[float, float] | None, image_path: str | None) -> tuple[Any, list[tuple[str, str]]]:
    if image_path:
        return Image.open(image_path).convert("RGB"), []
    if size is None:
        w, h = DEFAULT_CANVAS
        return Image.new("RGB", DEFAULT_CANVAS, "white"), [
            (f"no image size: {w}x{h} canvas", f"no image size known: a blank {w}x{h} canvas")
        ]
    width, height = max(round(size[0]), 1), max(round(size[1]), 1)
    if max(width, height) > MAX_CANVAS_SIDE:
        raise CannotDraw(
            f"the image size {size[0]:g}x{size[1]:g} is too large for a blank canvas (at most {MAX_CANVAS_SIDE} px a side); "
            "draw over the image with --image"
        )
    return Image.new("RGB", (width, height), "white"), []


def render(
    path: str,
    explanation: AnnotationExplanation,
    draw_item: DrawItem,
    *,
    owner: str,
    size: tuple[float, float] | None,
    image_path: str | None = None,
    title: str = "",
    metric: str = "similarity",
) -> Picture:
    """Draw ``explanation`` (its items through ``draw_item``, the owner's capability) and write ``path``.

    ``size`` is the source image size (the canvas when there is no image);
    raises :class:`DrawingUnavailable` without Pillow, :class:`CannotDraw` when
    the family cannot draw, ``ValueError`` for an unknown suffix, ``OSError``
    when the image cannot be read or the file written.
    """
    fmt = picture_format(path)
    Image, ImageDraw, ImageFont = _pil()
    targets, predictions, links = figures(explanation, draw_item, owner=owner, metric=metric)
    canvas, notes = _canvas(Image, size, image_path)
    width, height = canvas.size
    if image_path and size is not None and (round(size[0]), round(size[1])) != (width, height):
        notes.append((
            f"image {width}x{height}, instance size {size[0]:g}x{size[1]:g}",
            f"the image is {width}x{height} but the instance's size is {size[0]:g}x{size[1]:g}; coordinates are not rescaled",
        ))  # fmt: skip
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default()
    for target, prediction in links:  # under the shapes, so an outline always shows its colour
        a, b = anchor(target.shapes), anchor(prediction.shapes)
        if a is not None and b is not None:
            draw.line([_xy(*a), _xy(*b)], fill=LINK_RGB, width=1)
    for figure in targets + predictions:
        for shape in figure.shapes:
            _draw_shape(draw, shape, figure.colour, font)
    outside, more = _notes(targets, predictions, width, height)
    notes += more
    footer = _bottom_lines(draw, [f"note: {short}" for short, _ in notes] + ([title] if title else []), font, width, height)
    bottom = footer if footer > height / 2 else height  # captions stay clear of the title unless it fills the picture
    for figure in targets + predictions:
        _caption(draw, figure, font, width, bottom)
    canvas.save(path, format=fmt, **({"quality": 92} if fmt == "JPEG" else {}))
    return Picture(width, height, fmt, len(targets) + len(predictions), outside, tuple(full for _, full in notes))
