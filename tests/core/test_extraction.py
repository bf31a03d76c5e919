"""The response contract, docs/contracts.md §3: final block, recovery, atomic answers."""

from __future__ import annotations

from typing import Any

import pytest

import trace_tasks
from trace_tasks import evaluate_trace_response_format, extract_trace_prediction
from trace_tasks.reading import _extraction as extraction

from .helpers import score

FLAGS = ("format", "format_structure_ok", "format_json_ok", "format_schema_ok")


def flags(response: str, mode: str = "answer") -> tuple[float, ...]:
    result = score(response, trace_reward_mode=mode)
    return tuple(result[k] for k in FLAGS)


OK = (1.0, 1.0, 1.0, 1.0)
SCHEMA_FAIL = (0.0, 1.0, 1.0, 0.0)
JSON_FAIL = (0.0, 1.0, 0.0, 0.0)
NO_STRUCTURE = (0.0, 0.0, 0.0, 0.0)


# --- format: the response ends with the final object --------------------------


@pytest.mark.parametrize(
    "response",
    [
        '{"answer": 7}',
        '{"answer":7}',
        '  {"answer": 7}  \n\n',
        'Let me think. The count is 7.\n{"answer": 7}',
        '```json\n{"answer": 7}\n```',
        '```\n{"answer": 7}\n```',
        'Reasoning first.\n```json\n{"answer": 7}\n```\n',
    ],
)
def test_final_object_gives_full_format_in_answer_mode(response: str) -> None:
    assert flags(response) == OK


def test_answer_and_annotation_mode_needs_both_keys() -> None:
    assert flags('{"answer": 7, "annotation": [0, 0, 10, 10]}', "answer_and_annotation") == OK
    assert flags('{"answer": 7}', "answer_and_annotation") == SCHEMA_FAIL
    assert flags('{"annotation": [0, 0, 10, 10]}', "answer_and_annotation") == SCHEMA_FAIL


@pytest.mark.parametrize(
    ("response", "mode"),
    [
        ('{"answer": 7, "annotation": [0, 0, 10, 10]}', "answer"),  # extra key in answer mode
        ('{"answer": 7, "confidence": 0.9}', "answer"),
        ('{"answer": 7, "annotation": [0, 0, 10, 10], "why": "x"}', "answer_and_annotation"),
        ('{"result": 7}', "answer"),  # missing key
        ("{}", "answer"),
    ],
)
def test_extra_or_missing_keys_fail_the_schema(response: str, mode: str) -> None:
    assert flags(response, mode) == SCHEMA_FAIL


@pytest.mark.parametrize("response", ["```json\n[7]\n```", "```json\n7\n```", '```json\n"answer"\n```'])
def test_non_object_final_value_fails_json(response: str) -> None:
    assert flags(response) == JSON_FAIL


@pytest.mark.parametrize(
    "response",
    ['{"answer": 7} That is my answer.', '{"answer": 7}\n```', "7", "", "   ", '[{"answer": 7}]', "<answer>7</answer>"],
)
def test_text_after_the_object_or_no_object_fails_structure(response: str) -> None:
    assert flags(response) == NO_STRUCTURE


def test_recovered_answer_still_scores_with_zero_format() -> None:
    result = score('{"answer": 7} That is my answer.', trace_reward_mode="answer")
    assert result["format"] == 0.0
    assert result["answer_reward"] == 1.0
    assert result["overall"] == 1.0  # format_weight defaults to 0.0: format is only logged


def test_last_fenced_block_is_the_final_block() -> None:
    response = '```json\n{"answer": 3}\n```\nOn reflection:\n```json\n{"answer": 7}\n```'
    assert flags(response) == OK
    assert score(response, trace_reward_mode="answer")["answer_reward"] == 1.0
    fmt = evaluate_trace_response_format(response, trace_reward_mode="answer")
    assert fmt["answer_block"] == '{"answer": 7}'


def test_fenced_block_after_a_bare_object_is_final() -> None:
    response = '{"answer": 3}\n```json\n{"answer": 7}\n```'
    assert flags(response) == OK
    assert score(response, trace_reward_mode="answer")["answer_reward"] == 1.0


