"""Ground truth read through pandas, pyarrow or parquet arrives as numpy values; it must score."""

from __future__ import annotations

import numpy as np
import pytest

from trace_tasks import resolve_reward_contract, score_trace_response


def _score(response: str, answer_gt: dict, annotation_gt: dict) -> dict[str, float]:
    contract = resolve_reward_contract(answer_type=answer_gt["type"], annotation_type=annotation_gt["type"])
    return score_trace_response(
        response=response, answer_gt=answer_gt, annotation_gt=annotation_gt, reward_contract=contract.to_dict()
    )


@pytest.mark.parametrize(
    ("annotation_gt", "prediction"),
    [
        ({"type": "bbox", "value": np.array([0, 0, 10, 10])}, "[0, 0, 10, 10]"),
        ({"type": "bbox_set", "value": np.array([[0, 0, 10, 10], [20, 20, 30, 30]])}, "[[20, 20, 30, 30], [0, 0, 10, 10]]"),
        ({"type": "bbox_map", "value": {"a": np.array([0.0, 0.0, 10.0, 10.0])}}, '{"a": [0, 0, 10, 10]}'),
        ({"type": "point", "value": np.array([3, 4], dtype=np.int64)}, "[3, 4]"),
        ({"type": "point_set", "value": np.array([np.array([1, 2]), np.array([3, 4])], dtype=object)}, "[[3, 4], [1, 2]]"),
        ({"type": "segment", "value": np.array([[0, 0], [10, 10]])}, "[[10, 10], [0, 0]]"),
        ({"type": "segment_set", "value": np.array([[[0, 0], [10, 10]]])}, "[[[0, 0], [10, 10]]]"),
    ],
)
def test_numpy_annotation_targets_score(annotation_gt: dict, prediction: str) -> None:
    result = _score(f'{{"answer": 7, "annotation": {prediction}}}', {"type": "integer", "value": 7}, annotation_gt)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0
    assert result["overall"] == 1.0


@pytest.mark.parametrize(
    ("answer_gt", "response"),
    [
        ({"type": "integer", "value": np.int64(7)}, '{"answer": 7}'),
        ({"type": "number", "value": np.float64(2.5)}, '{"answer": 2.5}'),
        ({"type": "index_list", "value": np.array([2, 0, 1])}, '{"answer": [2, 0, 1]}'),
        ({"type": "matrix", "value": np.array([[1, 2], [3, 4]])}, '{"answer": [[1, 2], [3, 4]]}'),
        ({"type": "boolean", "value": np.bool_(True)}, '{"answer": true}'),
    ],
)
def test_numpy_answers_match(answer_gt: dict, response: str) -> None:
    result = _score(response, answer_gt, {"type": "bbox", "value": [0, 0, 1, 1]})
    assert result["answer_reward"] == 1.0


def test_numpy_boolean_is_still_not_a_number() -> None:
    result = _score('{"answer": 1}', {"type": "integer", "value": np.bool_(True)}, {"type": "bbox", "value": [0, 0, 1, 1]})
    assert result["answer_reward"] == 0.0


def test_numpy_boolean_coordinate_still_fails() -> None:
    gt = {"type": "point", "value": np.array([True, False])}
    result = _score('{"answer": 7, "annotation": [1, 0]}', {"type": "integer", "value": 7}, gt)
    assert result["annotation_parse_ok"] == 0.0
