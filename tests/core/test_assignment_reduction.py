"""The reduced assignment (identical items collapsed) against scipy on the full matrix.

``assign_groups`` must reach the same optimum as ``assign_pairs`` on the
expanded matrix: the same ``math.fsum`` of the chosen cells (the optimum's value
is unique), and its pairs must be a valid one-to-one assignment of
min(rows, columns) pairs.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trace_tasks.errors import AnnotationParseError
from trace_tasks.family import AssignmentBudget, assign_groups, assign_pairs

#: Cell values as a family produces them: exact zeros (no overlap), ones (a
#: perfect match), ties, and arbitrary fractions.
CELL = st.one_of(
    st.just(0.0),
    st.just(1.0),
    st.sampled_from([0.25, 0.5, 1 / 3, 2 / 3, 0.1, 0.2, 0.3]),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_subnormal=False),
)


def _expanded(values: np.ndarray, row_counts: list[int], col_counts: list[int]) -> np.ndarray:
    return values[np.repeat(np.arange(len(row_counts)), row_counts)][:, np.repeat(np.arange(len(col_counts)), col_counts)]


def _check(values: np.ndarray, row_counts: list[int], col_counts: list[int]) -> None:
    full = _expanded(values, row_counts, col_counts)
    reference = assign_pairs(full)
    expected = math.fsum(full[i, j] for i, j in reference)
    groups = assign_groups(values, row_counts, col_counts, AssignmentBudget(work=10**12))
    total = math.fsum(values[i, j] * 1.0 for i, j, c in groups for _ in range(c))
    # Optimal assignments whose exact sums differ only by a cell far below the others' last bit (2.3e-35
    # beside 0.5 + 1/3, found by hypothesis) are equally optimal to the solver: their rounded sums may be
    # one unit in the last place apart, never more.
    assert total == expected or math.isclose(total, expected, rel_tol=2 * sys.float_info.epsilon, abs_tol=0.0)
    # A valid assignment: min(rows, cols) pairs, no group used more often than it has copies.
    assert sum(c for _, _, c in groups) == min(sum(row_counts), sum(col_counts))
    assert all(c > 0 for _, _, c in groups)
    for i, count in enumerate(row_counts):
        assert sum(c for r, _, c in groups if r == i) <= count
    for j, count in enumerate(col_counts):
        assert sum(c for _, k, c in groups if k == j) <= count


@st.composite
def grouped_problems(draw: st.DrawFn) -> tuple[np.ndarray, list[int], list[int]]:
    k = draw(st.integers(1, 5))
    width = draw(st.integers(1, 6))
    values = np.array(draw(st.lists(st.lists(CELL, min_size=width, max_size=width), min_size=k, max_size=k)), dtype=np.float64)
    rows = draw(st.lists(st.integers(1, 12), min_size=k, max_size=k))
    cols = draw(st.lists(st.integers(1, 4), min_size=width, max_size=width))
    return values, rows, cols


@settings(max_examples=150, deadline=None)
@given(grouped_problems())
@example((np.array([[0.0, 0.0], [0.5, 1 / 3], [0.0, 0.0], [0.0, 2.28405071e-35]]), [1, 2, 1, 1], [1, 2]))  # a 1-ulp tie
def test_grouped_optimum_equals_the_full_solve(problem: tuple[np.ndarray, list[int], list[int]]) -> None:
    _check(*problem)


@settings(max_examples=60, deadline=None)
@given(grouped_problems())
def test_transposed_problems_too(problem: tuple[np.ndarray, list[int], list[int]]) -> None:
    values, rows, cols = problem
    _check(values.T.copy(), cols, rows)


@pytest.mark.parametrize("seed", range(40))
def test_random_larger_problems(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy.optimize

    solved = []
    real = scipy.optimize.linear_sum_assignment
    # scipy's solver itself, not _scipy_pairs: compiled code calls _scipy_pairs directly, past any patch.
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", lambda arr, **kw: solved.append(arr.shape) or real(arr, **kw))
    rng = np.random.default_rng(seed)
    forced = seed % 3 == 0  # every row group wants column 0: the shortcut fails and scipy solves
    k = int(rng.integers(2 if forced else 1, 12))
    width = int(rng.integers(2 * k if forced else 1, 40))
    values = rng.uniform(0, 1, (k, width))
    values[rng.uniform(0, 1, (k, width)) < 0.4] = 0.0  # boxes that do not overlap
    rows = rng.integers(1, 3 if forced else 30, k).tolist()  # forced: the rows are the smaller side
    cols = rng.integers(1, 3, width).tolist()
    if forced:
        values[:, 0], cols[0] = 1.0, 1
    _check(values, rows, cols)
    if forced:
        assert len(solved) == 2  # the reference's full solve, then the reduced one
        assert np.prod(solved[1]) <= np.prod(solved[0])  # never more cells than the full matrix


def test_one_group_needs_no_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy.optimize

    def forbidden(arr: np.ndarray, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("the solver was called")

    # scipy's solver itself, not _scipy_pairs: compiled code calls _scipy_pairs directly, past any patch.
    monkeypatch.setattr(scipy.optimize, "linear_sum_assignment", forbidden)
    values = np.random.default_rng(1).uniform(0, 1, (1, 2000))
    groups = assign_groups(values, [500], [1] * 2000, AssignmentBudget(work=0))
    chosen = sorted((values[0, j] for _, j, _ in groups), reverse=True)
    assert chosen == sorted(values[0], reverse=True)[:500]


def test_non_finite_cells_count_as_zero() -> None:
    values = np.array([[math.nan, 0.5], [math.inf, -math.inf]])
    groups = assign_groups(values, [1, 1], [1, 1], AssignmentBudget())
    assert sorted((i, j) for i, j, _ in groups) == [(0, 1), (1, 0)]


def test_the_solver_budget_is_charged_before_solving() -> None:
    values = np.array([[1.0, 0.9, 0.8], [1.0, 0.9, 0.8]])  # both rows want column 0: the solver runs
    budget = AssignmentBudget(work=2 * 2 * 3)
    assign_groups(values, [1, 1], [1, 1, 1], budget)
    assert budget.work == 0
    with pytest.raises(AnnotationParseError, match="solver budget"):
        assign_groups(values, [1, 1], [1, 1, 1], budget)


@pytest.mark.parametrize("seed", range(10))
def test_negative_cells_go_to_the_solver_and_still_match(seed: int) -> None:
    # A primitive never returns them, but a full assignment may have to take them.
    rng = np.random.default_rng(100 + seed)
    values = rng.uniform(-1, 1, (3, 5))
    _check(values, rng.integers(1, 4, 3).tolist(), [1] * 5)


def test_unhashable_items_are_matched_without_collapsing() -> None:
    from trace_tasks import ScoringContext
    from trace_tasks.family import Primitive, pairwise
    from trace_tasks.family._matching import REDUCE_MIN_CELLS, match_set

    def closeness(a: list[float], b: list[float], ctx: ScoringContext) -> float:
        return 1.0 / (1.0 + abs(a[0] - b[0]))

    prim = Primitive(name="tick", similarity=closeness, matrix=pairwise(closeness), metric="similarity")
    rng = np.random.default_rng(5)
    preds = [[float(v)] for v in rng.integers(0, 10, 70)]  # lists: unhashable, many equal
    gts = [[float(v)] for v in rng.integers(0, 10, 70)]
    assert len(preds) * len(gts) >= REDUCE_MIN_CELLS
    ctx = ScoringContext(half_life_px=32.0)
    matched = match_set(preds, gts, prim, ctx)
    full = [[closeness(p, g, ctx) for g in gts] for p in preds]
    assert matched.total == math.fsum(full[i][j] for i, j in assign_pairs(full))
    assert sorted(i for i, _ in matched.pairs) == list(range(70))
