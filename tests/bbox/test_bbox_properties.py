"""Hypothesis properties of box scoring, for every box type, through the public scorer.

``deadline=None`` everywhere: these tests assert behaviour, never speed.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from trace_plugins_bbox.geometry import iou, parse_box

from .helpers import score, score_response

pytestmark = pytest.mark.slow  # Hypothesis: hundreds of scored examples per test; -m "not slow" leaves them to the full run

TYPES = ["bbox", "bbox_set", "bbox_sequence", "bbox_map", "bbox_set_map"]
PROPERTY = settings(deadline=None, max_examples=100)

# Realistic pixel boxes: integer or float corners, widths bounded away from 0 so a
# box's area is a normal float (a box 1e-200 wide has area 0 and IoU 0 by rule).
coordinate = st.one_of(
    st.integers(-5000, 5000),
    st.floats(-1e5, 1e5, allow_nan=False, allow_infinity=False),
)
extent = st.one_of(st.integers(1, 5000), st.floats(1e-3, 1e5, allow_nan=False, allow_infinity=False))


@st.composite
def boxes(draw: st.DrawFn) -> list[float]:
    x0, y0 = draw(coordinate), draw(coordinate)
    return [x0, y0, x0 + draw(extent), y0 + draw(extent)]


@st.composite
def overlapping_sets(draw: st.DrawFn, max_size: int = 6) -> list[list[int]]:
    """Small integer boxes crowded into a 40-pixel canvas so that they overlap a lot."""
    n = draw(st.integers(0, max_size))
    out = []
    for _ in range(n):
        x, y = draw(st.integers(0, 30)), draw(st.integers(0, 30))
        out.append([x, y, x + draw(st.integers(1, 15)), y + draw(st.integers(1, 15))])
    return out


# Any finite float corners, including ones whose areas overflow or underflow.
wild_coordinate = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def wild_boxes(draw: st.DrawFn) -> list[float]:
    box = [draw(wild_coordinate) for _ in range(4)]
    assume(box[0] != box[2] and box[1] != box[3])
    return box


keys = st.text(min_size=1, max_size=6).map(str.strip).filter(bool)


def values_of(annotation_type: str, box: st.SearchStrategy[list[float]]) -> st.SearchStrategy[Any]:
    """A valid annotation value of ``annotation_type`` made of boxes from ``box``."""
    collection = st.lists(box, max_size=6)
    return {
        "bbox": box,
        "bbox_set": collection,
        "bbox_sequence": collection,
        "bbox_map": st.dictionaries(keys, box, max_size=4),
        "bbox_set_map": st.dictionaries(keys, collection, max_size=4),
    }[annotation_type]


def typed_values(box: st.SearchStrategy[list[float]]) -> st.SearchStrategy[tuple[str, Any]]:
    return st.sampled_from(TYPES).flatmap(lambda t: st.tuples(st.just(t), values_of(t, box)))


def swap_corners(value: Any, flips: list[int]) -> Any:
    """The same annotation with each box's corners swapped per ``flips`` (bit 0: x, bit 1: y)."""
    counter = itertools.count()

    def flip(box: list[float]) -> list[float]:
        f = flips[next(counter) % len(flips)]
        x0, y0, x1, y1 = box
        if f & 1:
            x0, x1 = x1, x0
        if f & 2:
            y0, y1 = y1, y0
        return [x0, y0, x1, y1]

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if v and isinstance(v[0], list):
            return [flip(b) for b in v]
        return flip(v) if v else v

    return walk(value)


def assert_sane(result: dict[str, float]) -> None:
    assert all(type(v) is float and math.isfinite(v) for v in result.values())
    for key in ("overall", "annotation_reward", "answer_reward", "task_reward_raw"):
        assert 0.0 <= result[key] <= 1.0
    if "annotation_assigned_iou_mean" in result:
        assert 0.0 <= result["annotation_assigned_iou_mean"] <= 1.0


