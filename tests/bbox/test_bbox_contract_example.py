"""The worked examples of docs/contracts.md §8 print exactly what that section shows."""

from __future__ import annotations

from ..support.readme_example import run_snippet
from .helpers import score

# The answer-and-annotation example of docs/contracts.md §8.
ANSWER_AND_ANNOTATION_EXAMPLE = """
from trace_tasks import score_trace_response

result = score_trace_response(
    response='{"answer":2,"annotation":[5,0,15,10]}',
    answer_gt={"type": "integer", "value": 2},
    annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
    reward_contract={
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
    },
    trace_reward_mode="answer_and_annotation",
)

print({
    key: result[key]
    for key in (
        "overall",
        "answer_reward",
        "annotation_reward",
        "annotation_parse_ok",
    )
})
"""
ANSWER_AND_ANNOTATION_OUTPUT = (
    "{'overall': 0.6666666666666666, 'answer_reward': 1.0, 'annotation_reward': 0.3333333333333333, 'annotation_parse_ok': 1.0}\n"
)

# The answer-mode example of docs/contracts.md §8 (a bbox contract in answer mode).
ANSWER_EXAMPLE = """
from trace_tasks import score_trace_response

result = score_trace_response(
    response='{"answer":7}',
    answer_gt={"type": "integer", "value": 7},
    annotation_gt={"type": "bbox", "value": [10, 20, 30, 40]},
    reward_contract={
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
    },
    trace_reward_mode="answer",
)

print({
    key: result[key]
    for key in ("overall", "answer_reward", "format", "format_schema_ok")
})
"""
ANSWER_OUTPUT = "{'overall': 1.0, 'answer_reward': 1.0, 'format': 1.0, 'format_schema_ok': 1.0}\n"


def run_contract_snippet(code: str) -> str:
    """Run an example snippet as a script (as ``python -`` would), in this process; what it printed."""
    return run_snippet(code, "<docs/contracts.md §8 example>")


def test_answer_and_annotation_example_prints_the_contract_output() -> None:
    assert run_contract_snippet(ANSWER_AND_ANNOTATION_EXAMPLE) == ANSWER_AND_ANNOTATION_OUTPUT


def test_answer_mode_example_with_a_bbox_contract_prints_the_contract_output() -> None:
    assert run_contract_snippet(ANSWER_EXAMPLE) == ANSWER_OUTPUT


def test_the_example_values_are_the_hand_computed_ones() -> None:
    # IoU of [5,0,15,10] with [0,0,10,10]: 50 / (100 + 100 - 50) = 1/3;
    # gated overall: 1 * (0.5 + 0.5 * 1/3) = 2/3.
    result = score("bbox", [5, 0, 15, 10], [0, 0, 10, 10])
    assert result["annotation_reward"] == 1 / 3
    assert result["overall"] == 0.5 + 0.5 * (1 / 3)
    assert result["answer_reward"] == 1.0
    assert result["annotation_parse_ok"] == 1.0
