"""Issue 24 (A): an honest complete annotation never scores below the same annotation cut short.

The solver budget used to be one fixed number per response, so against a target
of more than ~360 items a complete answer whose items compete for the same
targets (one near-duplicate is enough) was a parse failure (annotation reward
0) while the same answer cut short was scored: 400 points, honest 0.50 overall,
its first 350 points 0.934. The budget now grows with the target so that every
plausible prediction (the target's items plus a margin) is scored exactly, and
validation refuses a target too large for that, naming the limit.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from trace_plugins_bbox.geometry import iou, iou_matrix, parse_box
from trace_plugins_point.geometry import similarity, similarity_matrix
from trace_tasks import ScoringContext, resolve_reward_contract, score_trace_response
from trace_tasks.data import instance_problems
from trace_tasks.family import AssignmentBudget, assign_pairs
from trace_tasks.family._assignment import plausible_items
from trace_tasks.limits import (
    MAX_ASSIGNMENT_WORK,
    MAX_COLLECTION_ITEMS,
    MAX_MATRIX_CELLS,
    MAX_TARGET_ASSIGNMENT_CELLS,
    MAX_TARGET_ASSIGNMENT_WORK,
)

IMAGE = [1024, 768]
CTX = ScoringContext(half_life_px=32.0, image_size=(1024.0, 768.0))


def _instance(annotation_type: str, target: Any) -> dict[str, Any]:
    return {
        "answer_gt": {"type": "integer", "value": 7},
        "annotation_gt": {"type": annotation_type, "value": target},
        "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type=annotation_type).to_dict(),
        "image_size": IMAGE,
    }


def _score(annotation_type: str, prediction: Any, target: Any) -> dict[str, float]:
    instance = _instance(annotation_type, target)
    response = json.dumps({"answer": 7, "annotation": prediction})
    return score_trace_response(response=response, point_half_life_px=CTX.half_life_px, **instance)


def _grid_points(n: int) -> list[list[float]]:
    return [[20.0 + 50 * (k % 20), 20.0 + 37 * (k // 20)] for k in range(n)]


def _grid_boxes(n: int) -> list[list[float]]:
    return [[20.0 + 50 * (k % 20), 20.0 + 37 * (k // 20), 60.0 + 50 * (k % 20), 50.0 + 37 * (k // 20)] for k in range(n)]


def _largest_valid_set() -> int:
    n = 1
    while n < MAX_COLLECTION_ITEMS and AssignmentBudget.target_problem([n + 1]) is None:
        n += 1
    return n


LARGEST = _largest_valid_set()


def _honest(target: list[list[float]], seed: int, duplicates: int = 1) -> list[list[float]]:
    """Every target item with up to a pixel of jitter; ``duplicates`` of them written as a near-copy of another."""
    rng = random.Random(seed)
    honest = [[c + rng.uniform(-1, 1) for c in item] for item in target]
    for _ in range(duplicates):
        i, j = rng.randrange(len(honest)), rng.randrange(len(honest))
        honest[i] = [c + rng.uniform(-0.3, 0.3) for c in honest[j]]
    return honest


# The finding's two cases, as reported.


def test_400_grid_points_honest_beats_the_first_350() -> None:
    target = _grid_points(400)
    honest = _honest(target, seed=0)
    assert instance_problems(_instance("point_set", target)) == []
    full = _score("point_set", honest, target)
    cut = _score("point_set", honest[:350], target)
    assert full["annotation_parse_ok"] == 1.0  # was 0: overall 0.50 against 0.934
    assert full["overall"] > cut["overall"]
    assert full["annotation_reward"] > 0.99
    # Exactly the unreduced solve: scipy on the whole matrix, the pairs' similarity summed.
    assert full["annotation_reward"] == _full_points(honest, target) / 400


def test_400_boxes_honest_beats_the_first_300() -> None:
    target = _grid_boxes(400)
    honest = _honest(target, seed=1)
    assert instance_problems(_instance("bbox_set", target)) == []
    full = _score("bbox_set", honest, target)
    cut = _score("bbox_set", honest[:300], target)
    assert full["annotation_parse_ok"] == 1.0  # was 0: overall 0.000 against 0.543
    assert full["overall"] > cut["overall"]
    preds, gts = [parse_box(b) for b in honest], [parse_box(b) for b in target]
    pairs = assign_pairs(iou_matrix(preds, gts))
    assert full["annotation_reward"] == math.fsum(iou(preds[i], gts[j]) for i, j in pairs) / 400


# The invariant, property-style.


@st.composite
def honest_cases(draw: st.DrawFn) -> tuple[str, Any, Any, list[int]]:
    annotation_type = draw(st.sampled_from(["point_set", "bbox_set", "point_set_map"]))
    # Large sets above all, past the largest valid one (562 items): those are refused.
    n = draw(st.one_of(st.integers(1, 40), st.integers(300, 720)))
    seed = draw(st.integers(0, 2**16))
    rng = random.Random(seed)
    spacing = draw(st.sampled_from([3.0, 12.0, 50.0]))  # dense targets compete for each other
    base = [[20.0 + spacing * (k % 20), 20.0 + spacing * (k // 20)] for k in range(n)]
    # Near-duplicate targets too: two of them a fraction of a pixel apart.
    for _ in range(draw(st.integers(0, 3))):
        i, j = rng.randrange(n), rng.randrange(n)
        base[i] = [base[j][0] + rng.uniform(-0.2, 0.2), base[j][1] + rng.uniform(-0.2, 0.2)]
    items = base if annotation_type != "bbox_set" else [[x, y, x + 40.0, y + 30.0] for x, y in base]
    honest = _honest(items, seed, duplicates=draw(st.integers(0, 4)))
    cuts = draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=1, max_size=3))
    if annotation_type == "point_set_map":
        keys = draw(st.integers(1, 4))
        target = {f"k{k}": items[k::keys] for k in range(keys)}
        prediction = {f"k{k}": honest[k::keys] for k in range(keys)}
        return annotation_type, target, prediction, cuts
    return annotation_type, items, honest, cuts


def _cut(prediction: Any, keep: int) -> Any:
    if isinstance(prediction, dict):  # cut the same share of every key
        return {
            key: items[: keep * len(items) // max(sum(map(len, prediction.values())), 1)] for key, items in prediction.items()
        }
    return prediction[:keep]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(honest_cases())
@example(("point_set", _grid_points(400), _honest(_grid_points(400), 0), [350]))
@example(("bbox_set", _grid_boxes(400), _honest(_grid_boxes(400), 1), [300]))
def test_a_complete_honest_annotation_never_scores_below_a_truncation(case: tuple[str, Any, Any, list[int]]) -> None:
    annotation_type, target, honest, cuts = case
    assume(instance_problems(_instance(annotation_type, target)) == [])  # the invariant is promised for valid targets
    full = _score(annotation_type, honest, target)
    assert full["annotation_parse_ok"] == 1.0
    for keep in cuts:
        cut = _score(annotation_type, _cut(honest, keep), target)
        assert full["annotation_reward"] >= cut["annotation_reward"]
        assert full["overall"] >= cut["overall"]


# What validation refuses, and the guarantee it relies on.


def test_validation_refuses_a_set_too_large_to_score_every_plausible_prediction() -> None:
    assert LARGEST**2 * plausible_items(LARGEST) <= MAX_TARGET_ASSIGNMENT_WORK
    assert instance_problems(_instance("point_set", _grid_points(LARGEST))) == []
    problems = instance_problems(_instance("point_set", _grid_points(LARGEST + 1)))
    assert [p.path for p in problems] == ["$.annotation_gt.value"]
    assert "MAX_TARGET_ASSIGNMENT_WORK" in problems[0].message
    assert "cut short" in problems[0].message
    huge = instance_problems(_instance("bbox_set", _grid_boxes(1000)))
    assert "MAX_MATRIX_CELLS" in huge[0].message  # 1,126 predictions x 1,000 targets


def test_validation_refuses_a_set_map_whose_keys_need_too_many_cells() -> None:
    three = [[0, 0, 10, 10], [20, 0, 30, 10], [40, 0, 50, 10]]
    fit = 1
    while fit < MAX_COLLECTION_ITEMS and AssignmentBudget.target_problem([3] * (fit + 1)) is None:
        fit += 1
    assert instance_problems(_instance("bbox_set_map", {f"k{i}": three for i in range(fit)})) == []
    problems = instance_problems(_instance("bbox_set_map", {f"k{i}": three for i in range(fit + 1)}))
    assert len(problems) == 1 and "MAX_TARGET_ASSIGNMENT_CELLS" in problems[0].message
    # The honest answer for every one of those keys is scored (it used to fail past 1,865 keys).
    shifted = [[x0 + 1, y0, x1 + 1, y1] for x0, y0, x1, y1 in three]
    result = _score("bbox_set_map", {f"k{i}": shifted for i in range(fit)}, {f"k{i}": three for i in range(fit)})
    assert fit > 1865
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == pytest.approx(9 / 11)


def test_sequences_and_maps_are_not_limited_by_assignment() -> None:
    assert instance_problems(_instance("point_sequence", _grid_points(5000))) == []
    assert instance_problems(_instance("point_map", {f"k{i}": p for i, p in enumerate(_grid_points(5000))})) == []


def test_budget_grows_with_the_target_between_the_fixed_floor_and_the_caps() -> None:
    small = AssignmentBudget.for_target([10])
    assert (small.cells, small.work) == (AssignmentBudget().cells, MAX_ASSIGNMENT_WORK)
    at_400 = AssignmentBudget.for_target([400])
    assert at_400.work == 400 * 400 * plausible_items(400) > MAX_ASSIGNMENT_WORK
    huge = AssignmentBudget.for_target([1000] * 5)
    assert (huge.cells, huge.work) == (MAX_TARGET_ASSIGNMENT_CELLS, MAX_TARGET_ASSIGNMENT_WORK)
    assert plausible_items(LARGEST) * LARGEST <= MAX_MATRIX_CELLS


def _full_points(preds: list[list[float]], gts: list[list[float]]) -> float:
    """The unreduced solve: scipy on the whole matrix, the pairs' similarity summed."""
    p, g = [(x, y) for x, y in preds], [(x, y) for x, y in gts]
    pairs = assign_pairs(np.asarray(similarity_matrix(p, g, CTX)))
    return math.fsum(similarity(p[i], g[j], CTX) for i, j in pairs)


