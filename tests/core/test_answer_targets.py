"""Validation checks the answer target the scorer will compare, not the value as written (issue 24, finding 1).

The scorer reads a JSON-literal string first (for every type but ``string``)
and compares canonical forms (strings stripped and case-folded, mapping keys
normalised, later key wins). A target that passes its type's check as written
can still score dishonestly once so read: ``'""'`` is the empty string (the
empty response earns the answer reward), ``{"A": 1, "a": 2}`` is ``{"a": 2}``.
Each case here shows the dishonest reward first, then the refusal, at its path,
with what to write instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from trace_tasks import InstanceError, compile_instance, instance_problems, resolve_reward_contract, score_trace_response
from trace_tasks.data import _validation
from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.plugins import AnswerTypeSpec, hookimpl, register_plugin, reset_registry, unregister_plugin

BOX = [0, 0, 10, 10]


def instance(answer_type: str, value: Any) -> dict[str, Any]:
    return {
        "id": "t",
        "answer_gt": {"type": answer_type, "value": value},
        "annotation_gt": {"type": "bbox", "value": BOX},
        "reward_contract": resolve_reward_contract(answer_type=answer_type, annotation_type="bbox").to_dict(),
    }


def answer_reward(data: dict[str, Any], response: str) -> float:
    """What the lenient scorer gives ``response`` against the instance (no validation)."""
    fields = {k: data[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    return score_trace_response(response=response, **fields)["answer_reward"]


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in instance_problems(data)]


def the_problem(data: dict[str, Any]) -> tuple[str, str]:
    found = problems(data)
    assert len(found) == 1, found
    with pytest.raises(InstanceError):
        compile_instance(data)
    return found[0]


# --- a JSON-literal string is read first ------------------------------------------------------


@pytest.mark.parametrize("answer_type", ["option_letter", "pi_expression"])
@pytest.mark.parametrize("value", ['""', ' "" ', '"   "', '"\\t"'])
def test_a_json_empty_string_target_is_refused(answer_type: str, value: str) -> None:
    data = instance(answer_type, value)
    assert answer_reward(data, "") == 1.0  # what the scorer does with it: nothing earns the reward
    assert answer_reward(data, '{"answer": "", "annotation": [0, 0, 10, 10]}') == 1.0
    path, message = the_problem(data)
    assert path == "$.answer_gt.value"
    assert f"{value!r} is a JSON literal, and the scorer reads it as" in message
    assert f" {answer_type} answer is empty" in message
    assert "write the expected text" in message and "without JSON quotes" in message


@pytest.mark.parametrize(
    ("value", "read_as", "kind"),
    [("7", "7", "integer"), ("true", "true", "boolean"), ("[1, 2]", "[1, 2]", "index_list"), ('{"a": 1}', "{'a': 1}", "matrix")],
)
def test_a_text_target_that_reads_as_another_value_is_refused(value: str, read_as: str, kind: str) -> None:
    data = instance("option_letter", value)
    path, message = the_problem(data)
    assert path == "$.answer_gt.value"
    assert f"the scorer reads it as {read_as} before comparing" in message
    assert "an option_letter answer must be a non-empty string" in message
    assert "use the answer type 'string', which never reads JSON" in message
    assert f"use the answer type {kind!r}" in message


def test_true_read_as_json_loses_the_case_folding_a_text_target_promises() -> None:
    # Why 'true' is refused: it is the boolean, so the text "True" a model writes does not match it.
    data = instance("option_letter", "true")
    assert answer_reward(data, '{"answer": "true", "annotation": [0, 0, 10, 10]}') == 1.0
    assert answer_reward(data, '{"answer": "True", "annotation": [0, 0, 10, 10]}') == 0.0


@pytest.mark.parametrize(
    ("answer_type", "value"),
    [
        ("option_letter", "B"),
        ("option_letter", '"B"'),  # reads as B: honest
        ("option_letter", "null"),  # stays the text "null"
        ("pi_expression", "12π"),
        ("integer", "7"),
        ("number", "3.5"),
        ("string", '""'),  # the string type never reads JSON: the two characters "" are the target
        ("matrix", {"A": 1, "b": 2}),
        ("matrix", [[1, 2], [3, 4]]),
        ("matrix", [{"a": 1}, {"A": 1}]),  # the same key in two mappings is no collision
        ("index_list", ["A", "a"]),  # list items are not keys
        ("index_list", []),
    ],
)
def test_honest_targets_stay_valid(answer_type: str, value: Any) -> None:
    assert problems(instance(answer_type, value)) == []


# --- mapping keys normalised by the scorer ------------------------------------------------------


def test_colliding_matrix_keys_are_refused() -> None:
    data = instance("matrix", {"A": 1, "a": 2})
    # What the scorer does with it: the first value is lost, either spelling of the last one matches.
    assert answer_reward(data, '{"answer": {"a": 2}, "annotation": [0, 0, 10, 10]}') == 1.0
    assert answer_reward(data, '{"answer": {"A": 2}, "annotation": [0, 0, 10, 10]}') == 1.0
    assert answer_reward(data, '{"answer": {"A": 1, "a": 2}, "annotation": [0, 0, 10, 10]}') == 1.0
    path, message = the_problem(data)
    assert path == "$.answer_gt.value"
    assert message.startswith("keys 'A', 'a' are one key once normalised (stripped and case-folded")
    assert "only the last, 'a': 2, is compared" in message
    assert "give each key a name that stays distinct after stripping and case-folding" in message


@pytest.mark.parametrize(
    ("value", "path", "keys"),
    [
        ([[1, 2], {"row": {" K": 1, "k": 2}}], "$.answer_gt.value[1]['row']", "' K', 'k'"),
        ({"outer": [{"x": 1}, {"X ": 1, "x": 1}]}, "$.answer_gt.value['outer'][1]", "'X ', 'x'"),
        ({"Straße": 1, "STRASSE": 2}, "$.answer_gt.value", "'Straße', 'STRASSE'"),  # case-folded, not lowered
        ({1: 5, "1": 6}, "$.answer_gt.value", "1, '1'"),  # a ground truth read from Python: keys normalised too
        ({(1, 2): 5, (1, 3): 6, "(1, 2)x": 0}, None, None),  # distinct once normalised: nothing to refuse
    ],
)
def test_colliding_keys_at_any_depth_are_refused_at_their_path(value: Any, path: str | None, keys: str | None) -> None:
    found = problems(instance("matrix", value))
    if path is None:
        assert found == []
        return
    assert len(found) == 1, found
    assert found[0][0] == path
    assert found[0][1].startswith(f"keys {keys} are one key once normalised")


def test_colliding_keys_inside_a_json_string_name_the_place_in_the_message() -> None:
    class _Loose:
        @hookimpl
        def trace_answer_types(self) -> Sequence[AnswerTypeSpec]:
            return [AnswerTypeSpec("test_loose_answer")]

    with _registered(_Loose(), "test-loose"):
        data = instance("test_loose_answer", '[{"a": {"Q": 1, "q": 2}}]')
        path, message = the_problem(data)
    assert path == "$.answer_gt.value"
    assert message.startswith("keys 'Q', 'q' (at [0]['a'] of the JSON it holds) are one key once normalised")


def test_a_hostile_number_of_collisions_gives_a_bounded_list() -> None:
    value = {**{f"k{i}": i for i in range(50)}, **{f"K{i}": i for i in range(50)}}
    shown = _validation.MAX_KEY_COLLISIONS_SHOWN
    found = problems(instance("matrix", value))
    assert len(found) == shown + 1
    assert found[-1] == (
        "$.answer_gt.value",
        f"and {50 - shown} more groups of keys that are the same once normalised (stripped and case-folded)",
    )


# --- a family's answer type without a value check: the scorer's reading still decides ------------


class _Unchecked:
    """An answer type with no ``check_value``: only the scorer's own reading can refuse its targets."""

    @hookimpl
    def trace_answer_types(self) -> Sequence[AnswerTypeSpec]:
        return [AnswerTypeSpec("test_unchecked_answer")]


