"""Many predicted items, many map keys: scored (poorly) up to the limits, parse failures past them."""

from __future__ import annotations

import json

import pytest

from trace_tasks.limits import MAX_COLLECTION_ITEMS, MAX_MATRIX_CELLS

from .helpers import BAD_ANNOTATION, WELL_FORMED, flags, score

TARGETS = [[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]]


def _boxes(n: int) -> list[list[int]]:
    return [[i, i, i + 10, i + 10] for i in range(n)]


def _response(annotation: object) -> str:
    return "Here are my boxes.\n" + json.dumps({"answer": 7, "annotation": annotation})


def test_ten_thousand_boxes_against_three_targets_score_almost_nothing() -> None:
    result = score(_response(_boxes(MAX_COLLECTION_ITEMS)), annotation_type="bbox_set", annotation=TARGETS)
    assert flags(result) == WELL_FORMED
    assert result["annotation_pred_size"] == MAX_COLLECTION_ITEMS
    assert result["annotation_assigned_count"] == len(TARGETS)
    # At most one full match per target, divided by the larger side.
    assert result["annotation_reward"] <= len(TARGETS) / MAX_COLLECTION_ITEMS


def test_one_box_past_the_item_limit_is_a_parse_failure() -> None:
    result = score(_response(_boxes(MAX_COLLECTION_ITEMS + 1)), annotation_type="bbox_set", annotation=TARGETS)
    assert flags(result) == BAD_ANNOTATION
    assert result["annotation_reward"] == 0.0


@pytest.mark.parametrize("annotation_type", ["point_set", "point_sequence"])
def test_ten_thousand_points(annotation_type: str) -> None:
    points = [[i, 0] for i in range(MAX_COLLECTION_ITEMS)]
    result = score(_response(points), annotation_type=annotation_type, annotation=[[0, 0], [5, 0]])
    assert flags(result) == WELL_FORMED
    assert result["annotation_reward"] <= 2 / MAX_COLLECTION_ITEMS


def test_assignment_at_the_cell_limit_is_scored_and_past_it_fails() -> None:
    preds = _boxes(MAX_COLLECTION_ITEMS)
    per_side = MAX_MATRIX_CELLS // MAX_COLLECTION_ITEMS  # targets that still fit
    at_limit = score(_response(preds), annotation_type="bbox_set", annotation=_boxes(per_side))
    assert flags(at_limit) == WELL_FORMED
    assert at_limit["annotation_assigned_count"] == per_side
    past = score(_response(preds), annotation_type="bbox_set", annotation=_boxes(per_side + 1))
    assert flags(past) == BAD_ANNOTATION


def test_five_thousand_map_keys_against_two() -> None:
    keys = {f"role_{i}": [0, 0, 10, 10] for i in range(5000)}
    target = {"role_1": [0, 0, 10, 10], "missing": [0, 0, 5, 5]}
    result = score(_response(keys), annotation_type="bbox_map", annotation=target)
    assert flags(result) == WELL_FORMED
    assert result["annotation_shared_key_count"] == 1.0
    assert result["annotation_extra_key_count"] == 4999.0
    assert result["annotation_missing_key_count"] == 1.0
    assert result["annotation_reward"] == pytest.approx(1.0 / 5001)


def test_map_keys_past_the_limit_fail() -> None:
    keys = {f"k{i}": [0, 0] for i in range(MAX_COLLECTION_ITEMS + 1)}
    result = score(_response(keys), annotation_type="point_map", annotation={"k1": [0, 0]})
    assert flags(result) == BAD_ANNOTATION


def test_set_map_with_thousands_of_keys_and_items() -> None:
    value = {f"k{i}": [[0, 0, 10, 10]] * 3 for i in range(3000)}
    result = score(_response(value), annotation_type="bbox_set_map", annotation={"k1": [[0, 0, 10, 10]]})
    assert flags(result) == WELL_FORMED
    # k1: one of three duplicates matches (1/3); 2,999 extra keys dilute it further.
    assert result["annotation_reward"] == pytest.approx((1 / 3) / 3000)


def test_ten_thousand_segments_against_a_hundred() -> None:
    segments = [[[i, 0], [i, 10]] for i in range(MAX_COLLECTION_ITEMS)]
    result = score(_response(segments), annotation_type="segment_set", annotation=segments[:100])
    assert flags(result) == WELL_FORMED
    assert result["annotation_reward"] == pytest.approx(100 / MAX_COLLECTION_ITEMS)
