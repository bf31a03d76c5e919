"""Finding the source image size (for the point half-life) in the caller's metadata.

Sources are tried in order: ``image_size``, ``image_sizes``, ``metadata``,
``extra_info``; the first valid size wins (docs/contracts.md §5.4). A size is valid
when both sides are non-boolean, finite numbers > 0.

The search is bounded: at most ``_MAX_DEPTH`` levels and ``_MAX_VISITS`` values
per source, so a self-referencing mapping or a list that repeats one sub-list
(a small object that unfolds into an exponential tree) costs microseconds; and
only strings of at most ``_MAX_LITERAL_SIZE_CHARS`` go to the slow Python-literal
reader (JSON is read at any length), at most ``_MAX_LITERAL_CHARS_PER_SOURCE``
characters of them per source: metadata of nested literal strings (a literal
whose mappings hold more literal strings) cost 0.3 s per source on every call.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from trace_tasks.reading import MIN_LITERAL_CHARGE, is_mapping, load_json, load_literal

NESTED_KEYS = ("source_image_size", "image_size", "image_sizes", "canvas_size", "img_size")
WIDTH_KEYS = ("width", "w", "image_width", "canvas_width")
HEIGHT_KEYS = ("height", "h", "image_height", "canvas_height")
_MAX_DEPTH = 8
#: Values inspected per source (a fresh budget for each source).
_MAX_VISITS = 256
#: Longest string handed to the literal reader (a size literal is a few characters).
_MAX_LITERAL_SIZE_CHARS = 4096
#: Characters handed to the literal reader per source, each read charged at least
#: ``MIN_LITERAL_CHARGE`` (at ~1.5 us per character, ~6 ms per source at most).
_MAX_LITERAL_CHARS_PER_SOURCE = _MAX_LITERAL_SIZE_CHARS
#: Characters decoded as JSON per source: a list repeating one long string (held once
#: by the caller) would otherwise decode it at every visit.
_MAX_JSON_CHARS_PER_SOURCE = 64 * 1024
#: Items of one list looked at for a nested size (``[[w, h], ...]``): a size sits near the front.
_MAX_LIST_ITEMS = 64

Size = tuple[float, float]


def _side(value: Any) -> float | None:
    # numbers.Real admits numpy scalars (np.int64 is no int), as rows from
    # pandas or parquet carry them; booleans (numpy's too) are never sizes.
    kind = type(value)
    if kind is not float and kind is not int and (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)):
        return None  # (exact floats and ints skip the ABC test: they are Real and never bool)
    try:
        side = float(value)
    except OverflowError:
        return None
    return side if math.isfinite(side) and side > 0 else None


def _pair(value: Any) -> Size | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        w, h = _side(value[0]), _side(value[1])
        if w is not None and h is not None:
            return (w, h)
    return None


def _first_present(mapping: Mapping[Any, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if key in mapping:
            return _side(mapping[key])
    return None


def size_from(value: Any, depth: int = 0, budget: list[int] | None = None) -> Size | None:
    """The first valid ``(width, height)`` found in ``value``, or None.

    ``budget`` is a three-item list: the values still allowed to be inspected,
    the characters the literal reader and the JSON decoder may still read (shared
    across recursive calls); None starts a fresh budget.
    """
    if budget is None:
        budget = [_MAX_VISITS, _MAX_LITERAL_CHARS_PER_SOURCE, _MAX_JSON_CHARS_PER_SOURCE]
    if value is None or depth > _MAX_DEPTH or budget[0] <= 0:
        return None
    budget[0] -= 1
    if isinstance(value, str):
        return _size_from_text(value, depth, budget)
    if isinstance(value, np.ndarray):
        # A size column read through pandas/pyarrow arrives as an array.
        value = value.tolist() if value.ndim <= 2 and value.size <= 2 * _MAX_VISITS else None
        if value is None:
            return None
    # Lists before mappings: ``[w, h]`` is the common case and the Mapping ABC test costs more.
    if isinstance(value, (list, tuple)):
        return _size_from_items(value, depth, budget)
    if is_mapping(value):
        return _size_from_mapping(value, depth, budget)
    return None


def _size_from_text(value: str, depth: int, budget: list[int]) -> Size | None:
    """A size written as JSON or as a Python literal (each read charged to its budget)."""
    parsed, ok = load_json(value) if _charge(budget, 2, len(value)) else (None, False)
    if not ok and len(value) <= _MAX_LITERAL_SIZE_CHARS and _charge(budget, 1, len(value)):
        parsed, ok = load_literal(value)
    return size_from(parsed, depth + 1, budget) if ok and not isinstance(parsed, str) else None


def _size_from_items(value: list[Any] | tuple[Any, ...], depth: int, budget: list[int]) -> Size | None:
    """``[w, h]`` itself, else the first size among the first items that are lists or mappings."""
    pair = _pair(value)
    if pair is not None:
        return pair
    for item in value[:_MAX_LIST_ITEMS]:
        if isinstance(item, (list, tuple)) or is_mapping(item):
            found = size_from(item, depth + 1, budget)
            if found is not None:
                return found
    return None


def _size_from_mapping(value: Mapping[Any, Any], depth: int, budget: list[int]) -> Size | None:
    """The first size under a nested key, else the mapping's own width and height keys."""
    for key in NESTED_KEYS:
        if key in value:
            found = size_from(value[key], depth + 1, budget)
            if found is not None:
                return found
    w, h = _first_present(value, WIDTH_KEYS), _first_present(value, HEIGHT_KEYS)
    return (w, h) if w is not None and h is not None else None


def _charge(budget: list[int], kind: int, chars: int) -> bool:
    """Take a read of ``chars`` characters from ``budget[kind]``; False when it does not fit."""
    cost = max(chars, MIN_LITERAL_CHARGE) if kind == 1 else chars
    if cost > budget[kind]:
        return False
    budget[kind] -= cost
    return True


def find_image_size(*sources: Any) -> Size | None:
    """The first valid size among ``sources``, in order."""
    for source in sources:
        found = size_from(source)
        if found is not None:
            return found
    return None