@PROPERTY
@given(typed_values(boxes()))
def test_prediction_equal_to_target_scores_one(typed: tuple[str, Any]) -> None:
    annotation_type, value = typed
    result = score(annotation_type, value, value)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0
    assert result["overall"] == 1.0


@PROPERTY
@given(st.data(), st.lists(boxes(), max_size=8))
def test_shuffling_a_set_prediction_never_changes_its_score(data: st.DataObject, target: list[list[float]]) -> None:
    pred = data.draw(st.lists(boxes(), max_size=8) | st.just(target))
    shuffled = data.draw(st.permutations(pred))
    assert score("bbox_set", shuffled, target) == score("bbox_set", pred, target)


@PROPERTY
@given(overlapping_sets(8), overlapping_sets(8), st.randoms(use_true_random=False))
def test_shuffling_crowded_sets_never_changes_the_score(pred: list, target: list, rng) -> None:
    shuffled = pred[:]
    rng.shuffle(shuffled)
    base = score("bbox_set", pred, target)
    assert score("bbox_set", shuffled, target) == base
    # Inside a set-map key too.
    assert score("bbox_set_map", {"k": shuffled}, {"k": target}) == score("bbox_set_map", {"k": pred}, {"k": target})


@PROPERTY
@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(st.just(t), values_of(t, wild_boxes()), values_of(t, wild_boxes()))))
def test_scores_are_finite_and_in_the_unit_interval(case: tuple[str, Any, Any]) -> None:
    annotation_type, pred, target = case
    for formula in ("gated", "additive"):
        result = score(annotation_type, pred, target, trace_annotation_reward_formula=formula)
        assert result["annotation_parse_ok"] == 1.0
        assert_sane(result)


@PROPERTY
@given(typed_values(boxes()), st.data())
def test_swapping_corners_never_changes_the_score(typed: tuple[str, Any], data: st.DataObject) -> None:
    annotation_type, target = typed
    pred = data.draw(values_of(annotation_type, boxes()) | st.just(target))
    flips = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=8))
    assert score(annotation_type, swap_corners(pred, flips), target) == score(annotation_type, pred, target)
    assert score(annotation_type, pred, swap_corners(target, flips)) == score(annotation_type, pred, target)


@PROPERTY
@given(overlapping_sets(5), overlapping_sets(5))
def test_set_reward_is_the_brute_force_optimum(pred: list, target: list) -> None:
    result = score("bbox_set", pred, target)
    if not pred and not target:
        assert result["annotation_reward"] == 1.0
        return
    m = [[iou(parse_box(p), parse_box(g)) for g in target] for p in pred]
    if len(pred) > len(target):
        m = [list(col) for col in zip(*m, strict=False)]
    rows, cols = len(m), len(m[0]) if m else 0
    best = max(
        (sum(m[i][j] for i, j in zip(range(rows), perm, strict=False)) for perm in itertools.permutations(range(cols), rows)),
        default=0.0,
    )
    assert math.isclose(result["annotation_reward"], best / max(len(pred), len(target)), rel_tol=1e-12, abs_tol=1e-15)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


@PROPERTY
@given(st.sampled_from(TYPES), json_values)
def test_any_annotation_value_is_scored_without_raising(annotation_type: str, value: Any) -> None:
    target = {
        "bbox": [0, 0, 10, 10],
        "bbox_set": [[0, 0, 10, 10]],
        "bbox_sequence": [[0, 0, 10, 10]],
        "bbox_map": {"a": [0, 0, 10, 10]},
        "bbox_set_map": {"a": [[0, 0, 10, 10]]},
    }[annotation_type]
    response = json.dumps({"answer": 2, "annotation": value}, allow_nan=True)
    result = score_response(annotation_type, response, target)
    assert result["annotation_parse_ok"] in (0.0, 1.0)
    assert_sane(result)
