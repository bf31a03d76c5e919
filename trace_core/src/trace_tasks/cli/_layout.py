"""Where the labels of a picture go: greedy placement that stays inside the image and apart.

Each label tries positions around its item (above or below first, then the
sides, then further out a line at a time, then beside the ends of a long
segment) and takes the one overlapping the labels already placed, then the
items, least, nearest to the item. Pure geometry on rectangles
``(x0, y0, x1, y1)``; :mod:`trace_tasks.cli._drawing` renders what it places.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Rect = tuple[float, float, float, float]

#: Radius of a drawn point, and the gap kept between a label and what it names (pixels).
POINT_RADIUS = 6
LABEL_GAP = 2


def overlap(a: Rect, b: Rect) -> float:
    """The area two rectangles ``(x0, y0, x1, y1)`` share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), max(high, low))


def label_candidates(bbox: Rect, text: tuple[float, float], below_first: bool) -> list[tuple[float, float]]:
    """Top-left corners to try for a ``text``-sized label beside ``bbox``, in order of preference."""
    x0, y0, x1, y1 = bbox
    tw, th = text
    gap = LABEL_GAP + POINT_RADIUS
    above, below = (x0, y0 - th - gap), (x0, y1 + gap)
    sides = [
        (x1 + gap, y0),
        (x0 - tw - gap, y0),
        (x1 - tw, y0 - th - gap),
        (x1 - tw, y1 + gap),
        (x0 + LABEL_GAP, y0 + LABEL_GAP),
    ]
    first, second = (below, above) if below_first else (above, below)
    # Then further out on the preferred side and the other, a line at a time, for crowded places.
    ladder = [(x, y + k * (th + LABEL_GAP) * sign) for k in (1, 2, 3) for (x, y), sign in ((first, 1), (second, -1))]
    if not below_first:
        ladder = [(x, y + k * (th + LABEL_GAP) * sign) for k in (1, 2, 3) for (x, y), sign in ((first, -1), (second, 1))]
    return [first, second, *sides, *ladder]


def _beside_points(near: Sequence[tuple[float, float]], text: tuple[float, float]) -> list[tuple[float, float]]:
    """Corners to try next to the first and last of ``near`` (a long segment's label goes by its ends)."""
    tw, th = text
    gap = LABEL_GAP + POINT_RADIUS
    ends = [near[0], near[-1]] if near else []
    return [(px + dx, py + dy) for px, py in ends for dx in (gap, -tw - gap) for dy in (gap, -th - gap)]


def _distance(rect: Rect, point: tuple[float, float]) -> float:
    px, py = point
    return math.hypot(max(rect[0] - px, 0.0, px - rect[2]), max(rect[1] - py, 0.0, py - rect[3]))


def place_label(
    bbox: Rect,
    text: tuple[float, float],
    below_first: bool,
    placed: Sequence[Rect],
    items: Sequence[Rect],
    area: Rect,
    near: Sequence[tuple[float, float]] = (),
) -> Rect:
    """Where a label goes: the candidate (clamped inside ``area``) overlapping ``placed`` labels, then
    ``items``, least, and nearest to the item's points ``near``; among equals the first (a clamped
    candidate counts as far as it moved)."""
    tw, th = text
    best: tuple[float, Rect] | None = None
    for rank, (x, y) in enumerate([*label_candidates(bbox, text, below_first), *_beside_points(near, text)]):
        cx, cy = _clamp(x, area[0], area[2] - tw), _clamp(y, area[1], area[3] - th)
        rect = (cx, cy, cx + tw, cy + th)
        cost = 1000.0 * sum(overlap(rect, other) for other in placed)
        cost += sum(overlap(rect, item) for item in items) + abs(cx - x) + abs(cy - y) + rank
        cost += min((_distance(rect, p) for p in near), default=0.0)
        if best is None or cost < best[0]:
            best = (cost, rect)
    assert best is not None
    return best[1]