@pytest.mark.slow
@pytest.mark.parametrize("count", [LARGEST, plausible_items(LARGEST)])
def test_the_worst_plausible_prediction_against_the_largest_valid_set_is_scored_exactly(count: int) -> None:
    # Near-identical points: nothing collapses, no shortcut applies, every row competes
    # for the same targets (scipy's worst case, rows^2 x columns).
    rng = random.Random(24)
    target = [[rng.uniform(0, 1024), rng.uniform(0, 768)] for _ in range(LARGEST)]
    jittered = [[512 + k * 1e-3, 384.0] for k in range(count)]
    result = _score("point_set", jittered, target)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == _full_points(jittered, target) / max(count, LARGEST)


def test_past_the_plausible_size_the_budget_still_stops_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy.optimize

    def forbidden(arr: np.ndarray, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError(f"the solver was called on {arr.shape}")

    # scipy's solver itself, not _scipy_pairs: compiled code calls _scipy_pairs directly, past any patch.
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", forbidden)
    target = _grid_points(400)
    count = 500  # past 400 + 400 // 8 + 1: 400^2 x 500 units, more than the target's budget
    assert 400 * 400 * count > AssignmentBudget.for_target([400]).work
    result = _score("point_set", [[512 + k * 1e-3, 384.0] for k in range(count)], target)
    assert result["annotation_parse_ok"] == 0.0
    assert result["answer_reward"] == 1.0
