"""Answer types and ``answer_exact_match_v0``: exact match after typed normalization.

Canonical form (seed "Answer Scoring", SPEC.md "Answers"): strings stripped and
case-folded; finite integral floats equal to ints; non-finite numbers match
nothing; booleans stay booleans; mapping keys normalized and order ignored; set
order ignored (a set is its items in sorted order); list and tuple order kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.numpy_values import from_numpy
from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.literals import load_json
from trace_tasks.markers import hookimpl
from trace_tasks.specs import AnswerTypeSpec

ANSWER_REWARD_CONTRACT_ID = "answer_exact_match_v0"

BUILTIN_ANSWER_TYPES: tuple[AnswerTypeSpec, ...] = (
    AnswerTypeSpec("integer", description="a whole number"),
    AnswerTypeSpec("number", description="a real number, compared exactly"),
    AnswerTypeSpec("string", reads_json_strings=False, description="text, stripped and case-folded"),
    AnswerTypeSpec("boolean", description="true or false (never equal to 1 or 0)"),
    AnswerTypeSpec("option_letter", description="a multiple-choice letter such as 'B'"),
    AnswerTypeSpec("pi_expression", description="an expression in pi such as '12π'"),
    AnswerTypeSpec("index_list", description="an ordered list of indices or labels"),
    AnswerTypeSpec("matrix", description="nested lists (or mappings) of numbers"),
)


class BuiltinAnswerTypes:
    """The core's own plugin: registers the eight built-in answer types."""

    @hookimpl
    def trace_answer_types(self) -> Sequence[AnswerTypeSpec]:
        return BUILTIN_ANSWER_TYPES


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


def canonical(value: Any, depth: int = 0) -> Any:
    """The comparable canonical form of an answer value (hashable, order-aware)."""
    if depth > MAX_ANSWER_DEPTH:
        raise _TooDeep
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


def read_string_literal(value: Any) -> Any:
    """A string that is a JSON literal other than ``null`` is read as that literal."""
    if isinstance(value, str):
        parsed, ok = load_json(value)
        if ok and parsed is not None:
            return parsed
    return value


def answers_match(prediction: Any, target: Any, *, reads_json_strings: bool = True) -> bool:
    """``answer_exact_match_v0`` on two raw values."""
    if reads_json_strings:
        prediction = read_string_literal(prediction)
        target = read_string_literal(target)
    try:
        return bool(canonical(prediction) == canonical(target))
    except (_TooDeep, RecursionError, MemoryError, TypeError, ValueError):
        return False
