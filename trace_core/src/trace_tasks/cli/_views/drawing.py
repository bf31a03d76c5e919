"""The picture of ``trace-tasks explain --png`` and of ``trace-tasks report`` (needs Pillow, ``trace-core[viz]``).

Nothing here knows what a family's parsed values look like. Every item of the
family's :class:`~trace_tasks.family.AnnotationExplanation` is handed to the
type owner's draw capability (``trace_draw_annotation``), which answers with
records of :mod:`trace_tasks.family` (the drawables) in pixel coordinates of the source image,
and only those are drawn: a :class:`~trace_tasks.family.Box` as a rectangle, a
``Point`` as a marked circle, a ``Polyline`` open with a dot at each end, a
``Polygon`` closed, a ``Circle`` as an ellipse, a ``Label`` as text.

The picture has three bands. On top, the header: the caller's lines (the
reward breakdown of :mod:`trace_tasks.cli._views.breakdown`). In the middle, the
image area: the source image (or a white canvas of its size), scaled up by a
whole factor when it is small so that labels stay readable, clipped to the
frame. Targets are green, predictions red; each matched pair is joined by a
thin blue line between the :func:`~trace_tasks.family.anchor` of its two
drawings; for a metric other than IoU every target point and segment end gets
a dashed circle of the scoring half-life. Labels (``T#0``, ``P#0 IoU 0.50``,
``P[key] extra key``) are placed by :mod:`trace_tasks.cli._views.layout`, at most
``MAX_LABELS`` of them (the first targets and predictions). At the bottom, the legend and the notes:
items outside the frame (with a hint when coordinates look normalised, see
:mod:`trace_tasks.cli._views.frames`), items left without a label, an image resized to the instance's size, a family
that gave something undrawable.

The file type follows the name: ``.png`` is PNG, ``.jpg``/``.jpeg`` JPEG;
anything else is refused by :func:`picture_format` before any work is done.
The file is written beside its target and renamed over it at the end.

An image file is drawn under the overlay only when :func:`image_problem`
finds nothing wrong with it (by its content, within :data:`MAX_IMAGE_BYTES`
and :data:`MAX_IMAGE_PIXELS`): explain and report hold it to the same checks.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from trace_tasks.cli._views.explanation import item_name, plain, show_number
from trace_tasks.cli._views.frames import PlacedItem, frame_notes
from trace_tasks.cli._views.layout import LABEL_GAP, MAX_LABELS, POINT_RADIUS, Layout, Rect, label_quota
from trace_tasks.errors import OptionError
from trace_tasks.plugins import (
    DRAWABLES,
    AnnotationExplanation,
    Box,
    Circle,
    Drawable,
    Label,
    Point,
    Polygon,
    Polyline,
    anchor,
    extent_points,
)
from trace_tasks.runs import describe

TARGET_RGB = (0, 160, 0)
PRED_RGB = (220, 30, 30)
LINK_RGB = (30, 90, 230)
HALF_LIFE_RGB = (120, 200, 120)
TEXT_RGB = (0, 0, 0)
NOTE_RGB = (150, 60, 0)
FRAME_RGB = (160, 160, 160)
WHITE = (255, 255, 255)
DEFAULT_CANVAS = (640, 480)
LINE_WIDTH = 3
END_DOT_RADIUS = 3
FONT_SIZE = 13
#: An image area whose longer side is below this is scaled up by a whole factor (at most MAX_SCALE).
MIN_AREA_SIDE = 480
MAX_SCALE = 16
#: The picture is at least this wide, so the header and the legend have room.
MIN_WIDTH = 480
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
    """``PNG`` or ``JPEG`` for the file name ``path``; :class:`~trace_tasks.errors.OptionError` (a ``ValueError``) for any other suffix."""
    suffix = Path(path).suffix.lower()
    found = FORMATS.get(suffix)
    if found is None:
        raise OptionError(
            f"--png {path}: cannot tell the picture format from {suffix or 'a name without a suffix'!r}; "
            "name the file .png (PNG) or .jpg/.jpeg (JPEG)"
        )
    return found


def pillow_available() -> bool:
    """True when Pillow can be imported (pictures can be drawn)."""
    try:
        _pil()
    except DrawingUnavailable:
        return False
    return True


@attrs.frozen
class Figure:
    """One explained item as drawn: its drawables, colour and caption."""

    shapes: tuple[Drawable, ...]
    colour: Rgb
    caption: str
    below: bool  # predictions are captioned under their drawing, targets above
    skipped: int = 0  # drawables not drawn (non-finite or absurd coordinates, not a drawable)
    name: str = ""  # T#0, P[left]

    def placed(self) -> PlacedItem:
        points = tuple((float(x), float(y)) for s in self.shapes for x, y in extent_points(s))
        return PlacedItem(self.name, self.below, points, self.skipped)


@attrs.frozen
class Picture:
    """What :func:`render` drew: size, format, notes, and where the source image's pixels are.

    A source pixel ``(x, y)`` is at ``(origin[0] + scale * x, origin[1] + scale * y)``
    of the picture; ``labels`` are the captions with their rectangles in the picture.
    """

    width: int
    height: int
    format: str
    items: int
    outside: int
    notes: tuple[str, ...] = ()
    origin: tuple[int, int] = (0, 0)
    scale: int = 1
    area: tuple[int, int] = (0, 0)
    labels: tuple[tuple[str, Rect], ...] = ()
    header: tuple[str, ...] = ()

    def at(self, x: float, y: float) -> tuple[int, int]:
        """The picture pixel of the source pixel ``(x, y)``."""
        return (round(self.origin[0] + self.scale * x), round(self.origin[1] + self.scale * y))


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


def _key(label: Any) -> str | None:
    """The map key of an item label (``left`` of ``left`` or ``left#1``), None for ``#0`` and odd labels."""
    if not isinstance(label, str) or not label or label.startswith("#"):
        return None
    key, sep, index = label.rpartition("#")
    return key if sep and key and index.isdigit() else label


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
    return Figure(tuple(shapes), colour, name if caption is None else f"{name} {caption}", prefix == "P", skipped, name)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else ()


def _keys(value: Any) -> set[str]:
    return {k for k in _as_tuple(value) if isinstance(k, str)}


def figures(
    explanation: AnnotationExplanation, draw_item: DrawItem, *, owner: str, metric: str
) -> tuple[list[Figure], list[Figure], list[tuple[Figure, Figure]]]:
    """``(targets, predictions, matched pairs)`` of an explanation, drawn by the owner's capability.

    Unmatched items whose map key is one of the explanation's missing (extra)
    keys are captioned ``missing key`` (``extra key``).
    """
    targets: list[Figure] = []
    predictions: list[Figure] = []
    links: list[tuple[Figure, Figure]] = []
    missing, extra = _keys(explanation.missing_keys), _keys(explanation.extra_keys)
    for pair in _as_tuple(explanation.pairs):
        similarity = show_number(getattr(pair, "similarity", None), 2)
        target = _figure(draw_item, owner, getattr(pair, "target", None), "T", TARGET_RGB, None)
        prediction = _figure(draw_item, owner, getattr(pair, "prediction", None), "P", PRED_RGB, f"{metric} {similarity}")
        targets.append(target)
        predictions.append(prediction)
        links.append((target, prediction))
    for item in _as_tuple(explanation.unmatched_targets):
        mark = "missing key" if _key(getattr(item, "label", None)) in missing else None
        targets.append(_figure(draw_item, owner, item, "T", TARGET_RGB, mark))
    for item in _as_tuple(explanation.unmatched_predictions):
        mark = "extra key" if _key(getattr(item, "label", None)) in extra else "unmatched"
        predictions.append(_figure(draw_item, owner, item, "P", PRED_RGB, mark))
    return targets, predictions, links


def explanation_notes(
    explanation: AnnotationExplanation,
    draw_item: DrawItem,
    *,
    owner: str,
    size: tuple[float, float],
    hint: str | None = None,
) -> list[str]:
    """The outside-the-frame notes of an explanation (needs no Pillow): for the text report of ``explain``.

    ``hint`` as in :func:`~trace_tasks.cli._views.frames.frame_notes`.
    """
    targets, predictions, _ = figures(explanation, draw_item, owner=owner, metric="")
    return [full for _, full in frame_notes([f.placed() for f in targets + predictions], size, hint)]


# --- pure layout: scale and label placement ---


def area_scale(width: int, height: int) -> int:
    """The whole factor a ``width`` x ``height`` image is scaled up by (1 when it is large enough)."""
    side = max(width, height, 1)
    return 1 if side >= MIN_AREA_SIDE else min(math.ceil(MIN_AREA_SIDE / side), MAX_SCALE)


# --- drawing ---


def _xy(x: float, y: float, scale: int) -> tuple[float, float]:
    return (float(x) * scale, float(y) * scale)


def _draw_shape(draw: Any, shape: Drawable, colour: Rgb, font: Any, scale: int) -> None:
    if isinstance(shape, Box):
        x0, x1 = sorted((float(shape.x0) * scale, float(shape.x1) * scale))
        y0, y1 = sorted((float(shape.y0) * scale, float(shape.y1) * scale))
        draw.rectangle([x0, y0, x1, y1], outline=colour, width=LINE_WIDTH)
    elif isinstance(shape, Point):
        (x, y), r = _xy(shape.x, shape.y, scale), float(POINT_RADIUS)
        draw.ellipse([x - r, y - r, x + r, y + r], outline=colour, width=LINE_WIDTH)
        draw.line([x - r, y, x + r, y], fill=colour, width=1)
        draw.line([x, y - r, x, y + r], fill=colour, width=1)
    elif isinstance(shape, Circle):
        (x, y), r = _xy(shape.cx, shape.cy, scale), float(shape.r) * scale
        draw.ellipse([x - r, y - r, x + r, y + r], outline=colour, width=LINE_WIDTH)
    elif isinstance(shape, (Polyline, Polygon)):
        pts = [_xy(x, y, scale) for x, y in shape.points]
        closed = isinstance(shape, Polygon)
        if len(pts) == 1 or (closed and len(set(pts)) == 1):
            _dot(draw, pts[0], END_DOT_RADIUS, colour)
        elif pts:
            draw.line([*pts, pts[0]] if closed else pts, fill=colour, width=LINE_WIDTH, joint="curve")
            if not closed:
                _dot(draw, pts[0], END_DOT_RADIUS, colour)
                _dot(draw, pts[-1], END_DOT_RADIUS, colour)
    elif isinstance(shape, Label):
        _text(draw, _xy(shape.x, shape.y, scale), plain(shape.text, 200), colour, font)


def _half_life_centres(figure: Figure) -> Iterable[tuple[float, float]]:
    """Where a target's half-life circles go: its points and the ends of its polylines."""
    for shape in figure.shapes:
        if isinstance(shape, Point):
            yield (float(shape.x), float(shape.y))
        elif isinstance(shape, Polyline) and shape.points:
            yield shape.points[0]
            if len(shape.points) > 1:
                yield shape.points[-1]


def _dashed_circle(draw: Any, centre: tuple[float, float], r: float, colour: Rgb) -> None:
    x, y = centre
    for start in range(0, 360, 20):
        draw.arc([x - r, y - r, x + r, y + r], start, start + 12, fill=colour, width=1)


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
    return float(right), float(bottom)


def _bbox(figure: Figure, scale: int) -> Rect | None:
    pts = [(float(x) * scale, float(y) * scale) for s in figure.shapes for x, y in extent_points(s)]
    if not pts:
        return None
    return (min(x for x, _ in pts), min(y for _, y in pts), max(x for x, _ in pts), max(y for _, y in pts))


def _captions(
    draw: Any, targets: list[Figure], predictions: list[Figure], font: Any, scale: int, size: tuple[int, int]
) -> tuple[list[tuple[str, Rect]], list[tuple[str, str]]]:
    """Place and draw the captions inside the image area (at most MAX_LABELS, the first of each side):
    ``(the captions with their rectangles in area pixels, a note when some items went without one)``."""
    area: Rect = (0.0, 0.0, float(size[0]), float(size[1]))
    boxed = [[(f, b) for f in side if f.caption and (b := _bbox(f, scale)) is not None] for side in (targets, predictions)]
    layout = Layout(area, (b for side in boxed for _, b in side))
    quota = label_quota(len(boxed[0]), len(boxed[1]))
    placed: list[tuple[str, Rect]] = []
    for figure, bbox in boxed[0][: quota[0]] + boxed[1][: quota[1]]:
        text = plain(figure.caption, 80)
        near = [(float(x) * scale, float(y) * scale) for s in figure.shapes for x, y in extent_points(s)]
        rect = layout.place(bbox, _text_size(draw, text, font), figure.below, near)
        draw.rectangle(rect, fill=WHITE)  # legible over any background
        _text(draw, (rect[0], rect[1]), text, figure.colour, font)
        placed.append((text, rect))
    if quota == (len(boxed[0]), len(boxed[1])):
        return placed, []
    (t, p), (all_t, all_p) = quota, (len(boxed[0]), len(boxed[1]))
    note = (
        f"labels on the first {t} of {all_t} targets and {p} of {all_p} predictions",
        f"only the first {t} of {all_t} targets and the first {p} of {all_p} predictions are labelled "
        f"(at most {MAX_LABELS} labels a picture); every item is drawn",
    )
    return placed, [note]


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


def _line_height(draw: Any, font: Any) -> int:
    return int(_text_size(draw, "Hg", font)[1]) + LABEL_GAP


def _legend(draw: Any, font: Any, top: float, entries: list[tuple[Rgb, str, str]]) -> None:
    """A row of ``(colour, kind, text)`` swatches: a line, or a dashed circle for the half-life."""
    x = float(LABEL_GAP)
    height = _line_height(draw, font)
    for colour, kind, text in entries:
        middle = top + height / 2
        if kind == "circle":
            _dashed_circle(draw, (x + 7, middle), 6, colour)
        else:
            draw.line([x, middle, x + 14, middle], fill=colour, width=LINE_WIDTH if kind == "thick" else 1)
        _text(draw, (x + 18, top), text, TEXT_RGB, font)
        x += 18 + _text_size(draw, text, font)[0] + 12


def _background(
    Image: Any, size: tuple[float, float] | None, image_path: str | None
) -> tuple[Any, tuple[float, float], list[tuple[str, str]]]:
    """The image area before scaling, the source size coordinates refer to, and notes about both."""
    if image_path:
        image = Image.open(image_path).convert("RGB")
        if size is None:
            return image, (float(image.width), float(image.height)), []
        width, height = max(round(size[0]), 1), max(round(size[1]), 1)
        if (width, height) == image.size:
            return image, size, []
        note = (
            f"image {image.width}x{image.height} resized to {width}x{height}",
            f"the image is {image.width}x{image.height} but the instance's image_size is {size[0]:g}x{size[1]:g}: "
            "it is drawn resized to the instance's size, the frame the coordinates refer to",
        )
        return image.resize((width, height)), size, [note]
    if size is None:
        w, h = DEFAULT_CANVAS
        return (
            Image.new("RGB", DEFAULT_CANVAS, "white"),
            (float(w), float(h)),
            [(f"no image size: {w}x{h} canvas", f"no image size known: a blank {w}x{h} canvas")],
        )
    width, height = max(round(size[0]), 1), max(round(size[1]), 1)
    if max(width, height) > MAX_CANVAS_SIDE:
        raise CannotDraw(
            f"the image size {size[0]:g}x{size[1]:g} is too large for a blank canvas (at most {MAX_CANVAS_SIDE} px a side); "
            "draw over the image with --image"
        )
    return Image.new("RGB", (width, height), "white"), size, []


def _font(ImageFont: Any) -> Any:
    try:
        return ImageFont.load_default(size=FONT_SIZE)
    except TypeError:  # Pillow before 10.1: the fixed bitmap font
        return ImageFont.load_default()


def _draw_area(
    area: Any, draw: Any, font: Any, scale: int, scene: tuple[list[Figure], list[Figure], list[tuple[Figure, Figure]]],
    half_life: float | None,
) -> tuple[list[tuple[str, Rect]], list[tuple[str, str]]]:  # fmt: skip
    targets, predictions, links = scene
    for target, prediction in links:  # under the shapes, so an outline always shows its colour
        a, b = anchor(target.shapes), anchor(prediction.shapes)
        if a is not None and b is not None:
            draw.line([_xy(*a, scale), _xy(*b, scale)], fill=LINK_RGB, width=1)
    if half_life:
        for target in targets:
            for centre in _half_life_centres(target):
                _dashed_circle(draw, _xy(*centre, scale), half_life * scale, HALF_LIFE_RGB)
    for figure in targets + predictions:
        for shape in figure.shapes:
            _draw_shape(draw, shape, figure.colour, font, scale)
    return _captions(draw, targets, predictions, font, scale, area.size)


def render_image(
    explanation: AnnotationExplanation,
    draw_item: DrawItem,
    *,
    owner: str,
    size: tuple[float, float] | None,
    image_path: str | None = None,
    header: Sequence[str] = (),
    metric: str = "similarity",
    half_life: float | None = None,
    hint: str | None = None,
) -> tuple[Any, Picture]:
    """Draw ``explanation`` (its items through ``draw_item``, the owner's capability): ``(PIL image, Picture)``.

    ``size`` is the source image size (the canvas when there is no image);
    ``half_life`` draws half-life circles around target points and segment
    ends (pass it for distance metrics only); ``hint`` is the normalised-coordinates
    hint of the run's readings (``None``: guessed from the drawn items). Raises :class:`DrawingUnavailable`
    without Pillow, :class:`CannotDraw` when the family cannot draw, ``OSError``
    when the image cannot be read.
    """
    Image, ImageDraw, ImageFont = _pil()
    scene = figures(explanation, draw_item, owner=owner, metric=metric)
    targets, predictions, _ = scene
    source, frame, notes = _background(Image, size, image_path)
    scale = area_scale(*source.size)
    area = source.resize((source.width * scale, source.height * scale), Image.NEAREST) if scale > 1 else source
    font = _font(ImageFont)
    labels, label_notes = _draw_area(area, ImageDraw.Draw(area), font, scale, scene, half_life)
    everything = targets + predictions
    short_notes = frame_notes([f.placed() for f in everything], frame, hint)
    notes += short_notes + label_notes
    if not everything:
        notes.append(("nothing to draw", "the explanation lists no items on either side: nothing to draw"))
    width = max(area.width, MIN_WIDTH)
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    step = _line_height(probe, font)
    head = [line for text in header for line in _wrap(probe, plain(text, 400), font, width)]
    foot = [line for short, _ in notes for line in _wrap(probe, f"note: {short}", font, width)]
    top = len(head) * step + (2 * LABEL_GAP if head else 0)
    canvas = Image.new("RGB", (width, top + area.height + (1 + len(foot)) * step + 2 * LABEL_GAP), "white")
    canvas.paste(area, (0, top))
    draw = ImageDraw.Draw(canvas)
    if top:  # where the header ends and the image begins, on a white canvas too
        draw.line([0, top - 1, area.width, top - 1], fill=FRAME_RGB, width=1)
    draw.line([0, top + area.height, area.width, top + area.height], fill=FRAME_RGB, width=1)
    for n, line in enumerate(head):
        _text(draw, (LABEL_GAP, LABEL_GAP + n * step), line, TEXT_RGB, font)
    bottom = top + area.height + LABEL_GAP
    legend = [(TARGET_RGB, "thick", "target"), (PRED_RGB, "thick", "prediction"), (LINK_RGB, "thin", "matched pair")]
    if half_life and any(True for t in targets for _ in _half_life_centres(t)):
        legend.append((HALF_LIFE_RGB, "circle", f"half-life {half_life:g} px"))
    _legend(draw, font, bottom, legend)
    for n, line in enumerate(foot):
        _text(draw, (LABEL_GAP, bottom + (n + 1) * step), line, NOTE_RGB, font)
    moved = tuple((text, (r[0], r[1] + top, r[2], r[3] + top)) for text, r in labels)
    outside = len(_outside_items(everything, frame))
    picture = Picture(
        canvas.width, canvas.height, "", len(everything), outside, tuple(full for _, full in notes),
        (0, top), scale, (area.width, area.height), moved, tuple(head),
    )  # fmt: skip
    return canvas, picture


def _outside_items(everything: list[Figure], frame: tuple[float, float]) -> list[PlacedItem]:
    width, height = frame
    placed = [f.placed() for f in everything]
    return [p for p in placed if p.skipped or any(not (0 <= x <= width and 0 <= y <= height) for x, y in p.points)]


def render(path: str, explanation: AnnotationExplanation, draw_item: DrawItem, **kwargs: Any) -> Picture:
    """:func:`render_image`, written to ``path`` (PNG or JPEG by its suffix; ``OptionError`` for any other)."""
    fmt = picture_format(path)
    canvas, picture = render_image(explanation, draw_item, **kwargs)
    buffer = io.BytesIO()
    canvas.save(buffer, format=fmt, **({"quality": 92} if fmt == "JPEG" else {}))
    replace_file(path, buffer.getvalue())
    return attrs.evolve(picture, format=fmt)


def replace_file(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``: an existing
    file is replaced whole or not at all (an interrupted run leaves it as it was)."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def png_bytes(explanation: AnnotationExplanation, draw_item: DrawItem, **kwargs: Any) -> bytes:
    """:func:`render_image` as PNG bytes (for a report's inline picture)."""
    canvas, _ = render_image(explanation, draw_item, **kwargs)
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


#: A crop is kept only when it leaves out at least this share of the image area (else the full picture says it all).
CROP_AT_MOST = 0.6
#: Room around the drawn items in a crop: this share of the region's larger side, and at least :data:`CROP_MARGIN_PX`.
CROP_MARGIN = 0.25
CROP_MARGIN_PX = 24


def crop_box(points: Sequence[tuple[float, float]], picture: Picture) -> tuple[int, int, int, int] | None:
    """The picture's rectangle ``(left, top, right, bottom)`` around the drawn ``points`` (source pixels), with a margin.

    ``None`` when there is no point, or when the rectangle would keep more than
    :data:`CROP_AT_MOST` of the image area (nothing to gain from a crop).
    """
    area_w, area_h = picture.area
    points = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y) and max(abs(x), abs(y)) < 1e9]
    if not points or area_w <= 0 or area_h <= 0:
        return None
    xs = [picture.at(x, y)[0] for x, y in points]
    ys = [picture.at(x, y)[1] for x, y in points]
    ox, oy = picture.origin
    margin = max(CROP_MARGIN * max(max(xs) - min(xs), max(ys) - min(ys)), CROP_MARGIN_PX * picture.scale)
    left, right = max(min(xs) - margin, ox), min(max(xs) + margin, ox + area_w)
    top, bottom = max(min(ys) - margin, oy), min(max(ys) + margin, oy + area_h)
    if right - left < 2 or bottom - top < 2 or (right - left) * (bottom - top) > CROP_AT_MOST * area_w * area_h:
        return None
    return round(left), round(top), round(right), round(bottom)