@pytest.mark.parametrize("tag", ["json", "JSON", "Json", "jSoN"])
def test_json_tag_is_dropped_in_any_case(tag: str) -> None:
    assert flags(f'```{tag}\n{{"answer": 7}}\n```') == OK
    assert flags(f'```{tag} {{"answer": 7}}```') == OK


@pytest.mark.parametrize("tag", ["python", "jsonc", "json5", "js", "text"])
def test_other_tags_stay_in_the_content_and_fail_json(tag: str) -> None:
    response = f'```{tag}\n{{"answer": 7}}\n```'
    assert flags(response) == JSON_FAIL
    assert evaluate_trace_response_format(response, trace_reward_mode="answer")["answer_block"].startswith(tag)


def test_empty_final_fence_has_no_structure() -> None:
    assert flags("```json\n```") == NO_STRUCTURE
    assert flags("``````") == NO_STRUCTURE


@pytest.mark.parametrize(
    "prose",
    [
        'He said "hello and never closed the quote. ',
        "An unclosed brace { in the reasoning. ",
        'Mixed: {"draft": "x", "open ',
        'Closing braces }} and a quote " and a brace {',
    ],
)
def test_text_before_the_final_object_never_hides_it(prose: str) -> None:
    response = prose + '{"answer": 7}'
    assert flags(response) == OK
    assert score(response, trace_reward_mode="answer")["answer_reward"] == 1.0


def test_braces_inside_strings_do_not_count() -> None:
    response = 'Note {\n{"answer": "}{ 7 }{"}'
    fmt = evaluate_trace_response_format(response, trace_reward_mode="answer")
    assert fmt["answer_block"] == '{"answer": "}{ 7 }{"}'
    assert fmt["schema_ok"] is True


def test_escaped_quotes_inside_strings_are_handled() -> None:
    response = 'prose {"answer": "say \\"}\\" now"}'
    fmt = evaluate_trace_response_format(response, trace_reward_mode="answer")
    assert fmt["payload"] == {"answer": 'say "}" now'}


def test_python_literal_mapping_is_read_for_compatibility() -> None:
    assert flags("{'answer': 7}") == OK
    result = score("{'answer': (1, 2)}", answer=[1, 2], answer_type="index_list", trace_reward_mode="answer")
    assert result["answer_reward"] == 1.0


def test_python_literal_reader_never_evaluates_code() -> None:
    response = "{'answer': __import__('os').getcwd()}"
    assert flags(response) == JSON_FAIL
    result = score(response, trace_reward_mode="answer")
    assert result["answer_reward"] == 0.0


@pytest.mark.parametrize(
    "response",
    [
        "{'answer': " + "(" * 5000 + ")" * 5000 + "}",
        "{'answer': 1" + "0" * 6000 + "}",
        '{"answer": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "{'answer': " + "-" * 50_000 + "1}",
    ],
)
def test_hostile_literals_are_parse_failures_not_exceptions(response: str) -> None:
    result = score(response, trace_reward_mode="answer")
    assert result["answer_reward"] == 0.0


# --- recovery order ----------------------------------------------------------


def recovered(response: str) -> Any:
    answer, _annotation, found = extract_trace_prediction(response)
    assert found
    return answer


def test_recovery_prefers_the_final_block() -> None:
    assert recovered('{"answer": 3} then {"answer": 7}') == 7


def test_whole_response_is_the_first_recovery_candidate() -> None:
    # The backward scan of the final block stops at the quoted "{" (single quotes are not
    # JSON strings) and the forward scan finds no closed object: only the whole response
    # parses, as a Python literal.
    response = "{'answer': 7, 'note': '{'}"
    assert evaluate_trace_response_format(response, trace_reward_mode="answer")["json_ok"] is False
    assert recovered(response) == 7


def test_top_level_objects_are_tried_last_to_first() -> None:
    assert recovered('{"answer": 3} and {"answer": 7} and more text') == 7


