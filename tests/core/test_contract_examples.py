"""The two worked examples of docs/contracts.md §8, output compared exactly."""

from __future__ import annotations

from trace_tasks import score_trace_response

EXAMPLE_CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
}


def test_answer_mode_example_prints_the_contract_output() -> None:
    result = score_trace_response(
        response='{"answer":7}',
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "bbox", "value": [10, 20, 30, 40]},
        reward_contract=EXAMPLE_CONTRACT,
        trace_reward_mode="answer",
    )
    shown = {key: result[key] for key in ("overall", "answer_reward", "format", "format_schema_ok")}
    assert shown == {"overall": 1.0, "answer_reward": 1.0, "format": 1.0, "format_schema_ok": 1.0}
    assert repr(shown) == "{'overall': 1.0, 'answer_reward': 1.0, 'format': 1.0, 'format_schema_ok': 1.0}"


def test_answer_and_annotation_example_prints_the_contract_output() -> None:
    result = score_trace_response(
        response='{"answer":2,"annotation":[5,0,15,10]}',
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
        reward_contract=EXAMPLE_CONTRACT,
        trace_reward_mode="answer_and_annotation",
    )
    shown = {key: result[key] for key in ("overall", "answer_reward", "annotation_reward", "annotation_parse_ok")}
    assert shown == {
        "overall": 0.6666666666666666,
        "answer_reward": 1.0,
        "annotation_reward": 0.3333333333333333,
        "annotation_parse_ok": 1.0,
    }
    assert repr(shown) == (
        "{'overall': 0.6666666666666666, 'answer_reward': 1.0, "
        "'annotation_reward': 0.3333333333333333, 'annotation_parse_ok': 1.0}"
    )