def png_views(explanation: AnnotationExplanation, draw_item: DrawItem, **kwargs: Any) -> tuple[bytes, bytes | None]:
    """:func:`render_image` as PNG bytes, and its crop to the region of the targets and predictions (or ``None``).

    The crop (:func:`crop_box`) is cut from the same drawing, so it shows the
    same outlines and labels at the image's own resolution; a report shows it
    first, with the whole picture one click away.
    """
    canvas, picture = render_image(explanation, draw_item, **kwargs)
    targets, predictions, _ = figures(explanation, draw_item, owner=kwargs["owner"], metric=kwargs.get("metric", "similarity"))
    points = [p for f in targets + predictions for p in f.placed().points]
    box = crop_box(points, picture)
    crop = None
    if box is not None:
        buffer = io.BytesIO()
        canvas.crop(box).save(buffer, format="PNG", optimize=True)
        crop = buffer.getvalue()
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue(), crop


# --- the image under an overlay ----------------------------------------------------------------

#: The largest image file drawn under a case's overlay (bytes).
MAX_IMAGE_BYTES = 16 * 1024 * 1024
#: The most pixels (width x height) of an image drawn under a case's overlay.
MAX_IMAGE_PIXELS = 40_000_000
#: The image formats drawn, by the magic bytes their files start with (Pillow's format names).
IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
)


