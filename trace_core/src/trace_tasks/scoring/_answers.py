"""``answer_exact_match_v0``: exact match after typed normalization.

Canonical form (docs/contracts.md §4): strings stripped and
case-folded; finite integral floats equal to ints; non-finite numbers match
nothing; booleans stay booleans; mapping keys normalized and order ignored; set
order ignored (a set is its items in sorted order); list and tuple order kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.reading import from_numpy, load_json


class _NoMatch:
    """A canonical value equal to nothing, itself included (NaN, infinities, odd types)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return "<no match>"


class _TooDeep(Exception):
    pass


_LIST = "__list__"
_DICT = "__dict__"
_BOOL = "__bool__"


def _sort_key(c: Any) -> tuple[int, Any]:
    if isinstance(c, (int, float)):
        return (0, c)
    if isinstance(c, str):
        return (1, c)
    return (2, repr(c))


def _key_string(raw: Any, depth: int) -> str:
    if isinstance(raw, str):
        return raw.strip().casefold()
    c = canonical(raw, depth)
    if isinstance(c, str):
        return c
    if isinstance(c, (int, float)):
        return str(c)
    return repr(c)


def normalized_key(key: Any) -> str:
    """A mapping key as :func:`canonical` compares it: two keys of one mapping are one key when these are equal.

    Strings are stripped and case-folded; other keys (from a Python-literal
    payload) are normalised like values and then turned into strings. Instance
    validation uses it to refuse a target whose keys collide.
    """
    return _key_string(key, 0)


def canonical(value: Any, depth: int = 0) -> Any:
    """The comparable canonical form of an answer value (hashable, order-aware)."""
    if depth > MAX_ANSWER_DEPTH:
        raise _TooDeep
    kind = type(value)  # the exact built-in scalars first: one type test instead of an isinstance chain
    if kind is int:
        return value
    if kind is str:
        return value.strip().casefold()
    if value is None:
        return None
    if isinstance(value, bool):
        return (_BOOL, value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return _NoMatch()
        return int(value) if value.is_integer() else value
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, (list, tuple)):
        return (_LIST, tuple(canonical(v, depth + 1) for v in value))
    if isinstance(value, (set, frozenset)):
        items = [canonical(v, depth + 1) for v in value]
        return (_LIST, tuple(sorted(items, key=_sort_key)))
    if isinstance(value, Mapping):
        normalized: dict[str, Any] = {}
        for k, v in value.items():
            normalized[_key_string(k, depth + 1)] = canonical(v, depth + 1)  # later key wins
        return (_DICT, tuple(sorted(normalized.items())))
    return _canonical_other(value, depth)


def _canonical_other(value: Any, depth: int) -> Any:
    """``canonical`` of the rarer values: complex numbers, bytes, ``...``, numpy scalars and arrays."""
    if isinstance(value, complex):
        if not (math.isfinite(value.real) and math.isfinite(value.imag)):
            return _NoMatch()
        return ("__complex__", value.real, value.imag)
    if isinstance(value, bytes):
        return ("__bytes__", value)
    if value is Ellipsis:
        return ("__ellipsis__",)
    plain = from_numpy(value)  # a ground truth read through pandas or parquet
    if plain is not value:
        return canonical(plain, depth)
    return _NoMatch()


#: The characters a JSON text can start with (after JSON whitespace).
JSON_STARTS = _JSON_STARTS = frozenset('{["-0123456789tfn')


def _tagged(prepared: Any, tag: str) -> bool:
    return type(prepared) is tuple and len(prepared) == 2 and prepared[0] == tag


_SCALAR_TYPES = frozenset((str, int, float, bool, type(None)))


def _same(value: Any, prepared: Any, depth: int = 0) -> bool:
    """``canonical(value, depth) == prepared``, stopping at the first difference.

    A prediction may be a megabyte of JSON (the atomic answer is the whole
    response): building its canonical form costs a Python step per item, while
    a list of the wrong length, or a mapping with the wrong number of keys,
    differs at once. Raises what :func:`canonical` raises (too deep) wherever
    it would, so the result is the same in every case.
    """
    if depth > MAX_ANSWER_DEPTH:
        raise _TooDeep
    if type(value) in _SCALAR_TYPES:  # most answers: no container test at all (the Mapping ABC test is slow)
        return bool(canonical(value, depth) == prepared)
    if isinstance(value, (list, tuple)):
        if not _tagged(prepared, _LIST) or len(prepared[1]) != len(value):
            return False
        return all(_same(v, p, depth + 1) for v, p in zip(value, prepared[1], strict=True))
    if isinstance(value, Mapping):
        if not _tagged(prepared, _DICT):
            return False
        latest: dict[str, Any] = {}
        for k, v in value.items():
            latest[_key_string(k, depth + 1)] = v  # later key wins, as in canonical
        if len(latest) != len(prepared[1]):
            return False
        for key, item in prepared[1]:
            if key not in latest or not _same(latest[key], item, depth + 1):
                return False
        if len(latest) != len(value):  # values overwritten by a later key must still be comparable
            for v in value.values():
                canonical(v, depth + 1)
        return True
    return bool(canonical(value, depth) == prepared)


def read_string_literal(value: Any) -> Any:
    """A string that is a JSON literal other than ``null`` is read as that literal."""
    # Most answer strings ("B", "red") cannot start a JSON text: skip the decoder's
    # exception. ``str.lstrip`` strips a superset of JSON whitespace, so a string
    # skipped here is one the decoder would refuse.
    if isinstance(value, str) and value.lstrip()[:1] in _JSON_STARTS:
        parsed, ok = load_json(value)
        if ok and parsed is not None:
            return parsed
    return value


_UNCOMPARABLE = (_TooDeep, RecursionError, MemoryError, TypeError, ValueError)
#: The prepared form of a target that cannot be compared (nested too deep): it matches nothing.
NEVER_MATCHES: Any = _NoMatch()


def _plain(value: Any) -> Any:
    """A canonical form turned back into plain JSON-like values (lists, dicts, booleans)."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == _LIST:
        return [_plain(v) for v in value[1]]
    if isinstance(value, tuple) and len(value) == 2 and value[0] == _DICT:
        return {k: _plain(v) for k, v in value[1]}
    if isinstance(value, tuple) and len(value) == 2 and value[0] == _BOOL:
        return value[1]
    return value


def canonical_text(value: Any, *, reads_json_strings: bool = True) -> str:
    """The normalized form ``answer_exact_match_v0`` compares, as readable text (for reports).

    ``reads_json_strings`` is the answer type's flag: a string that is a JSON
    literal is read first. A value too deep or too odd to normalize is said so
    (the matcher counts it as no match).
    """
    if reads_json_strings:
        value = read_string_literal(value)
    try:
        return repr(_plain(canonical(value)))
    except Exception as exc:
        return f"<cannot normalize: {type(exc).__name__}>"


def answer_target(target: Any, *, reads_json_strings: bool = True) -> Any:
    """A target answer prepared once for :func:`matches_answer_target` (its canonical form)."""
    if reads_json_strings:
        target = read_string_literal(target)
    try:
        return canonical(target)
    except _UNCOMPARABLE:
        return NEVER_MATCHES


def matches_answer_target(prediction: Any, prepared: Any, *, reads_json_strings: bool = True) -> bool:
    """``answer_exact_match_v0`` of a raw prediction against a target prepared by :func:`answer_target`."""
    if prepared is NEVER_MATCHES:
        return False
    if reads_json_strings:
        prediction = read_string_literal(prediction)
    try:
        return _same(prediction, prepared)
    except _UNCOMPARABLE:
        return False
