"""Drawing targets and predictions for ``trace-tasks explain --png`` (needs Pillow).

Targets are green, predictions red, and each matched pair is joined by a blue
line between the items' centres; labels carry the item's name and, for
predictions, the pair's IoU or similarity. Items are the families' parsed
primitives, flat tuples of alternating x and y: a box is drawn as a rectangle
(when the primitive's metric is IoU), two numbers as a point, more as a polyline.
"""

from __future__ import annotations

from typing import Any

from trace_tasks.cli._pairs import Assignment, Item

TARGET_RGB = (0, 160, 0)
PRED_RGB = (220, 30, 30)
LINK_RGB = (30, 90, 230)
DEFAULT_CANVAS = (640, 480)
LINE_WIDTH = 3
POINT_RADIUS = 6

VIZ_MISSING = "drawing needs Pillow: pip install 'trace-core[viz]'"


class DrawingUnavailable(RuntimeError):
    """Pillow is not installed."""


def _pil() -> Any:
    try:
        from PIL import Image, ImageDraw
    except ImportError as exc:
        raise DrawingUnavailable(VIZ_MISSING) from exc
    return Image, ImageDraw


def _points(value: Any) -> list[tuple[float, float]]:
    return [(float(value[i]), float(value[i + 1])) for i in range(0, len(value) - 1, 2)]


def centre(value: Any) -> tuple[float, float]:
    pts = _points(value)
    return (sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts))


def _draw_item(draw: Any, value: Any, colour: tuple[int, int, int], boxes: bool) -> None:
    pts = _points(value)
    if boxes and len(pts) == 2:
        (x0, y0), (x1, y1) = pts
        draw.rectangle([min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)], outline=colour, width=LINE_WIDTH)
    elif len(pts) == 1:
        (x, y), r = pts[0], POINT_RADIUS
        draw.ellipse([x - r, y - r, x + r, y + r], outline=colour, width=LINE_WIDTH)
        draw.line([x - r, y, x + r, y], fill=colour, width=1)
        draw.line([x, y - r, x, y + r], fill=colour, width=1)
    elif pts:
        draw.line(pts, fill=colour, width=LINE_WIDTH)
        for x, y in (pts[0], pts[-1]):
            draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=colour)


def _label(draw: Any, value: Any, text: str, colour: tuple[int, int, int], *, below: bool) -> None:
    # Targets are labelled above their top-left corner, predictions below their
    # bottom edge, so the two labels of a close pair do not overprint each other.
    pts = _points(value)
    x = min(p[0] for p in pts)
    y = max(p[1] for p in pts) + POINT_RADIUS if below else min(p[1] for p in pts) - 12 - POINT_RADIUS
    draw.text((x + 2, max(y, 0)), text, fill=colour)


def _finite(item: Item) -> bool:
    import math

    return all(isinstance(v, (int, float)) and math.isfinite(v) and abs(v) < 1e7 for v in item.value)


def draw_png(
    path: str, result: Assignment, *, size: tuple[float, float] | None, image_path: str | None = None
) -> tuple[int, int]:
    """Write the picture to ``path``; returns its (width, height)."""
    Image, ImageDraw = _pil()
    if image_path:
        canvas = Image.open(image_path).convert("RGB")
    else:
        width, height = (round(size[0]), round(size[1])) if size else DEFAULT_CANVAS
        canvas = Image.new("RGB", (max(width, 1), max(height, 1)), "white")
    draw = ImageDraw.Draw(canvas)
    boxes = result.metric == "iou"
    targets = [p.target for p in result.pairs] + list(result.unmatched_targets)
    preds = [p.pred for p in result.pairs] + list(result.unmatched_preds)
    for item in filter(_finite, targets):
        _draw_item(draw, item.value, TARGET_RGB, boxes)
    for item in filter(_finite, preds):
        _draw_item(draw, item.value, PRED_RGB, boxes)
    for pair in result.pairs:
        if _finite(pair.pred) and _finite(pair.target):
            draw.line([centre(pair.target.value), centre(pair.pred.value)], fill=LINK_RGB, width=1)
    for item in filter(_finite, targets):
        _label(draw, item.value, f"T{item.label}", TARGET_RGB, below=False)
    for pair in result.pairs:
        if _finite(pair.pred):
            _label(draw, pair.pred.value, f"P{pair.pred.label} {result.metric} {pair.score:.2f}", PRED_RGB, below=True)
    for item in filter(_finite, result.unmatched_preds):
        _label(draw, item.value, f"P{item.label} unmatched", PRED_RGB, below=True)
    canvas.save(path, format="PNG")
    return canvas.size
