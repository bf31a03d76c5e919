"""Score one point-like annotation (points, segments) through the public entry point, with a correct answer."""

from __future__ import annotations

import json
import math
from typing import Any

from trace_tasks import resolve_reward_contract, score_trace_response

LN2 = math.log(2.0)
ANSWER_GT = {"type": "integer", "value": 1}


def contract(annotation_type: str) -> dict[str, Any]:
    return resolve_reward_contract(answer_type="integer", annotation_type=annotation_type).to_dict()


def score_text(annotation_type: str, annotation_text: str, target: Any, **options: Any) -> dict[str, float]:
    """Score a response whose annotation is the raw JSON (or literal) text ``annotation_text``."""
    response = '{"answer": 1, "annotation": ' + annotation_text + "}"
    return score_trace_response(
        response=response,
        answer_gt=ANSWER_GT,
        annotation_gt={"type": annotation_type, "value": target},
        reward_contract=contract(annotation_type),
        **options,
    )


def score(annotation_type: str, prediction: Any, target: Any, **options: Any) -> dict[str, float]:
    """Score ``prediction`` (serialized as JSON, NaN and Infinity allowed) against ``target``."""
    return score_text(annotation_type, json.dumps(prediction), target, **options)


def reward(annotation_type: str, prediction: Any, target: Any, **options: Any) -> float:
    result = score(annotation_type, prediction, target, **options)
    assert result["annotation_parse_ok"] == 1.0, result
    return result["annotation_reward"]


def expected_similarity(distance: float, half_life: float = 32.0) -> float:
    """The contract's formula, written independently of the library."""
    return math.exp(-LN2 * (distance / half_life) ** 2)
