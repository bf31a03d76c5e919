"""Large sets take the numpy IoU matrix; it must equal the pure-Python path bit for bit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from trace_plugins_bbox import geometry
from trace_plugins_bbox.geometry import iou, iou_matrix, parse_box

from .helpers import score

N = 200


def random_boxes(rng: random.Random, n: int) -> list[list[float]]:
    """Boxes dense enough to overlap a lot, with the awkward cases mixed in."""
    boxes: list[list[float]] = []
    for k in range(n):
        kind = k % 10
        if kind == 0:  # overflowing areas: IoU must come out 0 on both paths
            boxes.append([-1e308, -1e308, 1e308, rng.choice([1e308, 5.0])])
        elif kind == 1:  # tiny: areas underflow to 0
            x, y = rng.uniform(0, 1e-199), rng.uniform(0, 1e-199)
            boxes.append([x, y, x + 1e-200, y + 1e-200])
        elif kind == 2:  # reversed corners, integer pixels
            x, y = rng.randint(0, 100), rng.randint(0, 100)
            boxes.append([x + rng.randint(1, 40), y + rng.randint(1, 40), x, y])
        elif kind == 3:  # negative and far outside any image
            x, y = rng.uniform(-1e6, 1e6), rng.uniform(-1e6, 1e6)
            boxes.append([x, y, x + rng.uniform(1, 1e5), y + rng.uniform(1, 1e5)])
        else:  # ordinary float boxes in a 120-pixel canvas
            x, y = rng.uniform(0, 100), rng.uniform(0, 100)
            boxes.append([x, y, x + rng.uniform(0.5, 30), y + rng.uniform(0.5, 30)])
    return boxes


@pytest.fixture(scope="module")
def sets() -> tuple[list[list[float]], list[list[float]]]:
    rng = random.Random(20240611)
    return random_boxes(rng, N), random_boxes(rng, N)


def test_a_200_by_200_set_takes_the_numpy_path(sets) -> None:
    preds, gts = sets
    assert N * N >= geometry.NUMPY_MIN_CELLS
    matrix = iou_matrix([parse_box(b) for b in preds], [parse_box(b) for b in gts])
    assert isinstance(matrix, np.ndarray)
    assert matrix.dtype == np.float64
    assert matrix.shape == (N, N)


def test_numpy_matrix_equals_pairwise_iou_bit_for_bit(sets) -> None:
    preds = [parse_box(b) for b in sets[0]]
    gts = [parse_box(b) for b in sets[1]]
    fast = iou_matrix(preds, gts)
    slow = np.array([[iou(p, g) for g in gts] for p in preds], dtype=np.float64)
    assert np.count_nonzero(slow) > N  # the sets really overlap
    assert np.count_nonzero((slow > 0) & (slow < 1)) > N
    assert fast.tobytes() == slow.tobytes()


def test_small_matrix_is_plain_python_and_equal(sets) -> None:
    preds = [parse_box(b) for b in sets[0][:5]]
    gts = [parse_box(b) for b in sets[1][:5]]
    assert geometry.NUMPY_MIN_CELLS > 25
    small = iou_matrix(preds, gts)
    assert isinstance(small, list)
    assert small == [[iou(p, g) for g in gts] for p in preds]


def test_python_matrix_equals_pairwise_iou_bit_for_bit(sets) -> None:
    """The small-set path inlines ``iou``: on every awkward pair (overflow, underflow, reversed, far) it must agree."""
    preds = [parse_box(b) for b in sets[0]]
    gts = [parse_box(b) for b in sets[1]]
    inlined = np.array(geometry._python_matrix(preds, gts), dtype=np.float64)
    pairwise = np.array([[iou(p, g) for g in gts] for p in preds], dtype=np.float64)
    assert np.count_nonzero((pairwise > 0) & (pairwise < 1)) > N
    assert inlined.tobytes() == pairwise.tobytes()


def test_corners_read_like_asarray(sets) -> None:
    boxes = [parse_box(b) for b in sets[0]]
    assert geometry._corners(boxes).tobytes() == np.asarray(boxes, dtype=np.float64).tobytes()
    with pytest.raises(ValueError):  # not 4 numbers a box
        geometry._corners([(0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 1.0)])


@pytest.mark.parametrize("annotation_type", ["bbox_set", "bbox_set_map"])
def test_rewards_are_identical_on_both_paths(sets, monkeypatch, annotation_type: str) -> None:
    preds, gts = sets
    if annotation_type == "bbox_set_map":
        pred_value, gt_value = {"cells": preds, "extra": preds[:3]}, {"cells": gts}
    else:
        pred_value, gt_value = preds, gts
    vectorized = score(annotation_type, pred_value, gt_value)
    monkeypatch.setattr(geometry, "NUMPY_MIN_CELLS", 10**12)  # force the pure-Python matrix
    pairwise = score(annotation_type, pred_value, gt_value)
    assert vectorized == pairwise
    assert list(vectorized) == list(pairwise)
    assert vectorized["annotation_parse_ok"] == 1.0
    assert 0.0 < vectorized["annotation_reward"] < 1.0


def test_large_set_matches_a_shuffled_copy_of_itself(sets) -> None:
    preds = sets[0]
    shuffled = preds[:]
    random.Random(7).shuffle(shuffled)
    result = score("bbox_set", shuffled, preds)
    # Every box has an exact twin except the overflowing ones, whose IoU counts as 0.
    overflowing = sum(1 for k in range(N) if k % 10 == 0)
    tiny = sum(1 for k in range(N) if k % 10 == 1)  # areas underflow: IoU 0 as well
    assert result["annotation_reward"] == (N - overflowing - tiny) / N


def test_past_the_assignment_limit_is_a_parse_failure_not_an_exception(caplog) -> None:
    from trace_tasks.limits import MAX_MATRIX_CELLS

    gts = [[k, 0, k + 1, 1] for k in range(1000)]
    preds = gts + [[-5, -5, -4, -4]] * (MAX_MATRIX_CELLS // 1000 + 1 - 1000)
    assert len(preds) * len(gts) > MAX_MATRIX_CELLS
    result = score("bbox_set", preds, gts)
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0
    assert result["answer_reward"] == 1.0
    # Hostile model output, not a plugin failure: nothing is logged as an error.
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_past_the_collection_limit_is_a_parse_failure() -> None:
    from trace_tasks.limits import MAX_COLLECTION_ITEMS

    too_many = [[0, 0, 1, 1]] * (MAX_COLLECTION_ITEMS + 1)
    for annotation_type in ("bbox_set", "bbox_sequence"):
        result = score(annotation_type, too_many, [[0, 0, 1, 1]])
        assert result["annotation_parse_ok"] == 0.0
        assert result["annotation_reward"] == 0.0


# Repetition loops (issue 17): identical predictions are collapsed before solving
# (docs/limits.md, "Assignment cost"); the reward stays the full solve's, bit for bit.

WHOLE_IMAGE = [0, 0, 1024, 768]


def _targets(n: int, seed: int = 5) -> list[list[float]]:
    rng = random.Random(seed)
    boxes = []
    for _ in range(n):
        x, y = rng.uniform(0, 1000), rng.uniform(0, 740)
        boxes.append([x, y, x + rng.uniform(2, 120), y + rng.uniform(2, 90)])
    return boxes


@pytest.fixture
def no_solver(monkeypatch) -> None:
    import scipy.optimize

    def forbidden(arr: np.ndarray, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError(f"the solver was called on {arr.shape}")

    # scipy's solver itself, not _scipy_pairs: compiled code calls _scipy_pairs directly, past any patch.
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", forbidden)


def test_a_thousand_whole_image_boxes_take_every_target_without_the_solver(no_solver) -> None:
    import math

    targets = _targets(1000)
    result = score("bbox_set", [WHOLE_IMAGE] * 1000, targets)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_assigned_count"] == 1000
    whole = parse_box(WHOLE_IMAGE)
    # As many copies as targets: the optimum pairs every target with a copy.
    assert result["annotation_reward"] == math.fsum(iou(whole, parse_box(t)) for t in targets) / 1000


def test_a_set_map_of_five_repeated_keys_scores_each_key_exactly(no_solver) -> None:
    targets = _targets(1000)
    one = score("bbox_set", [WHOLE_IMAGE] * 1000, targets)["annotation_reward"]
    keys = {f"k{i}": [WHOLE_IMAGE] * 1000 for i in range(5)}
    result = score("bbox_set_map", keys, {f"k{i}": targets for i in range(5)})
    assert result["annotation_parse_ok"] == 1.0
    total = 0.0
    for _ in range(5):
        total += one
    assert result["annotation_reward"] == total / 5


@pytest.mark.parametrize("cycle", [2, 3, 5])
def test_a_repeated_cycle_of_boxes_equals_the_full_solve(cycle: int) -> None:
    import math

    from trace_plugins_bbox.plugin import BOX
    from trace_tasks import ScoringContext
    from trace_tasks.family import assign_pairs
    from trace_tasks.family._matching import REDUCE_MIN_CELLS, match_set

    rng = random.Random(cycle)
    loop = [parse_box(t) for t in _targets(cycle, seed=cycle)]
    preds = [loop[k % cycle] for k in range(150)]
    gts = [parse_box(t) for t in _targets(120)] + [parse_box(rng.choice(loop))] * 5
    assert len(preds) * len(gts) >= REDUCE_MIN_CELLS
    ctx = ScoringContext(half_life_px=32.0)
    matched = match_set(preds, gts, BOX, ctx)
    full = assign_pairs(iou_matrix(preds, gts))
    assert matched.total == math.fsum(iou(preds[i], gts[j]) for i, j in full)
    assert len(matched.pairs) == len({i for i, _ in matched.pairs}) == len({j for _, j in matched.pairs}) == 125


def test_many_small_keys_share_the_response_budget() -> None:
    from trace_tasks.family._assignment import LIST_CELL_COST, SET_COST
    from trace_tasks.limits import MAX_ASSIGNMENT_CELLS

    # Three boxes per key: a 3x3 pure-Python matrix, charged per set and per Python cell.
    per_key = SET_COST + 9 * LIST_CELL_COST
    fits = MAX_ASSIGNMENT_CELLS // per_key
    three = [[0, 0, 10, 10], [20, 0, 30, 10], [40, 0, 50, 10]]
    shifted = [[x0 + 1, y0, x1 + 1, y1] for x0, y0, x1, y1 in three]

    def keys(count: int) -> dict[str, list[list[int]]]:
        return {f"k{i}": three for i in range(count)}

    within = score("bbox_set_map", dict.fromkeys(keys(fits), shifted), keys(fits))
    assert within["annotation_parse_ok"] == 1.0
    assert within["annotation_reward"] == pytest.approx(9 / 11)
    # Issue 24: the budget grows with the target, so the same answer for one key more is
    # still scored (it used to fail, while leaving a key out was scored)...
    more = score("bbox_set_map", dict.fromkeys(keys(fits + 1), shifted), keys(fits + 1))
    assert more["annotation_parse_ok"] == 1.0
    assert more["annotation_reward"] == pytest.approx(9 / 11)
    # ...but the keys still share one budget: five far boxes more per key (eight, past the
    # plausible four) spend it.
    padded = shifted + [[500 + 20 * k, 500, 510 + 20 * k, 510] for k in range(5)]
    budget = max(MAX_ASSIGNMENT_CELLS, fits * (SET_COST + 3 * 4 * LIST_CELL_COST))  # four plausible boxes per key
    assert fits * (SET_COST + 3 * len(padded) * LIST_CELL_COST) > budget
    past = score("bbox_set_map", dict.fromkeys(keys(fits), padded), keys(fits))
    assert past["annotation_parse_ok"] == 0.0
    assert past["answer_reward"] == 1.0


def test_a_cycle_of_competing_boxes_past_the_solver_budget_fails_fast(monkeypatch) -> None:
    import scipy.optimize

    # Two boxes that overlap every target, 250 copies each: both groups want the same
    # targets, so the 500 copies go to the solver (500^2 x 1,000 > MAX_ASSIGNMENT_WORK);
    # the budget refuses before scipy runs (it took ~1.2 s).
    def forbidden(arr: np.ndarray, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError(f"the solver was called on {arr.shape}")

    # scipy's solver itself, not _scipy_pairs: compiled code calls _scipy_pairs directly, past any patch.
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", forbidden)
    result = score("bbox_set", [WHOLE_IMAGE, [0, 0, 1000, 700]] * 250, _targets(1000))
    assert result["annotation_parse_ok"] == 0.0
    assert result["answer_reward"] == 1.0
