"""Reading numbers from hostile values: the building blocks of every family's item parser."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trace_tasks.errors import AnnotationParseError
from trace_tasks.reading import from_numpy


def coordinate(value: Any) -> float:
    """A coordinate: a non-boolean, finite real that fits a float."""
    # Fast paths for the exact built-in types (bool is a subclass of int, so it is
    # not ``int`` here): 2-3x cheaper per coordinate, same result as the general path.
    kind = type(value)
    if kind is float:
        exact: float = value  # the exact built-in type, checked just above
        if math.isfinite(exact):
            return exact
        raise AnnotationParseError("coordinate must be finite")
    if kind is int:
        try:
            return float(value)  # always finite when it fits
        except OverflowError:
            raise AnnotationParseError("coordinate too large for a float") from None
    value = from_numpy(value)  # np.int64 and friends: plain numbers first
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnnotationParseError(f"coordinate must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise AnnotationParseError("coordinate too large for a float") from None
    if not math.isfinite(number):
        raise AnnotationParseError("coordinate must be finite")
    return number


_PLAIN_NUMBERS = frozenset((int, float))


def coordinates(value: Any, count: int) -> tuple[float, ...]:
    """Exactly ``count`` coordinates from a list or tuple."""
    if not isinstance(value, (list, tuple)):
        value = from_numpy(value)  # a target read from parquet: an array of numbers
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise AnnotationParseError(f"expected a list of {count} numbers")
    if _PLAIN_NUMBERS.issuperset(map(type, value)):
        # Fast path, all exact ints and floats (bool is not ``int`` here): C-level
        # conversion and finiteness checks, the same values as ``coordinate``.
        try:
            numbers = tuple(map(float, value))
        except OverflowError:
            raise AnnotationParseError("coordinate too large for a float") from None
        if all(map(math.isfinite, numbers)):
            return numbers
        raise AnnotationParseError("coordinate must be finite")
    return tuple(map(coordinate, value))


def is_flat(value: Any, count: int) -> bool:
    """Whether ``value`` looks like one flat item of ``count`` scalars (not a collection)."""
    return (
        isinstance(value, (list, tuple)) and len(value) == count and not any(isinstance(v, (list, tuple, Mapping)) for v in value)
    )
