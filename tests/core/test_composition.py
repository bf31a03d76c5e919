"""Reward composition and the result dict: docs/contracts.md §6 and §7."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from trace_tasks import get_registry, score_trace_response

from .helpers import LEADING_KEYS, contract, score

# IoU of [5, 0, 15, 10] with [0, 0, 10, 10] is 1/3.
THIRD = '{"answer": 7, "annotation": [5, 0, 15, 10]}'
THIRD_WRONG = '{"answer": 8, "annotation": [5, 0, 15, 10]}'
PERFECT_WRONG = '{"answer": 8, "annotation": [0, 0, 10, 10]}'


def test_answer_mode_task_reward_is_the_answer_reward() -> None:
    result = score(THIRD, trace_reward_mode="answer")
    assert result["task_reward_raw"] == result["answer_reward"] == 1.0
    assert result["annotation_reward"] == pytest.approx(1 / 3)  # scored and reported, not used
    assert score(PERFECT_WRONG, trace_reward_mode="answer")["task_reward_raw"] == 0.0


def test_gated_formula() -> None:
    result = score(THIRD)
    assert result["task_reward_raw"] == pytest.approx(1.0 * (0.5 + 0.5 * (1 / 3)))


def test_gated_wrong_answer_gets_zero_even_with_a_perfect_annotation() -> None:
    result = score(PERFECT_WRONG)
    assert result["annotation_reward"] == 1.0
    assert result["task_reward_raw"] == 0.0
    assert result["zero_reward"] == 1.0


def test_additive_formula() -> None:
    result = score(PERFECT_WRONG, trace_annotation_reward_formula="additive")
    assert result["task_reward_raw"] == 0.5
    result = score(THIRD_WRONG, trace_annotation_reward_formula="additive", answer_weight=1, annotation_weight=3)
    assert result["task_reward_raw"] == pytest.approx(0.75 * (1 / 3))


def test_weights_are_normalized_by_their_sum() -> None:
    result = score(THIRD, answer_weight=3, annotation_weight=1)
    assert (result["trace_answer_weight"], result["trace_annotation_weight"]) == (0.75, 0.25)
    assert result["task_reward_raw"] == pytest.approx(0.75 + 0.25 / 3)
    doubled = score(THIRD, answer_weight=6, annotation_weight=2)
    assert doubled["task_reward_raw"] == result["task_reward_raw"]


def test_default_weights_are_one_half() -> None:
    result = score(THIRD)
    assert (result["trace_answer_weight"], result["trace_annotation_weight"]) == (0.5, 0.5)


def test_format_weight_defaults_to_zero() -> None:
    result = score('{"answer": 7, "annotation": [0, 0, 10, 10]} trailing prose')
    assert result["format"] == 0.0
    assert result["format_weight"] == 0.0
    assert result["overall"] == 1.0


@pytest.mark.parametrize("format_weight", [0.0, 0.2, 0.5, 1.0])
@pytest.mark.parametrize(
    "response",
    [THIRD, THIRD + " trailing", PERFECT_WRONG, PERFECT_WRONG + " trailing"],
)
def test_format_blend(format_weight: float, response: str) -> None:
    result = score(response, format_weight=format_weight)
    expected = (1 - format_weight) * result["task_reward_raw"] + format_weight * result["format"]
    assert result["overall"] == pytest.approx(expected)
    assert result["format_weight"] == format_weight


def test_zero_reward_ignores_the_format_reward() -> None:
    result = score(PERFECT_WRONG, format_weight=1.0)
    assert result["overall"] == 1.0
    assert result["task_reward_raw"] == 0.0
    assert result["zero_reward"] == 1.0
    assert score(THIRD, format_weight=1.0)["zero_reward"] == 0.0


def test_effective_and_gated_task_rewards_equal_raw() -> None:
    for kwargs in ({}, {"trace_annotation_reward_formula": "additive"}, {"trace_reward_mode": "answer"}):
        result = score(THIRD_WRONG, **kwargs)
        assert result["task_reward_effective"] == result["task_reward_raw"] == result["task_reward_gated"]


def test_constant_markers() -> None:
    result = score("x")
    assert result["trace_answer_scoring_exact_json"] == 1.0
    assert result["trace_reward"] == 1.0


# --- result dict shape ---------------------------------------------------------------------


def type_keys() -> list[str]:
    return [key for _, key in get_registry().type_indicator_keys]


def test_result_key_order() -> None:
    result = score(THIRD)
    keys = list(result)
    assert tuple(keys[: len(LEADING_KEYS)]) == LEADING_KEYS
    assert keys[len(LEADING_KEYS) : len(LEADING_KEYS) + len(type_keys())] == type_keys()


def test_one_hot_covers_every_installed_annotation_type() -> None:
    registry = get_registry()
    assert {f"annotation_type_{name}" for name in registry.annotation_types} == set(type_keys())
    assert {
        f"annotation_type_{name}"
        for name in (
            "bbox",
            "bbox_set",
            "bbox_sequence",
            "bbox_map",
            "bbox_set_map",
            "point",
            "point_set",
            "point_sequence",
            "point_map",
            "point_set_map",
            "segment",
            "segment_set",
        )
    } <= set(type_keys())
    result = score(THIRD)
    assert [k for k in type_keys() if result[k] == 1.0] == ["annotation_type_bbox"]
    assert all(result[k] == 0.0 for k in type_keys() if k != "annotation_type_bbox")


def test_one_hot_is_all_zero_for_an_unknown_type() -> None:
    result = score_trace_response(
        response=THIRD,
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "polygon", "value": []},
        reward_contract=contract(),
    )
    assert all(result[k] == 0.0 for k in type_keys())
    assert result["annotation_parse_ok"] == 0.0


@pytest.mark.parametrize(
    "response",
    ["", "x", THIRD, THIRD_WRONG, '{"answer": NaN, "annotation": [1e400, 0, 1, 1]}', '{"annotation": "oops"}'],
)
@pytest.mark.parametrize("mode", ["answer", "answer_and_annotation"])
def test_all_values_are_finite_floats(response: str, mode: str) -> None:
    result = score(response, trace_reward_mode=mode)
    for key, value in result.items():
        assert type(value) is float, key
        assert math.isfinite(value), key


BBOX_DIAG = ["annotation_pred_size", "annotation_gt_size", "annotation_assigned_count", "annotation_assigned_iou_mean"]
BBOX_SEQ_DIAG = ["annotation_pred_len", "annotation_gt_len", "annotation_assigned_count", "annotation_assigned_iou_mean"]
MAP_DIAG = [
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_assigned_count",
    "annotation_shared_key_count",
    "annotation_missing_key_count",
    "annotation_extra_key_count",
]
POINT_DIAG = [
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_assigned_count",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
]
POINT_SEQ_DIAG = [
    "annotation_pred_len",
    "annotation_gt_len",
    "annotation_assigned_count",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
]

DIAGNOSTICS: dict[str, tuple[Any, list[str]]] = {
    "bbox": ([0, 0, 10, 10], BBOX_DIAG),
    "bbox_set": ([[0, 0, 10, 10]], BBOX_DIAG),
    "bbox_sequence": ([[0, 0, 10, 10]], BBOX_SEQ_DIAG),
    "bbox_map": ({"a": [0, 0, 10, 10]}, [*MAP_DIAG, "annotation_assigned_iou_mean"]),
    "bbox_set_map": ({"a": [[0, 0, 10, 10]]}, [*MAP_DIAG, "annotation_assigned_iou_mean"]),
    "point": ([1, 2], POINT_DIAG),
    "point_set": ([[1, 2]], POINT_DIAG),
    "point_sequence": ([[1, 2]], POINT_SEQ_DIAG),
    "point_map": ({"a": [1, 2]}, [*MAP_DIAG, "annotation_assigned_similarity_mean", "annotation_point_half_life_px"]),
    "point_set_map": (
        {"a": [[1, 2]]},
        [*MAP_DIAG, "annotation_assigned_similarity_mean", "annotation_point_half_life_px"],
    ),
    "segment": ([[0, 0], [5, 5]], POINT_DIAG),
    "segment_set": ([[[0, 0], [5, 5]]], POINT_DIAG),
}


@pytest.mark.parametrize("annotation_type", sorted(DIAGNOSTICS))
@pytest.mark.parametrize("mode", ["answer", "answer_and_annotation"])
def test_diagnostics_follow_the_one_hot_when_both_sides_parse(annotation_type: str, mode: str) -> None:
    value, expected = DIAGNOSTICS[annotation_type]
    response = json.dumps({"answer": 7, "annotation": value})
    result = score(response, annotation=value, annotation_type=annotation_type, trace_reward_mode=mode)
    keys = list(result)
    tail = keys[len(LEADING_KEYS) + len(type_keys()) :]
    assert tail == expected
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0
    assert result[f"annotation_type_{annotation_type}"] == 1.0


@pytest.mark.parametrize(
    ("response", "annotation_gt"),
    [
        ('{"answer": 7, "annotation": [0, 0, 0, 10]}', {"type": "bbox", "value": [0, 0, 10, 10]}),  # zero-area prediction
        ('{"answer": 7}', {"type": "bbox", "value": [0, 0, 10, 10]}),  # missing prediction
        ('{"answer": 7, "annotation": null}', {"type": "bbox", "value": [0, 0, 10, 10]}),
        ('{"answer": 7, "annotation": [0, 0, 10, 10]}', {"type": "bbox", "value": [0, 0, 10, "x"]}),  # bad target
        ('{"answer": 7, "annotation": [0, 0, 10, 10]}', {"type": "bbox"}),  # no target value
    ],
)
def test_no_diagnostics_unless_both_sides_parse(response: str, annotation_gt: dict[str, Any]) -> None:
    result = score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 7},
        annotation_gt=annotation_gt,
        reward_contract=contract(),
    )
    assert len(result) == len(LEADING_KEYS) + len(type_keys())
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0


def test_diagnostic_values_for_a_box() -> None:
    result = score(THIRD)
    assert result["annotation_pred_size"] == result["annotation_gt_size"] == result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_iou_mean"] == pytest.approx(1 / 3)


def test_the_public_key_list_is_the_documented_one() -> None:
    """``trace_tasks.CORE_RESULT_KEYS`` / ``result_keys()``: the library's one list, checked against the tests' copy."""
    from trace_tasks import CORE_RESULT_KEYS, get_registry, result_keys

    assert CORE_RESULT_KEYS == LEADING_KEYS
    assert result_keys() == LEADING_KEYS + tuple(key for _, key in get_registry().type_indicator_keys)
    assert tuple(score('{"answer": 7}', trace_reward_mode="answer"))[: len(result_keys())] == result_keys()
