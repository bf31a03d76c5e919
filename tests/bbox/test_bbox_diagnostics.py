"""The result dict of every box type: exact diagnostics keys, in the order of docs/contracts.md §7, all floats."""

from __future__ import annotations

import json
import math

import pytest

from trace_tasks import get_registry, score_trace_response

from ..core.helpers import LEADING_KEYS
from .helpers import REWARD_IDS, score

SIZE_KEYS = ["annotation_pred_size", "annotation_gt_size"]
LEN_KEYS = ["annotation_pred_len", "annotation_gt_len"]
MAP_KEYS = [
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_assigned_count",
    "annotation_shared_key_count",
    "annotation_missing_key_count",
    "annotation_extra_key_count",
    "annotation_assigned_iou_mean",
]

# docs/contracts.md §7 "Return value": type -> (diagnostics keys in order, a valid value).
EXPECTED = {
    "bbox": ([*SIZE_KEYS, "annotation_assigned_count", "annotation_assigned_iou_mean"], [0, 0, 10, 10]),
    "bbox_set": ([*SIZE_KEYS, "annotation_assigned_count", "annotation_assigned_iou_mean"], [[0, 0, 10, 10]]),
    "bbox_sequence": ([*LEN_KEYS, "annotation_assigned_count", "annotation_assigned_iou_mean"], [[0, 0, 10, 10]]),
    "bbox_map": (MAP_KEYS, {"a": [0, 0, 10, 10]}),
    "bbox_set_map": (MAP_KEYS, {"a": [[0, 0, 10, 10]]}),
}

# The core keys every result starts with (docs/contracts.md §7), before the type one-hot.
CORE_KEYS = list(LEADING_KEYS)  # the one independent copy of the documented order, tests/core/helpers.py


def one_hot_keys() -> list[str]:
    return [key for _, key in get_registry().type_indicator_keys]


def test_box_types_are_registered_with_their_reward_ids() -> None:
    registry = get_registry()
    for annotation_type, reward_id in REWARD_IDS.items():
        assert registry.annotation_types[annotation_type].current_reward_id == reward_id
        assert f"annotation_type_{annotation_type}" in one_hot_keys()


@pytest.mark.parametrize("annotation_type", list(EXPECTED))
def test_diagnostics_keys_and_order(annotation_type: str) -> None:
    keys, value = EXPECTED[annotation_type]
    result = score(annotation_type, value, value)
    assert list(result) == CORE_KEYS + one_hot_keys() + keys
    assert all(type(v) is float and math.isfinite(v) for v in result.values())
    hot = [key for key in one_hot_keys() if result[key] == 1.0]
    assert hot == [f"annotation_type_{annotation_type}"]
    assert result["annotation_reward"] == 1.0
    assert result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_iou_mean"] == 1.0


@pytest.mark.parametrize("annotation_type", list(EXPECTED))
def test_same_keys_in_answer_mode(annotation_type: str) -> None:
    # The annotation is scored and reported in answer mode too; it stays out of the reward.
    keys, value = EXPECTED[annotation_type]
    result = score(annotation_type, value, value, trace_reward_mode="answer")
    assert list(result)[-len(keys) :] == keys
    assert result["annotation_reward"] == 1.0
    assert result["trace_reward_mode_answer"] == 1.0


@pytest.mark.parametrize("annotation_type", list(EXPECTED))
def test_no_diagnostics_when_the_prediction_fails_to_parse(annotation_type: str) -> None:
    _, value = EXPECTED[annotation_type]
    result = score(annotation_type, "not an annotation", value)
    assert list(result) == CORE_KEYS + one_hot_keys()
    assert result["annotation_parse_ok"] == 0.0
    assert result[f"annotation_type_{annotation_type}"] == 1.0


@pytest.mark.parametrize("annotation_type", list(EXPECTED))
def test_no_diagnostics_when_the_contract_id_is_wrong(annotation_type: str) -> None:
    _, value = EXPECTED[annotation_type]
    other = "bbox_set_soft_iou_v0" if annotation_type != "bbox_set" else "bbox_soft_iou_v0"
    result = score_trace_response(
        response=json.dumps({"answer": 2, "annotation": value}),
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": annotation_type, "value": value},
        reward_contract={
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": other, "type": annotation_type},
        },
    )
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0
    assert list(result) == CORE_KEYS + one_hot_keys()


def test_sequence_diagnostics_values() -> None:
    result = score("bbox_sequence", [[0, 0, 10, 10], [5, 0, 15, 10], [0, 0, 1, 1]], [[0, 0, 10, 10], [0, 0, 10, 10]])
    assert result["annotation_pred_len"] == 3.0
    assert result["annotation_gt_len"] == 2.0
    assert result["annotation_assigned_count"] == 2.0
    assert result["annotation_assigned_iou_mean"] == (1.0 + 1 / 3) / 2
    assert result["annotation_reward"] == (1.0 + 1 / 3) / 3
