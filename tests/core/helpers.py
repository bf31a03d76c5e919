"""Small builders shared by the core tests: instances, contracts and one-call scoring."""

from __future__ import annotations

from typing import Any

from trace_tasks import resolve_reward_contract, score_trace_response

#: The keys every result dict starts with, in the order of docs/contracts.md §7: written out
#: by hand, the tests' one independent copy of trace_tasks.CORE_RESULT_KEYS (the contract test).
LEADING_KEYS = (
    "overall",
    "format",
    "accuracy",
    "answer_reward",
    "annotation_reward",
    "task_reward_raw",
    "task_reward_effective",
    "task_reward_gated",
    "format_weight",
    "trace_reward_mode_answer",
    "trace_reward_mode_answer_only",
    "trace_reward_mode_answer_and_annotation",
    "trace_answer_scoring_exact_json",
    "trace_annotation_reward_formula_gated",
    "trace_annotation_reward_formula_additive",
    "trace_answer_weight",
    "trace_annotation_weight",
    "format_structure_ok",
    "format_json_ok",
    "format_schema_ok",
    "answer_parse_ok",
    "annotation_parse_ok",
    "json_found",
    "zero_reward",
    "trace_reward",
)


def contract(answer_type: str = "integer", annotation_type: str = "bbox") -> dict[str, Any]:
    """The resolved contract payload, as a builder would store it on an instance."""
    return resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()


def score(
    response: str,
    *,
    answer: Any = 7,
    answer_type: str = "integer",
    annotation: Any = (0, 0, 10, 10),
    annotation_type: str = "bbox",
    **options: Any,
) -> dict[str, float]:
    """Score ``response`` against a small instance built from its public types."""
    if isinstance(annotation, tuple):
        annotation = list(annotation)
    return score_trace_response(
        response=response,
        answer_gt={"type": answer_type, "value": answer},
        annotation_gt={"type": annotation_type, "value": annotation},
        reward_contract=contract(answer_type, annotation_type),
        **options,
    )


def answer_matches(prediction_json: str, target: Any, answer_type: str = "integer") -> bool:
    """Whether the response ``{"answer": <prediction_json>}`` earns the answer reward."""
    result = score('{"answer": ' + prediction_json + "}", answer=target, answer_type=answer_type, trace_reward_mode="answer")
    return result["answer_reward"] == 1.0