def image_format(head: bytes) -> str | None:
    """The image format a file's first bytes announce (``PNG``, ``JPEG``, ``GIF``, ``WEBP``), else ``None``."""
    for magic, name in IMAGE_MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return None


def image_problem(path: str) -> str | None:
    """Why the file at ``path`` is not drawn under an overlay (``None`` when it is a usable image).

    The content decides, never the name: the file must start with the magic
    bytes of PNG, JPEG, GIF or WebP and open in Pillow as that format (so no
    other decoder is ever run on it), and stay within :data:`MAX_IMAGE_BYTES`
    and :data:`MAX_IMAGE_PIXELS`.
    """
    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode):  # a FIFO or a device would block or never end
            return "is not a regular file"
        size = found.st_size
        if size > MAX_IMAGE_BYTES:
            return f"is {size:,} bytes, more than the {MAX_IMAGE_BYTES:,} an image may have"
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        return f"cannot be read ({describe(exc)})"
    except ValueError:  # a name the system cannot encode (a lone surrogate) or holding NUL
        return "cannot be read (the system cannot name such a file)"
    kind = image_format(head)
    if kind is None:
        return "is not a PNG, JPEG, GIF or WebP image (by its content, whatever its name)"
    if not pillow_available():
        return None  # nothing is drawn without Pillow
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's decompression-bomb warning: the bound below decides
            with Image.open(path, formats=[kind]) as opened:
                width, height = opened.size
    except Exception as exc:  # a truncated or forged file; Pillow's own bomb error
        return f"does not open as a {kind} image ({type(exc).__name__})"
    if width * height > MAX_IMAGE_PIXELS:
        return f"is {width}x{height} pixels, more than the {MAX_IMAGE_PIXELS:,} an image may have"
    return None