def test_objects_without_prediction_keys_are_skipped() -> None:
    assert recovered('{"answer": 3} and {"other": 1} trailing') == 3


def test_nested_objects_are_not_candidates() -> None:
    assert extract_trace_prediction('{"wrapper": {"answer": 7}} trailing') == (None, None, False)
    result = score('{"wrapper": {"answer": 7}} trailing', trace_reward_mode="answer")
    assert result["json_found"] == 0.0
    assert result["answer_reward"] == 0.0


def test_nested_answer_key_inside_a_top_level_answer_is_a_value() -> None:
    assert recovered('{"answer": {"answer": 3}} x') == {"answer": 3}


def test_top_level_objects_come_before_fenced_blocks() -> None:
    # The fenced literal is not a closed top-level object for the brace scan.
    assert recovered("{\"answer\": 3} then ```json\n{'answer': 7, 'n': '{'}\n``` end") == 3


def test_fenced_blocks_are_tried_last_to_first() -> None:
    response = 'note: "unterminated ```json\n{"answer": 3}\n``` and ```json\n{"answer": 7}\n``` end'
    assert recovered(response) == 7


def test_fenced_blocks_come_before_answer_tags() -> None:
    response = "```json\n{'answer': 3, 'n': '{'}\n``` <answer>{'answer': 7, 'n': '{'}</answer> done"
    assert recovered(response) == 3


def test_answer_tag_contents_are_the_last_candidates() -> None:
    assert recovered("<answer>{'answer': 7, 'n': '{'}</answer> done") == 7
    assert recovered("{\"answer\": 3} <answer>{'answer': 7, 'n': '{'}</answer> done") == 3


def test_text_before_an_object_can_hide_it_from_recovery() -> None:
    # Unlike the final block, recovery scans forward: an unclosed quote swallows the object.
    assert extract_trace_prediction('a stray " quote {"answer": 7} trailing') == (None, None, False)


def test_annotation_only_mapping_is_recovered() -> None:
    assert extract_trace_prediction('{"annotation": [1, 2, 3, 4]} done') == (None, [1, 2, 3, 4], True)


# --- atomic answers ------------------------------------------------------------


@pytest.mark.parametrize("response", ["7", " 7 \n", "7.0"])
def test_atomic_answer_is_the_whole_stripped_response(response: str) -> None:
    result = score(response, trace_reward_mode="answer")
    assert result["answer_reward"] == 1.0
    assert result["json_found"] == 0.0
    assert result["format"] == 0.0


def test_atomic_string_answer() -> None:
    assert score("  Blue\n", answer="blue", answer_type="string", trace_reward_mode="answer")["answer_reward"] == 1.0


def test_prose_around_an_atomic_answer_does_not_match() -> None:
    assert score("The answer is 7", trace_reward_mode="answer")["answer_reward"] == 0.0


def test_mapping_without_answer_makes_the_whole_response_the_answer() -> None:
    response = '{"annotation": [0, 0, 10, 10]}'
    assert score(response, trace_reward_mode="answer")["answer_reward"] == 0.0
    as_text = score(response, answer=response, answer_type="string", trace_reward_mode="answer")
    assert as_text["answer_reward"] == 1.0
    assert as_text["json_found"] == 1.0


def test_null_answer_makes_the_whole_response_the_answer() -> None:
    response = '{"answer": null}'
    assert score(response, answer=None, trace_reward_mode="answer")["answer_reward"] == 0.0
    as_text = score(response, answer=response, answer_type="string", trace_reward_mode="answer")
    assert as_text["answer_reward"] == 1.0


def test_last_answer_tag_is_the_atomic_answer_when_no_mapping() -> None:
    assert score("<answer>3</answer> no, <answer> 7 </answer>", trace_reward_mode="answer")["answer_reward"] == 1.0
    assert score("<answer>7</answer> no, <answer>3</answer>", trace_reward_mode="answer")["answer_reward"] == 0.0


def test_answer_tag_is_not_used_when_a_mapping_was_found() -> None:
    response = '<answer>7</answer> {"annotation": [0, 0, 10, 10]}'
    assert score(response, trace_reward_mode="answer")["answer_reward"] == 0.0