class _registered:
    def __init__(self, plugin: object, name: str) -> None:
        self.plugin, self.name = plugin, name

    def __enter__(self) -> None:
        register_plugin(self.plugin, self.name)
        reset_registry()

    def __exit__(self, *exc: object) -> None:
        unregister_plugin(self.name)
        reset_registry()


@pytest.fixture
def unchecked() -> Iterator[str]:
    with _registered(_Unchecked(), "test-unchecked"):
        yield "test_unchecked_answer"


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "is matched by an empty response: the scorer compares ''"),
        ("   ", "is matched by an empty response"),
        ('""', "is matched by an empty response"),  # the JSON literal, read first
        (math.nan, "can never be matched: after the scorer's normalisation it is not equal even to itself"),
        ([1, [math.inf]], "can never be matched: after the scorer's normalisation it is not equal even to itself"),
        ({"a": object()}, "can never be matched: after the scorer's normalisation it is not equal even to itself"),
        (
            _deep(MAX_ANSWER_DEPTH + 5),
            f"can never be matched: the scorer cannot normalise it (nested more than {MAX_ANSWER_DEPTH} levels",
        ),
        ({"A": 1, "a": 1}, "keys 'A', 'a' are one key once normalised"),
    ],
)
def test_a_type_without_a_check_is_held_to_what_the_scorer_compares(unchecked: str, value: Any, message: str) -> None:
    data = instance(unchecked, value)
    path, found = the_problem(data)
    assert path == "$.answer_gt.value"
    assert found.startswith(message), found


def test_a_plain_target_of_a_type_without_a_check_is_valid(unchecked: str) -> None:
    assert problems(instance(unchecked, "anything")) == []
    assert problems(instance(unchecked, {"a": [1, 2], "b": None})) == []
