"""``score_instance`` and whole instance records in ``score_trace_batch`` (docs/contracts.md §12.3, §12.4).

A record as the data tools read it (``id``, ``image_size``, ``metadata``,
``prompt``, ``image`` beside the ground truth) is validated strictly and
scored exactly as ``score_trace_response`` scores its instance fields; no
error names an internal class or signature.
"""

from __future__ import annotations

from typing import Any

import pytest

import trace_tasks
from trace_tasks import InstanceError, OptionError, ResponseTypeError, score_instance, score_trace_batch, score_trace_response

from .helpers import contract

RECORD: dict[str, Any] = {
    "id": "chart-17",
    "answer_gt": {"type": "integer", "value": 3},
    "annotation_gt": {"type": "point_set", "value": [[100, 50], [300, 220], [510, 400]]},
    "reward_contract": contract("integer", "point_set"),
    "image_size": [640, 480],
    "metadata": {"task": "count the dots", "seed": 7},
    "prompt": "How many dots are there? Mark them.",
    "image": "images/chart-17.png",
}
FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")
RESPONSES = [
    '{"answer": 3, "annotation": [[101, 52], [296, 221], [520, 390]]}',
    '{"answer": 3, "annotation": [[101, 52]]}',
    '{"answer": 2}',
    "3",
    "",
    "<think>3</think>3",
]


def lenient(response: str, **options: Any) -> dict[str, float]:
    return score_trace_response(response=response, **{k: RECORD[k] for k in FIELDS}, **options)


def test_it_is_exported_beside_score_trace_response() -> None:
    assert trace_tasks.score_instance is score_instance
    assert "score_instance" in trace_tasks.__all__


@pytest.mark.parametrize("response", RESPONSES)
def test_a_whole_record_scores_exactly_as_its_instance_fields(response: str) -> None:
    assert score_instance(RECORD, response) == lenient(response)
    options = {"trace_reward_mode": "answer", "format_weight": 0.1, "trace_recovery": "outside_think"}
    assert score_instance(RECORD, response, **options) == lenient(response, **options)
    # The size sources of the scorer pass through too.
    assert score_instance(RECORD, response, point_half_life_px=50) == lenient(response, point_half_life_px=50)


def test_the_issue_call_that_raised_a_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'id'"):
        score_trace_response(response=RESPONSES[0], **RECORD)  # the lenient scorer takes the instance fields only
    assert score_instance(RECORD, RESPONSES[0])["overall"] == lenient(RESPONSES[0])["overall"]


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"id": 17}, "$.id", "expected a string"),
        ({"annotation_gt": {"type": "point_set", "value": [[1, "x"]]}}, "$.annotation_gt.value", "does not parse as point_set"),
        ({"image_size": [0, 480]}, "$.image_size", "must be [width, height]"),
        ({"reward_contract": contract("integer", "bbox")}, "$.reward_contract.annotation.type", "point_set"),
        ({"colour": "red"}, "$", "extra fields found (colour)"),
        ({"response": RESPONSES[0]}, "$.response", "pass the response as score_instance's second argument"),
    ],
)
def test_an_invalid_record_is_an_instance_error_naming_the_problem(change: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InstanceError) as caught:
        score_instance({**RECORD, **change}, RESPONSES[0])
    assert caught.value.problems[0].path == path and message in str(caught.value)
    assert "CompiledInstance" not in str(caught.value)


def test_the_record_is_named_by_its_id() -> None:
    with pytest.raises(InstanceError, match=r"^instance 'chart-17': invalid instance: "):
        score_instance({**RECORD, "image_size": [0, 1]}, RESPONSES[0])


def test_not_a_record_at_all() -> None:
    with pytest.raises(InstanceError, match="an instance must be a JSON object, got list"):
        score_instance([1, 2], RESPONSES[0])  # type: ignore[arg-type]


def test_caller_mistakes_come_first_and_keep_their_own_errors() -> None:
    with pytest.raises(OptionError, match=r"unknown scorer option\(s\) \['bogus'\]") as caught:
        score_instance({"not": "an instance"}, RESPONSES[0], bogus=1)
    assert "CompiledInstance" not in str(caught.value) and "keyword argument" not in str(caught.value)
    with pytest.raises(OptionError, match="trace_recovery"):
        score_instance(RECORD, RESPONSES[0], trace_recovery="strict")
    with pytest.raises(ResponseTypeError):
        score_instance(RECORD, 3)  # type: ignore[arg-type]


def test_batch_items_may_be_whole_records() -> None:
    items = [{**RECORD, "response": response} for response in RESPONSES]
    assert score_trace_batch(items) == [lenient(response) for response in RESPONSES]
    assert score_trace_batch(items, trace_reward_mode="answer") == [lenient(r, trace_reward_mode="answer") for r in RESPONSES]


def test_batch_errors_name_no_internal_class() -> None:
    items = [
        {**RECORD, "response": RESPONSES[0], "bogus": 1},
        {**RECORD, "response": RESPONSES[0], "id": 5},
        {**RECORD},
        {**RECORD, "response": RESPONSES[0], "trace_recovery": "nope"},
        7,
    ]
    results = score_trace_batch(items)  # type: ignore[list-item]
    assert results[0]["error"].startswith("OptionError: unknown item key(s) ['bogus']")
    assert results[1]["error"].startswith("InstanceError: invalid instance: $.id")
    assert results[2]["error"].startswith("ResponseTypeError")
    assert results[3]["error"].startswith("OptionError") and "trace_recovery" in str(results[3]["error"])
    assert results[4]["error"].startswith("TypeError: a score_trace_batch item must be a mapping")
    for result in results:
        assert "CompiledInstance" not in str(result["error"]) and "unexpected keyword" not in str(result["error"])