# --- helper return shapes -------------------------------------------------------


def test_evaluate_trace_response_format_shape() -> None:
    out = evaluate_trace_response_format(
        '<think>count them</think>\n```json\n{"answer": 1, "annotation": [0, 0, 10, 10]}\n```',
        trace_reward_mode="annotation",
    )
    assert out == {
        "format": 1.0,
        "structure_ok": True,
        "json_ok": True,
        "schema_ok": True,
        "think_text": "count them",
        "answer_block": '{"answer": 1, "annotation": [0, 0, 10, 10]}',
        "payload": {"answer": 1, "annotation": [0, 0, 10, 10]},
    }
    assert list(out) == ["format", "structure_ok", "json_ok", "schema_ok", "think_text", "answer_block", "payload"]


def test_evaluate_trace_response_format_default_mode_is_answer_and_annotation() -> None:
    assert evaluate_trace_response_format('{"answer": 1}')["schema_ok"] is False
    assert evaluate_trace_response_format('{"answer": 1}', trace_reward_mode=None)["schema_ok"] is True


def test_evaluate_trace_response_format_without_a_block() -> None:
    assert evaluate_trace_response_format("no object here") == {
        "format": 0.0,
        "structure_ok": False,
        "json_ok": False,
        "schema_ok": False,
        "think_text": None,
        "answer_block": None,
        "payload": None,
    }


def test_evaluate_trace_response_format_validates_its_arguments() -> None:
    with pytest.raises(ValueError):
        evaluate_trace_response_format('{"answer": 1}', trace_reward_mode="bogus")
    with pytest.raises(TypeError):
        evaluate_trace_response_format(None)  # type: ignore[arg-type]


def test_extract_trace_prediction_shape() -> None:
    assert extract_trace_prediction('{"answer": 1, "annotation": [0, 0, 10, 10]}') == (1, [0, 0, 10, 10], True)
    assert extract_trace_prediction('{"answer": 1}') == (1, None, True)
    assert extract_trace_prediction("7") == (None, None, False)
    assert extract_trace_prediction("") == (None, None, False)
    with pytest.raises(TypeError):
        extract_trace_prediction(7)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "scans"),
    [
        ("{}" * 20_000 + '"answer"}', {"balanced", "top_level"}),
        ("{x[}" * 20_000 + '"answer"}', {"balanced", "top_level"}),
        ("\\{}" * 20_000 + " x", {"top_level"}),
        ('"' * 40_000 + " answer", {"top_level"}),
        ('"{' * 20_000 + " answer", {"top_level"}),
        ("The answer is below. " * 2_000 + '{"answer": 7, "annotation": [0, 0, 10, 10]}', set()),
    ],
    ids=["brace_pairs_quoted_answer", "brace_x_bracket", "backslash_braces", "quotes_answer", "quote_brace_answer", "prose"],
)
def test_floods_move_to_the_numpy_scans(text: str, scans: set[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17 item 4: these floods cost a Python step per token (about a second per MiB).
    # Past extraction._PYTHON_STEPS a scan starts over in numpy; an ordinary response never does.
    used: set[str] = set()

    def spy(name: str, fn: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            used.add(name)
            return fn(*args)

        return wrapper

    monkeypatch.setattr(extraction, "_balanced_object_start_np", spy("balanced", extraction._balanced_object_start_np))
    monkeypatch.setattr(extraction, "_top_level_spans_np", spy("top_level", extraction._top_level_spans_np))
    python_result = extraction.extract(text, extraction.ANSWER_AND_ANNOTATION_KEYS)
    # A compiled build calls the numpy scans directly, past the spies; it still checks
    # below that the Python steps and the numpy scans read every flood alike.
    if trace_tasks.__build__ == "pure":
        assert used == scans
    monkeypatch.setattr(extraction, "_PYTHON_STEPS", 10**9)
    slow = extraction.extract(text, extraction.ANSWER_AND_ANNOTATION_KEYS)
    assert (python_result.format, python_result.payload, python_result.source) == (slow.format, slow.payload, slow.source)
