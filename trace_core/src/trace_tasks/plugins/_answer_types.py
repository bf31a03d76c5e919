"""The core's own plugin: the eight built-in answer types and their ground-truth value checks.

Registered like any third-party plugin (``trace_answer_types``); the checks run
when an instance is validated and say what to write instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trace_tasks.errors import shown
from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.plugins._markers import hookimpl
from trace_tasks.plugins._records import AnswerTypeSpec
from trace_tasks.reading import from_numpy, holds_only, load_json

ANSWER_REWARD_CONTRACT_ID = "answer_exact_match_v0"
#: The opt-in evaluation policy (docs/contracts.md §4.1): relative tolerance for numbers, letters as written.
ANSWER_RELAXED_ID = "answer_relaxed_match_v0"
#: Answer reward versions beside ``answer_exact_match_v0`` (every answer type's default), with the types each
#: scores. Never current unless the user pins one for an answer type (``TRACE_TASKS_REWARD_IDS=number=...``).
ANSWER_VERSIONS: dict[str, tuple[str, ...]] = {ANSWER_RELAXED_ID: ("number", "option_letter")}

# --- ground-truth value checks (instance validation) -------------------------------------
# A built-in type never allows null: the atomic-answer rule reads {"answer": null} as the
# whole response, so a null target can never be matched.


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
        return f"{what} answer must be {_KINDS[what]} such as {example} (or a string holding one), got {shown(value)}"

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
        return f"{what} answer must be a non-empty string, got {shown(value)}"

    return check


def _check_boolean(value: Any) -> str | None:
    value = from_numpy(value)
    if isinstance(value, bool):
        return None
    if value is None:
        return "a boolean answer cannot be null: write true or false"
    return f"a boolean answer must be true or false (a JSON boolean, never 1 or 0), got {shown(value)}"


_PLAIN_LEAVES: frozenset[type] = frozenset((str, int, bool, type(None)))


def _unmatchable_item(value: Any) -> str | None:
    """Why a nested target can never be matched (a non-finite number, too deep), or None."""
    if holds_only(value, _PLAIN_LEAVES):  # the usual targets ([2, 0, 1], a matrix of whole numbers): no walk
        return None
    return _unmatchable_walk(value)


def _unmatchable_walk(value: Any) -> str | None:
    """:func:`_unmatchable_item` by walking every item (the specification of its shortcut)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ANSWER_DEPTH:
            return f"is nested more than {MAX_ANSWER_DEPTH} levels deep, so it can never be matched"
        if type(item) in _PLAIN_LEAVES:  # text, a whole number, a boolean, null: matchable, nothing inside
            continue
        item = from_numpy(item)
        if isinstance(item, float) and not math.isfinite(item):
            return f"holds {shown(item)}, which matches nothing (not even itself)"
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
            return f"{what} answer must be {shape}, got {shown(value)}"
        problem = _unmatchable_item(value)
        return f"{what} answer {problem}" if problem else None

    return check


_TEXT_SCHEMA = {"type": "string", "minLength": 1}

BUILTIN_ANSWER_TYPES: tuple[AnswerTypeSpec, ...] = (
    AnswerTypeSpec(
        "integer",
        description="a whole number",
        check_value=_numeric_check(_integral, "an integer", "7"),
        json_schema={"type": "integer"},
        examples=(3,),
    ),
    AnswerTypeSpec(
        "number",
        description="a real number, compared exactly",
        check_value=_numeric_check(_finite_real, "a number", "3.5"),
        json_schema={"type": "number"},
        examples=(2.5,),
    ),
    AnswerTypeSpec(
        "string",
        reads_json_strings=False,
        description="text, stripped and case-folded",
        check_value=_text_check("a string"),
        json_schema=_TEXT_SCHEMA,
        examples=("red",),
    ),
    AnswerTypeSpec(
        "boolean",
        description="true or false (never equal to 1 or 0)",
        check_value=_check_boolean,
        json_schema={"type": "boolean"},
        examples=(True,),
    ),
    AnswerTypeSpec(
        "option_letter",
        description="a multiple-choice letter such as 'B'",
        check_value=_text_check("an option_letter"),
        json_schema=_TEXT_SCHEMA,
        examples=("B",),
    ),
    AnswerTypeSpec(
        "pi_expression",
        description="an expression in pi such as '12π'",
        check_value=_text_check("a pi_expression"),
        json_schema=_TEXT_SCHEMA,
        examples=("12π",),
    ),
    AnswerTypeSpec(
        "index_list",
        description="an ordered list of indices or labels",
        check_value=_collection_check("an index_list", (list, tuple), "a list of indices or labels such as [2, 0, 1]"),
        # Any item: validation takes a target such as [[1, 2], [3, 4]], and the schema must accept the one
        # answer that scores (items are compared as written; integers or strings are the usual ones).
        json_schema={"type": "array", "items": {"description": "an index or a label, compared as written"}},
        examples=([2, 0, 1],),
    ),
    AnswerTypeSpec(
        "matrix",
        description="nested lists (or mappings) of numbers",
        check_value=_collection_check(
            "a matrix", (list, tuple, Mapping), "nested lists (or mappings) of numbers such as [[1, 2], [3, 4]]"
        ),
        json_schema={"type": ["array", "object"]},
        examples=([[1, 2], [3, 4]],),
    ),
)


class BuiltinAnswerTypes:
    """The core's own plugin: registers the eight built-in answer types."""

    @hookimpl
    def trace_answer_types(self) -> Sequence[AnswerTypeSpec]:
        return BUILTIN_ANSWER_TYPES
