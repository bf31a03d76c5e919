"""Repetition loops against large target sets: exact rewards without the solver's worst case.

A model stuck in a loop writes one point hundreds of times. scipy's solver
took 1.7 s for 500 copies of ``[512, 384]`` against 2,000 targets; identical
predictions are now collapsed (docs/limits.md, "Assignment cost") and the
reward must be the full solve's, to the last bit.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
import scipy.optimize

from trace_plugins_point.geometry import similarity
from trace_plugins_point.plugin import POINT
from trace_tasks import ScoringContext
from trace_tasks.family._assignment import SET_COST, AssignmentBudget, assign_pairs
from trace_tasks.family._matching import REDUCE_MIN_CELLS, match_set
from trace_tasks.limits import MAX_ASSIGNMENT_WORK, MAX_MATRIX_CELLS, MAX_TARGET_ASSIGNMENT_CELLS

from .helpers import score

IMAGE = [1024, 768]
HALF_LIFE = 35.0
CTX = ScoringContext(half_life_px=HALF_LIFE, image_size=(1024.0, 768.0))
#: Options of every scored call: the half-life the reference uses.
OPTS: dict[str, Any] = {"image_size": IMAGE, "point_half_life_px": HALF_LIFE}


def _targets(n: int, seed: int = 3) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.uniform(0, 1024), rng.uniform(0, 768)] for _ in range(n)]


def _full_solve(preds: list[Any], gts: list[Any]) -> float:
    """The unreduced reference: scipy on the whole matrix, the pairs' similarity summed."""
    matrix = np.array([[similarity(p, g, CTX) for g in gts] for p in preds])
    return math.fsum(similarity(preds[i], gts[j], CTX) for i, j in assign_pairs(matrix))


@pytest.fixture
def no_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(arr: np.ndarray, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError(f"the solver was called on {arr.shape}")

    # scipy's solver itself, not _scipy_pairs: compiled code calls _scipy_pairs directly, past any patch.
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", forbidden)


@pytest.mark.parametrize("mode", ["answer_and_annotation", "answer"])
def test_five_hundred_copies_against_two_thousand_targets_need_no_solver(no_solver: None, mode: str) -> None:
    targets = _targets(2000)
    result = score("point_set", [[512, 384]] * 500, targets, trace_reward_mode=mode, **OPTS)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_assigned_count"] == 500
    # The optimum of one repeated point: its 500 most similar targets.
    cells = sorted((similarity((512.0, 384.0), (x, y), CTX) for x, y in targets), reverse=True)
    assert result["annotation_reward"] == math.fsum(cells[:500]) / 2000
    assert result["annotation_reward"] > 0.0


def test_more_copies_than_targets_take_every_target(no_solver: None) -> None:
    targets = _targets(300)
    result = score("point_set", [[100, 100]] * 1000, targets, **OPTS)
    assert result["annotation_assigned_count"] == 300
    expected = math.fsum(similarity((100.0, 100.0), (x, y), CTX) for x, y in targets) / 1000
    assert result["annotation_reward"] == expected


@pytest.mark.parametrize("cycle", [1, 2, 3, 7])
def test_a_repeated_cycle_equals_the_full_solve(cycle: int) -> None:
    rng = random.Random(cycle)
    loop = [(rng.uniform(400, 600), rng.uniform(300, 400)) for _ in range(cycle)]
    preds = [loop[k % cycle] for k in range(120)]
    gts = [tuple(t) for t in _targets(150)]
    assert len(preds) * len(gts) >= REDUCE_MIN_CELLS  # the reduced path
    matched = match_set(preds, gts, POINT, CTX)
    assert matched.total == _full_solve(preds, gts)
    # The explanation's pairs are a one-to-one assignment whose cells sum to the total.
    assert len(matched.pairs) == 120
    assert len({i for i, _ in matched.pairs}) == len({j for _, j in matched.pairs}) == 120
    assert math.fsum(similarity(preds[i], gts[j], CTX) for i, j in matched.pairs) == matched.total


def test_repeated_targets_collapse_too() -> None:
    gts = [(500.0, 400.0)] * 90 + [tuple(t) for t in _targets(10)]
    preds = [tuple(t) for t in _targets(80, seed=9)]
    matched = match_set(preds, gts, POINT, CTX)
    assert matched.total == _full_solve(preds, gts)
    assert len({j for _, j in matched.pairs}) == 80


def test_set_map_keys_share_one_cell_budget() -> None:
    side = 1000  # a million cells per key: at the per-key cap
    assert side * side == MAX_MATRIX_CELLS
    # Keys this large make the budget as large as a target may (issue 24): the cap.
    assert AssignmentBudget.for_target([side] * 2).cells == MAX_TARGET_ASSIGNMENT_CELLS
    fit = MAX_TARGET_ASSIGNMENT_CELLS // (side * side + SET_COST)
    assert fit >= 2
    points = [[float(k % 40) * 25, float(k // 40) * 30] for k in range(side)]
    within = score("point_set_map", dict.fromkeys("abcdefgh"[:fit], points), dict.fromkeys("abcdefgh"[:fit], points), **OPTS)
    assert within["annotation_parse_ok"] == 1.0
    assert within["annotation_reward"] == 1.0  # every point's best target is its own: no solver needed
    past = score(
        "point_set_map", dict.fromkeys("abcdefgh"[: fit + 1], points), dict.fromkeys("abcdefgh"[: fit + 1], points), **OPTS
    )
    assert past["annotation_parse_ok"] == 0.0
    assert past["annotation_reward"] == 0.0
    assert past["answer_reward"] == 1.0


def test_near_identical_points_past_the_solver_budget_fail() -> None:
    # Distinct points a fraction of a pixel apart all want the same targets: nothing
    # collapses, and scipy's cost is rows^2 x columns.
    def jittered(n: int) -> list[list[float]]:
        return [[512 + k * 1e-3, 384.0] for k in range(n)]

    small = 300
    assert small**3 <= MAX_ASSIGNMENT_WORK < 400**3
    targets = _targets(small)
    within = score("point_set", jittered(small), targets, **OPTS)
    assert within["annotation_parse_ok"] == 1.0
    preds = [tuple(p) for p in jittered(small)]
    assert within["annotation_reward"] == _full_solve(preds, [tuple(t) for t in targets]) / small
    # Issue 24: the budget grows with the target, so 400 of them against 400 targets (past
    # the fixed budget) are scored exactly too: a plausible prediction always is...
    targets = _targets(400)
    at_400 = score("point_set", jittered(400), targets, **OPTS)
    assert MAX_ASSIGNMENT_WORK < 400**3
    assert at_400["annotation_parse_ok"] == 1.0
    preds = [tuple(p) for p in jittered(400)]
    assert at_400["annotation_reward"] == _full_solve(preds, [tuple(t) for t in targets]) / 400
    # ...and 500 (past the plausible 400 + 400 // 8 + 1) still exceed it.
    assert AssignmentBudget.for_target([400]).work < 400 * 400 * 500
    past = score("point_set", jittered(500), targets, **OPTS)
    assert past["annotation_parse_ok"] == 0.0
    assert past["answer_reward"] == 1.0
