"""``answer_exact_match_v0``: every rule of docs/contracts.md §4."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_tasks import get_registry
from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.scoring import _answers as answers

from .helpers import answer_matches, score


def _answers_match(prediction: Any, target: Any, *, reads_json_strings: bool = True) -> bool:
    """``answer_exact_match_v0`` of two raw values, as the pipeline computes it (the target prepared first)."""
    prepared = answers.answer_target(target, reads_json_strings=reads_json_strings)
    return answers.matches_answer_target(prediction, prepared, reads_json_strings=reads_json_strings)


def literal_matches(response: str, target: Any, answer_type: str = "index_list") -> bool:
    """Whether a (possibly Python-literal) response earns the answer reward."""
    result = score(response, answer=target, answer_type=answer_type, trace_reward_mode="answer")
    return result["answer_reward"] == 1.0


def test_registered_answer_types() -> None:
    assert set(get_registry().answer_types) >= {
        "integer",
        "number",
        "string",
        "boolean",
        "option_letter",
        "pi_expression",
        "index_list",
        "matrix",
    }


# --- strings -------------------------------------------------------------------


@pytest.mark.parametrize("prediction", ['"blue"', '" Blue "', '"BLUE\\n"', '"\\tbLuE"'])
def test_strings_are_stripped_and_case_insensitive(prediction: str) -> None:
    assert answer_matches(prediction, "blue", "string")
    assert answer_matches(prediction, "  BLUE ", "option_letter")


def test_strings_are_case_folded() -> None:
    assert answer_matches('"STRASSE"', "straße", "string")


def test_inner_whitespace_still_matters() -> None:
    assert not answer_matches('"light blue"', "lightblue", "string")


# --- numbers and booleans ------------------------------------------------------------


@pytest.mark.parametrize(("prediction", "target"), [("7.0", 7), ("7", 7.0), ("-0.0", 0), ("1e2", 100), ("2.50", 2.5)])
def test_integral_floats_equal_ints(prediction: str, target: Any) -> None:
    assert answer_matches(prediction, target, "number")


def test_non_integral_floats_do_not_equal_ints() -> None:
    assert not answer_matches("7.5", 7, "number")


@pytest.mark.parametrize(("prediction", "target"), [("true", 1), ("false", 0), ("1", True), ("0", False), ("[true]", [1])])
def test_booleans_are_not_numbers(prediction: str, target: Any) -> None:
    assert not answer_matches(prediction, target, "integer")
    assert not answer_matches(prediction, target, "boolean")


def test_booleans_match_booleans() -> None:
    assert answer_matches("true", True, "boolean")
    assert answer_matches('"true"', True, "boolean")
    assert not answer_matches("true", False, "boolean")


@pytest.mark.parametrize("prediction", ["NaN", "Infinity", "-Infinity", '"NaN"', "[NaN]"])
@pytest.mark.parametrize("target", [math.nan, math.inf, -math.inf, None, [math.nan]])
def test_non_finite_numbers_never_match(prediction: str, target: Any) -> None:
    assert not answer_matches(prediction, target, "number")


def test_non_finite_target_never_matches_itself() -> None:
    assert not literal_matches("{'answer': float('nan')}", math.nan, "number")
    assert not answer_matches("1e999", math.inf, "number")


# --- JSON-literal strings --------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "target", "answer_type"),
    [
        ('"7"', 7, "integer"),
        ('" 7 "', 7, "integer"),
        ('"2.5"', 2.5, "number"),
        ('"true"', True, "boolean"),
        ('"[1, 2, 3]"', [1, 2, 3], "index_list"),
        ('"[[1, 0], [0, 1]]"', [[1, 0], [0, 1]], "matrix"),
        ('"{\\"a\\": 1}"', {"a": 1}, "matrix"),
    ],
)
def test_json_literal_strings_are_read_for_non_string_types(prediction: str, target: Any, answer_type: str) -> None:
    assert answer_matches(prediction, target, answer_type)


def test_target_strings_are_read_as_literals_too() -> None:
    assert answer_matches("7", "7", "integer")


def test_null_string_stays_a_string() -> None:
    assert not answer_matches('"null"', None, "integer")
    assert answer_matches('"null"', "null", "integer")
    assert answer_matches('"NULL"', "null", "string")


@pytest.mark.parametrize(("prediction", "target"), [('"0x10"', 16), ('"(7)"', 7), ('"3+0j"', 3), ('"7,"', 7), ('"1_000"', 1000)])
def test_python_literal_strings_are_not_read(prediction: str, target: Any) -> None:
    assert not answer_matches(prediction, target, "number")


def test_string_type_is_compared_as_written() -> None:
    assert answer_matches('"7"', "7", "string")
    assert not answer_matches("7", "7", "string")  # the integer 7 is not the string "7"
    assert not answer_matches('"[1, 2]"', "[1,2]", "string")
    assert answer_matches('"[1, 2]"', [1, 2], "index_list")


# --- containers ---------------------------------------------------------------------------


def test_sequence_order_is_significant() -> None:
    assert answer_matches("[1, 2, 3]", [1, 2, 3], "index_list")
    assert not answer_matches("[3, 2, 1]", [1, 2, 3], "index_list")
    assert not answer_matches("[1, 2]", [1, 2, 3], "index_list")


def test_tuples_are_sequences() -> None:
    assert literal_matches("{'answer': (1, 2)}", [1, 2])
    assert not literal_matches("{'answer': (2, 1)}", [1, 2])


def test_items_are_normalized_inside_sequences() -> None:
    assert answer_matches('[" A ", 2.0, [3.0]]', ["a", 2, [3]], "index_list")


def test_mapping_order_is_ignored_and_keys_normalized() -> None:
    assert answer_matches('{"b": 2, "a": 1}', {"a": 1, "b": 2}, "matrix")
    assert answer_matches('{" A ": 1, "b": 2.0}', {"a": 1, "B": 2}, "matrix")
    assert not answer_matches('{"a": 1}', {"a": 1, "b": 2}, "matrix")


def test_colliding_keys_later_one_wins() -> None:
    assert answer_matches('{"a": 1, " A": 2}', {"a": 2}, "matrix")
    assert not answer_matches('{"a": 1, " A": 2}', {"a": 1}, "matrix")


def test_non_string_keys_normalize_like_values() -> None:
    assert literal_matches("{'answer': {1.0: 'X'}}", {"1": "x"}, "matrix")
    assert literal_matches("{'answer': {1: 'x'}}", {1.0: "X"}, "matrix")
    assert not literal_matches("{'answer': {True: 'x'}}", {1: "x"}, "matrix")


def test_set_order_is_ignored() -> None:
    assert literal_matches("{'answer': {3, 1, 2}}", {1, 2, 3})
    assert not literal_matches("{'answer': {1, 2}}", {1, 2, 3})


def test_set_compares_as_its_items_in_sorted_order() -> None:
    assert literal_matches("{'answer': {3, 1, 2}}", [1, 2, 3])
    assert not literal_matches("{'answer': {3, 1, 2}}", [3, 1, 2])


def test_unusable_answer_gt_clears_answer_parse_ok() -> None:
    from trace_tasks import score_trace_response

    from .helpers import contract

    for answer_gt in (None, 7, {"type": "integer"}, [7]):
        result = score_trace_response(
            response='{"answer": 7}',
            answer_gt=answer_gt,
            annotation_gt={"type": "bbox", "value": [0, 0, 1, 1]},
            reward_contract=contract(),
            trace_reward_mode="answer",
        )
        assert (result["answer_parse_ok"], result["answer_reward"], result["accuracy"]) == (0.0, 0.0, 0.0)
    assert score('{"answer": 3}', trace_reward_mode="answer")["answer_parse_ok"] == 1.0


def test_answer_reward_and_accuracy_are_binary_and_equal() -> None:
    for response in ('{"answer": 7}', '{"answer": 8}', "7", "x"):
        result = score(response, trace_reward_mode="answer")
        assert result["answer_reward"] in (0.0, 1.0)
        assert result["accuracy"] == result["answer_reward"]


# --- deep nesting ---------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [300, 1000, 5000])
def test_deep_answers_are_non_matches_not_crashes(depth: int) -> None:
    text = "[" * depth + "1" + "]" * depth
    assert not answer_matches(text, nested(depth), "matrix")
    assert not answer_matches("1", nested(depth), "matrix")
    assert not answer_matches(json.dumps(nested(10)), nested(depth), "matrix")


def test_moderate_nesting_still_matches() -> None:
    assert answer_matches(json.dumps(nested(50)), nested(50), "matrix")


# --- properties ---------------------------------------------------------------------------------

KEY = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
SCALAR = st.one_of(st.integers(-(10**6), 10**6), st.text(alphabet="xyz ", max_size=4).map(lambda s: "v" + s.strip()))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(KEY, SCALAR, min_size=1, max_size=8), st.data())
def test_mapping_key_order_never_matters(mapping: dict[str, Any], data: st.DataObject) -> None:
    items = data.draw(st.permutations(list(mapping.items())))
    assert answer_matches(json.dumps(dict(items)), mapping, "matrix")


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(-1000, 1000), min_size=1, max_size=10), st.data())
def test_set_item_order_never_matters(items: set[int], data: st.DataObject) -> None:
    written = data.draw(st.permutations(sorted(items)))
    response = "{'answer': {" + ", ".join(map(str, written)) + "}}"
    assert literal_matches(response, set(items))
    assert literal_matches(response, sorted(items))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=2, max_size=10, unique=True), st.data())
def test_sequence_order_always_matters(items: list[int], data: st.DataObject) -> None:
    permuted = data.draw(st.permutations(items).filter(lambda p: list(p) != items))
    assert answer_matches(json.dumps(items), items, "index_list")
    assert not answer_matches(json.dumps(list(permuted)), items, "index_list")


WHITESPACE = st.text(alphabet=" \t\n\r\u00a0\u2003", max_size=3)
TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("äÖéß"), max_size=12)


@settings(max_examples=100, deadline=None)
@given(TEXT, WHITESPACE, WHITESPACE, st.sampled_from([str.upper, str.lower, str.swapcase, str.title]))
def test_surrounding_whitespace_and_case_never_matter(text: str, before: str, after: str, case: Any) -> None:
    prediction = before + case(text) + after
    assert answer_matches(json.dumps(prediction), text, "string")


@pytest.mark.parametrize(
    ("value", "reads_json", "shown"),
    [
        (" Queen ", True, "'queen'"),
        ("7", True, "7"),
        ("7", False, "'7'"),
        (True, True, "True"),
        ([1, {"B": 2.0}], True, "[1, {'b': 2}]"),
        ({3, 1}, True, "[1, 3]"),
        (float("nan"), True, "<no match>"),
    ],
)
def test_canonical_text_shows_what_the_matcher_compares(value: object, reads_json: bool, shown: str) -> None:
    """The public helper reports use (``trace-tasks explain``): the canonical form as plain text."""
    from trace_tasks.scoring import canonical_text

    assert canonical_text(value, reads_json_strings=reads_json) == shown


# --- the early-exit comparison (issue 17 item 3) -------------------------------------------------

_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, -0.0, float("nan")]),
    st.sampled_from(["a", "A", " a", "b", "7", "ß", "SS"]),
)  # fmt: skip
_value = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["a", "A", " a", "b", 1, 1.0]), inner, max_size=3),
    ),
    max_leaves=12,
)


def _old_match(prediction: Any, target: Any) -> bool:
    # The comparison before the early exit: both canonical forms built in full.
    try:
        return bool(answers.canonical(prediction) == answers.canonical(target))
    except (answers._TooDeep, RecursionError, MemoryError, TypeError, ValueError):
        return False


@settings(max_examples=500, deadline=None)
@given(prediction=_value, target=_value)
def test_early_exit_comparison_equals_the_full_canonical_comparison(prediction: Any, target: Any) -> None:
    expected = _old_match(prediction, target)
    assert _answers_match(prediction, target, reads_json_strings=False) is expected
    prepared = answers.answer_target(target, reads_json_strings=False)
    assert answers.matches_answer_target(prediction, prepared, reads_json_strings=False) is expected
    assert _answers_match(target, target, reads_json_strings=False) is _old_match(target, target)


def test_overwritten_values_still_count_for_depth() -> None:
    # {"a": <too deep>, "A": 1} normalizes to {"a": 1}, but canonical refuses the deep value first.
    deep: Any = 1
    for _ in range(MAX_ANSWER_DEPTH + 2):
        deep = [deep]
    assert not _answers_match({"a": deep, "A": 1}, {"a": 1})
    assert _answers_match({"a": [2], "A": 1}, {"a": 1})


def test_a_long_prediction_of_the_wrong_length_is_not_built() -> None:
    # A megabyte-long list against a short target differs on its length alone.
    assert not _answers_match(list(range(300_000)), [1, 2])
    assert not _answers_match({str(i): i for i in range(100_000)}, {"0": 0})
