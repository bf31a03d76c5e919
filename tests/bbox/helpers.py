"""Shared helpers for the box-family tests: score one annotation through the public API."""

from __future__ import annotations

import json
from typing import Any

from trace_tasks import score_trace_response

#: annotation type -> its current reward id (docs/contracts.md §10, resolver table).
REWARD_IDS = {
    "bbox": "bbox_soft_iou_v0",
    "bbox_set": "bbox_set_soft_iou_v0",
    "bbox_sequence": "bbox_sequence_soft_iou_v0",
    "bbox_map": "bbox_map_soft_iou_v0",
    "bbox_set_map": "bbox_set_map_soft_iou_v0",
}


def contract(annotation_type: str) -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": REWARD_IDS[annotation_type], "type": annotation_type},
    }


def score(annotation_type: str, prediction: Any, target: Any, **kwargs: Any) -> dict[str, float]:
    """Score a correct answer (2) with ``prediction`` against a ``target`` of ``annotation_type``.

    The prediction is serialized as JSON into the response, exactly as a model would
    write it (``allow_nan`` lets a test put ``NaN`` / ``Infinity`` in the text).
    """
    response = json.dumps({"answer": 2, "annotation": prediction}, allow_nan=True)
    return score_response(annotation_type, response, target, **kwargs)


def score_response(annotation_type: str, response: str, target: Any, **kwargs: Any) -> dict[str, float]:
    return score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": annotation_type, "value": target},
        reward_contract=contract(annotation_type),
        **kwargs,
    )


def reward(annotation_type: str, prediction: Any, target: Any) -> float:
    return score(annotation_type, prediction, target)["annotation_reward"]


def parsed(annotation_type: str, prediction: Any, target: Any) -> bool:
    """Whether the prediction parsed (the target is assumed valid)."""
    return score(annotation_type, prediction, target)["annotation_parse_ok"] == 1.0
