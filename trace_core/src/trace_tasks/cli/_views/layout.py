"""Where the labels of a picture go: greedy placement that stays inside the image and apart.

Each label tries positions around its item (above or below first, then the
sides, then further out a line at a time, then beside the ends of a long
segment) and takes the one overlapping the labels already placed, then the
items, least, nearest to the item. Pure geometry on rectangles
``(x0, y0, x1, y1)``; :mod:`trace_tasks.cli._views.drawing` renders what it places.

A :class:`Layout` keeps the labels placed and the items in a grid of cells
(:class:`RectIndex`), so each candidate position is compared with the
rectangles of the cells it touches only, not with every one of the picture:
the cost of a label no longer grows with the number of labels and items
around it elsewhere. The positions chosen are exactly those of comparing with
all of them (:func:`place_label`, kept for one label): a rectangle that
overlaps the candidate shares a cell with it, the others add nothing, and the
ones that do are summed in the same order. Only crowding beyond any readable
picture changes that (more than :data:`CELL_CAPACITY` rectangles in one
cell, more than :data:`MAX_EXACT_LARGE` boxes across the image): there the
cost of a candidate is bounded instead. A picture labels at most
:data:`MAX_LABELS` items (:func:`label_quota`), so its placement costs a
bounded time whatever the number of items.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

Rect = tuple[float, float, float, float]

#: Radius of a drawn point, and the gap kept between a label and what it names (pixels).
POINT_RADIUS = 6
LABEL_GAP = 2

#: At most this many labels in one picture (a report draws up to 20 pictures): past it the first items of each
#: side are labelled (:func:`label_quota`) and the picture's notes say how many; every item is still drawn.
MAX_LABELS = 200
#: The side of a cell of :class:`RectIndex` in pixels: about a label's height, so a candidate touches a few cells.
CELL_SIDE = 32.0
#: A rectangle over more cells than this (a box across the image) is not bucketed but compared with every candidate.
MAX_RECT_CELLS = 64
#: Up to this many such large rectangles are summed one by one, as :func:`place_label` sums them; past it (a model
#: repeating a whole-image box) they are summed at once with numpy ...
MAX_EXACT_LARGE = 64
#: ... and only the first this many large rectangles are kept at all,
MAX_LARGE = 1024
#: as only the first this many rectangles of one cell (a model repeating a small box): a candidate is compared with
#: a bounded number of rectangles however crowded the picture, and a crowded spot stays one to avoid.
CELL_CAPACITY = 64


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


class RectIndex:
    """Rectangles bucketed by the grid cells of ``area`` they touch; :meth:`near` finds the ones a rectangle may overlap.

    Cells are :data:`CELL_SIDE` pixels a side (only those holding something
    exist) and clamped to the grid, so a rectangle reaching past ``area`` is in
    its border cells: two rectangles that overlap always share a cell. A
    rectangle over more than :data:`MAX_RECT_CELLS` cells is kept apart and
    is near everything (it overlaps most candidates anyway). A cell keeps its
    first :data:`CELL_CAPACITY` rectangles and the large ones are the first
    :data:`MAX_LARGE`: past those, in a spot already that crowded, the rest
    are not looked at.
    """

    def __init__(self, area: Rect) -> None:
        self.x0, self.y0 = area[0], area[1]
        self.columns = max(1, math.ceil((area[2] - area[0]) / CELL_SIDE))
        self.rows = max(1, math.ceil((area[3] - area[1]) / CELL_SIDE))
        self.rects: list[Rect] = []
        self.cells: dict[tuple[int, int], list[int]] = {}
        self.large: list[int] = []
        self._large_array: Any = None  # the large rectangles as a 4 x N array, built on demand

    @staticmethod
    def _cell(value: float, origin: float, count: int) -> int:
        step = (value - origin) / CELL_SIDE
        if not step > 0:  # before the grid (or not a number)
            return 0
        return count - 1 if step >= count else int(step)

    def _span(self, rect: Rect) -> tuple[range, range]:
        c0, c1 = self._cell(rect[0], self.x0, self.columns), self._cell(rect[2], self.x0, self.columns)
        r0, r1 = self._cell(rect[1], self.y0, self.rows), self._cell(rect[3], self.y0, self.rows)
        return range(min(c0, c1), max(c0, c1) + 1), range(min(r0, r1), max(r0, r1) + 1)

    def add(self, rect: Rect) -> None:
        number = len(self.rects)
        self.rects.append(rect)
        columns, rows = self._span(rect)
        if len(columns) * len(rows) > MAX_RECT_CELLS:
            if len(self.large) < MAX_LARGE:
                self.large.append(number)
                self._large_array = None
            return
        for column in columns:
            for row in rows:
                bucket = self.cells.setdefault((column, row), [])
                if len(bucket) < CELL_CAPACITY:
                    bucket.append(number)

    def near(self, rect: Rect, *, large: bool = True) -> list[Rect]:
        """The rectangles sharing a cell with ``rect`` and (``large``) the large ones, in the order they were added (each once)."""
        columns, rows = self._span(rect)
        found = [numbers for numbers in (self.cells.get((c, r)) for c in columns for r in rows) if numbers]
        if (not large or not self.large) and len(found) <= 1:  # one cell: already in order, each once
            return [self.rects[n] for n in found[0]] if found else []
        numbers = set(self.large) if large else set()
        for cell in found:
            numbers.update(cell)
        return [self.rects[n] for n in sorted(numbers)]

    def overlap_sum(self, rect: Rect) -> float:
        """The area ``rect`` shares with the rectangles: summed in the order they were added, as :func:`place_label`
        does, while at most :data:`MAX_EXACT_LARGE` are large; past it the large ones are summed with numpy."""
        if len(self.large) <= MAX_EXACT_LARGE:
            return sum(overlap(rect, other) for other in self.near(rect))
        if self._large_array is None:
            self._large_array = np.array([self.rects[n] for n in self.large], dtype=float).T
        x0, y0, x1, y1 = self._large_array
        width = np.clip(np.minimum(x1, rect[2]) - np.maximum(x0, rect[0]), 0.0, None)
        height = np.clip(np.minimum(y1, rect[3]) - np.maximum(y0, rect[1]), 0.0, None)
        return sum(overlap(rect, other) for other in self.near(rect, large=False)) + float(width @ height)


class Layout:
    """The labels of one picture, placed one after another inside ``area``, apart from each other and the ``items``."""

    def __init__(self, area: Rect, items: Iterable[Rect]) -> None:
        self.area = area
        self.items = RectIndex(area)
        for item in items:
            self.items.add(item)
        self.labels = RectIndex(area)

    def place(self, bbox: Rect, text: tuple[float, float], below_first: bool, near: Sequence[tuple[float, float]] = ()) -> Rect:
        """Where the next label goes (as :func:`place_label` with every label placed so far); it is then placed."""
        rect = _best(bbox, text, below_first, self.labels.overlap_sum, self.items.overlap_sum, self.area, near)
        self.labels.add(rect)
        return rect


def label_quota(targets: int, predictions: int, limit: int = MAX_LABELS) -> tuple[int, int]:
    """How many of the first targets and predictions get a label: all of them up to ``limit`` in all, else
    half each (a side with fewer lends the rest to the other)."""
    if targets + predictions <= limit:
        return targets, predictions
    labelled_targets = min(targets, max(limit // 2, limit - predictions))
    return labelled_targets, min(predictions, limit - labelled_targets)


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
    candidate counts as far as it moved). Compares with every rectangle: a picture uses :class:`Layout`."""
    return _best(
        bbox,
        text,
        below_first,
        lambda rect: sum(overlap(rect, other) for other in placed),
        lambda rect: sum(overlap(rect, item) for item in items),
        area,
        near,
    )


def _best(
    bbox: Rect,
    text: tuple[float, float],
    below_first: bool,
    labels_overlap: Callable[[Rect], float],
    items_overlap: Callable[[Rect], float],
    area: Rect,
    near: Sequence[tuple[float, float]],
) -> Rect:
    """:func:`place_label`'s choice, given the area a candidate shares with the labels placed and with the items."""
    tw, th = text
    best: tuple[float, Rect] | None = None
    for rank, (x, y) in enumerate([*label_candidates(bbox, text, below_first), *_beside_points(near, text)]):
        cx, cy = _clamp(x, area[0], area[2] - tw), _clamp(y, area[1], area[3] - th)
        rect = (cx, cy, cx + tw, cy + th)
        cost = 1000.0 * labels_overlap(rect)
        cost += items_overlap(rect) + abs(cx - x) + abs(cy - y) + rank
        cost += min((_distance(rect, p) for p in near), default=0.0)
        if best is None or cost < best[0]:
            best = (cost, rect)
    assert best is not None
    return best[1]
