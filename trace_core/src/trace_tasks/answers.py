"""Answer types and ``answer_exact_match_v0``: exact match after typed normalization.

Canonical form (docs/contracts.md §4): strings stripped and
case-folded; finite integral floats equal to ints; non-finite numbers match
nothing; booleans stay booleans; mapping keys normalized and order ignored; set
order ignored (a set is its items in sorted order); list and tuple order kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.literals import load_json
from trace_tasks.markers import hookimpl
from trace_tasks.numpy_values import from_numpy
from trace_tasks.specs import AnswerTypeSpec

ANSWER_REWARD_CONTRACT_ID = "answer_exact_match_v0"

# --- ground-truth value checks (instance validation) -------------------------------------
# A built-in type never allows null: the atomic-answer rule reads {"answer": null} as the
# whole response, so a null target can never be matched.


def _shown(value: Any) -> str:
    """A value as the message shows it: JSON spelling for null and booleans, a short repr otherwise."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _integral(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _finite_real(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _numeric_check(ok: Callable[[Any], bool], what: str, example: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        value = from_numpy(value)
        if ok(value):
            return None
        if isinstance(value, str):
            parsed, parsed_ok = load_json(value)
            if parsed_ok and ok(parsed):
                return None
        if value is None:
            return f"{what} answer cannot be null: give the value the model must answer, such as {example}"
        return f"{what} answer must be {_KINDS[what]} such as {example} (or a string holding one), got {_shown(value)}"

    return check


_KINDS = {"an integer": "a whole number", "a number": "a finite number"}


def _text_check(what: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        value = from_numpy(value)
        if isinstance(value, str):
            if value.strip():
                return None
            return f"{what} answer is empty: an empty target is matched by an empty response; write the expected text"
        if value is None:
            return f"{what} answer cannot be null: write the expected text as a non-empty string"
        return f"{what} answer must be a non-empty string, got {_shown(value)}"

    return check


def _check_boolean(value: Any) -> str | None:
    value = from_numpy(value)
    if isinstance(value, bool):
        return None
    if value is None:
        return "a boolean answer cannot be null: write true or false"
    return f"a boolean answer must be true or false (a JSON boolean, never 1 or 0), got {_shown(value)}"


def _unmatchable_item(value: Any) -> str | None:
    """Why a nested target can never be matched (a non-finite number, too deep), or None."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ANSWER_DEPTH:
            return f"is nested more than {MAX_ANSWER_DEPTH} levels deep, so it can never be matched"
        item = from_numpy(item)
        if isinstance(item, float) and not math.isfinite(item):
            return f"holds {_shown(item)}, which matches nothing (not even itself)"
        if isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
    return None


def _collection_check(what: str, kinds: tuple[type, ...], shape: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        value = from_numpy(value)
        if value is None:
            return f"{what} answer cannot be null: write {shape}"
        if not isinstance(value, kinds) or isinstance(value, str):
            return f"{what} answer must be {shape}, got {_shown(value)}"
        problem = _unmatchable_item(value)
        return f"{what} answer {problem}" if problem else None

    return check


BUILTIN_ANSWER_TYPES: tuple[AnswerTypeSpec, ...] = (
    AnswerTypeSpec("integer", description="a whole number", check_value=_numeric_check(_integral, "an integer", "7")),
    AnswerTypeSpec(
        "number", description="a real number, compared exactly", check_value=_numeric_check(_finite_real, "a number", "3.5")
    ),
    AnswerTypeSpec(
        "string", reads_json_strings=False, description="text, stripped and case-folded", check_value=_text_check("a string")
    ),
    AnswerTypeSpec("boolean", description="true or false (never equal to 1 or 0)", check_value=_check_boolean),
    AnswerTypeSpec(
        "option_letter", description="a multiple-choice letter such as 'B'", check_value=_text_check("an option_letter")
    ),
    AnswerTypeSpec("pi_expression", description="an expression in pi such as '12π'", check_value=_text_check("a pi_expression")),
    AnswerTypeSpec(
        "index_list",
        description="an ordered list of indices or labels",
        check_value=_collection_check("an index_list", (list, tuple), "a list of indices or labels such as [2, 0, 1]"),
    ),
    AnswerTypeSpec(
        "matrix",
        description="nested lists (or mappings) of numbers",
        check_value=_collection_check(
            "a matrix", (list, tuple, Mapping), "nested lists (or mappings) of numbers such as [[1, 2], [3, 4]]"
        ),
    ),
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
_JSON_STARTS = frozenset('{["-0123456789tfn')


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


def answers_match(prediction: Any, target: Any, *, reads_json_strings: bool = True) -> bool:
    """``answer_exact_match_v0`` on two raw values.

    Equal to ``matches_answer_target(prediction, answer_target(target))`` (the
    canonical forms compared are the same), written out for the per-call scorer.
    """
    if reads_json_strings:
        prediction = read_string_literal(prediction)
        target = read_string_literal(target)
    try:
        return _same(prediction, canonical(target))
    except _UNCOMPARABLE:
        return False
