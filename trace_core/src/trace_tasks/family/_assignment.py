"""Maximum-total-similarity one-to-one assignment.

Two solvers give the same optimum:

* :func:`assign_pairs` hands the whole matrix to scipy's Hungarian solver
  (small sets, and the reference the reduced solver is tested against);
* :func:`assign_groups` solves a matrix whose rows and columns stand for
  *groups of identical items* (a repetition loop writes one box 1,000 times)
  without expanding them when it can. scipy's solver costs up to
  rows² x columns on such matrices (every identical row searches through all
  the others: 1.3 s for one box repeated 1,000 times against 1,000 targets),
  so the copies are collapsed first and the solver runs only on what is left,
  charged to an :class:`AssignmentBudget` per response.

Why the reductions are exact (rows are the smaller side, all of them assigned):

* a group of c identical rows can earn at most the sum of its own top-c cells
  (any c distinct columns); if every group can take its top-c positive cells
  without two groups wanting one column more often than it exists, that upper
  bound is reached, so it is the optimum (always the case for one group);
* otherwise each row's partner can be taken among its own top-N columns
  (N rows in all): of those N, at most N - 1 are used by the other rows, and
  swapping to a free one never lowers the total; columns outside every
  group's top-N are dropped, and copies beyond N of one column never matter.

The optimum's value is unique, so summing the chosen cells with ``math.fsum``
(exact before its one rounding) gives the same reward as the full solve.

The budget of a response is sized by its target (:meth:`AssignmentBudget.for_target`):
at least the fixed ``MAX_ASSIGNMENT_CELLS`` / ``MAX_ASSIGNMENT_WORK``, and enough
for the worst plausible prediction (up to ``n + n // MARGIN_DIVISOR + 1`` items per
target set of ``n``) to reach scipy whatever its items, up to
``MAX_TARGET_ASSIGNMENT_CELLS`` / ``MAX_TARGET_ASSIGNMENT_WORK``; validation refuses
a target that needs more. So an honest complete answer is never a parse failure
where the same answer cut short is scored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from trace_tasks.errors import AnnotationParseError
from trace_tasks.limits import (
    MARGIN_DIVISOR,
    MAX_ASSIGNMENT_CELLS,
    MAX_ASSIGNMENT_WORK,
    MAX_MATRIX_CELLS,
    MAX_TARGET_ASSIGNMENT_CELLS,
    MAX_TARGET_ASSIGNMENT_WORK,
)

#: ``(row group, column group, how many pairs)`` of a grouped assignment.
GroupPairs = list[tuple[int, int, int]]


#: Cost of one set matched, in cells: the calls around the matrix and the solver
#: (~15-50 us) cost as much as about a thousand numpy similarity cells.
SET_COST = 1000

#: Cost of one cell of a list matrix (a similarity computed in Python, as the
#: official families do below their numpy crossover): ~8 numpy cells.
LIST_CELL_COST = 8


def plausible_items(target_items: int) -> int:
    """The most predicted items a target set of ``target_items`` is guaranteed to score exactly against."""
    return target_items + target_items // MARGIN_DIVISOR + 1


def target_allowance(set_sizes: Iterable[int]) -> tuple[int, int]:
    """``(cells, work)`` the worst plausible prediction costs against target sets of these sizes.

    Per target set of ``n`` items, a prediction of up to ``p = plausible_items(n)``
    items costs at most :data:`SET_COST` + ``p`` x ``n`` cells at Python cost
    (:data:`LIST_CELL_COST`: whatever the primitive's matrix) and ``n``² x ``p``
    units of solver work (rows² x columns with rows the smaller side, the most
    :func:`assign_groups` charges), whatever the items: nothing collapsed, no
    shortcut taken. Summed over the sets (the keys of a set-map).
    """
    cells = work = 0
    for n in set_sizes:
        p = plausible_items(n)
        cells += SET_COST + LIST_CELL_COST * p * n
        work += n * n * p
    return cells, work


class AssignmentBudget:
    """What one response may spend on assignments, across every key of a set-map.

    ``cells``: the similarity matrices, in units of one numpy cell: each set
    matched costs :data:`SET_COST` plus its distinct predictions x distinct
    targets, a list (pure-Python) matrix :data:`LIST_CELL_COST` per cell.
    ``work``: the solver's worst case, rows² x columns of every matrix handed
    to scipy (its shortest-augmenting-path search can visit every assigned row
    for each new one). Charging past either raises
    :class:`AnnotationParseError`: the annotation is a parse failure.
    :meth:`for_target` sizes both for the target being scored.
    """

    __slots__ = ("cells", "cells_limit", "work", "work_limit")

    def __init__(self, cells: int = MAX_ASSIGNMENT_CELLS, work: int = MAX_ASSIGNMENT_WORK) -> None:
        self.cells = self.cells_limit = cells
        self.work = self.work_limit = work

    @classmethod
    def for_target(cls, set_sizes: Iterable[int]) -> AssignmentBudget:
        """The budget of a response scored against target sets of these sizes (one per set-map key).

        At least the fixed ``MAX_ASSIGNMENT_CELLS`` and ``MAX_ASSIGNMENT_WORK``; more
        when the target needs it for its plausible predictions (:func:`target_allowance`),
        up to ``MAX_TARGET_ASSIGNMENT_CELLS`` and ``MAX_TARGET_ASSIGNMENT_WORK``.
        """
        cells, work = target_allowance(set_sizes)
        return cls(
            max(MAX_ASSIGNMENT_CELLS, min(cells, MAX_TARGET_ASSIGNMENT_CELLS)),
            max(MAX_ASSIGNMENT_WORK, min(work, MAX_TARGET_ASSIGNMENT_WORK)),
        )

    @staticmethod
    def target_problem(set_sizes: Sequence[int]) -> str | None:
        """Why some plausible prediction against target sets of these sizes could fail on a limit, or None.

        A target for which this is None scores every prediction of up to
        :func:`plausible_items` items per set exactly, however degenerate; validation
        refuses one for which it is not, since a complete answer could then fail
        where the same answer cut short is scored.
        """
        for n in set_sizes:
            p = plausible_items(n)
            if p * n > MAX_MATRIX_CELLS:
                return f"a set of {n:,} items: a prediction of {p:,} would need more than MAX_MATRIX_CELLS ({MAX_MATRIX_CELLS:,}) cells"
        cells, work = target_allowance(set_sizes)
        sets = f"{len(set_sizes):,} set{'s' * (len(set_sizes) != 1)} of up to {max(set_sizes, default=0):,} items"
        if cells > MAX_TARGET_ASSIGNMENT_CELLS:
            return (
                f"{sets}: plausible predictions (each set's items plus 1/{MARGIN_DIVISOR} and one) may need "
                f"{cells:,} similarity cells, more than MAX_TARGET_ASSIGNMENT_CELLS ({MAX_TARGET_ASSIGNMENT_CELLS:,})"
            )
        if work > MAX_TARGET_ASSIGNMENT_WORK:
            return (
                f"{sets}: plausible predictions (each set's items plus 1/{MARGIN_DIVISOR} and one) may need "
                f"{work:,} units of solver work, more than MAX_TARGET_ASSIGNMENT_WORK ({MAX_TARGET_ASSIGNMENT_WORK:,})"
            )
        return None

    def charge_cells(self, cells: int) -> None:
        self.cells -= cells
        if self.cells < 0:
            raise AnnotationParseError(f"assignments of this response exceed {self.cells_limit} similarity cells")

    def charge_set(self, cells: int) -> None:
        """Before a matrix of ``cells`` is computed: the set and its cells at numpy cost."""
        self.charge_cells(SET_COST + cells)

    def charge_list(self, cells: int) -> None:
        """After the primitive returned a list matrix of ``cells``: the rest of their Python cost."""
        self.charge_cells((LIST_CELL_COST - 1) * cells)

    def charge_solver(self, rows: int, cols: int) -> None:
        small, large = (rows, cols) if rows <= cols else (cols, rows)
        if small < 2:  # one row or column: a scan, not the solver
            return
        self.work -= small * small * large
        if self.work < 0:
            raise AnnotationParseError(f"assignments of this response exceed the solver budget {self.work_limit}")


def assign_pairs(matrix: Sequence[Sequence[float]] | np.ndarray) -> list[tuple[int, int]]:
    """Index pairs ``(pred, target)`` of a one-to-one assignment maximizing the total.

    Rows are predictions, columns targets; min(rows, cols) pairs are returned.
    Non-finite cells count as 0 so a hostile coordinate cannot break the solver.
    A single row or column needs no solver: its best cell is the optimum.
    """
    if not isinstance(matrix, np.ndarray):
        if len(matrix) == 0 or len(matrix[0]) == 0:
            return []
        if len(matrix) == 1:
            return [(0, _argmax(matrix[0]))]
        if len(matrix[0]) == 1:
            return [(_argmax([row[0] for row in matrix]), 0)]
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.size == 0:
        return []
    if not np.isfinite(arr).all():
        arr = np.where(np.isfinite(arr), arr, 0.0)
    return _scipy_pairs(arr)


def _scipy_pairs(arr: np.ndarray) -> list[tuple[int, int]]:
    # Imported here: scipy costs ~0.1 s to import and answer-only users never need it.
    from scipy.optimize import linear_sum_assignment

    # Rows in a canonical order (sorted by their values): the predictions of a set have no order, and
    # among assignments whose totals tie up to rounding the solver's pick depends on the row order, so
    # a shuffled (or, for segments, reversed) prediction could change the reward's last bit.
    order = np.lexsort(arr.T[::-1])
    rows, cols = linear_sum_assignment(arr[order], maximize=True)
    return list(zip(order[rows].tolist(), cols.tolist(), strict=False))


def _argmax(values: Sequence[float]) -> int:
    best, best_i = -1.0, 0
    for i, v in enumerate(values):
        if v > best and math.isfinite(v):
            best, best_i = v, i
    return best_i


def assign_groups(
    values: np.ndarray, row_counts: Sequence[int], col_counts: Sequence[int], budget: AssignmentBudget
) -> GroupPairs:
    """A maximum assignment of ``sum(row_counts)`` rows to ``sum(col_counts)`` columns.

    ``values[i, j]`` is the similarity of every row of group ``i`` with every
    column of group ``j``; min(rows, columns) pairs are returned as
    ``(i, j, count)``. Non-finite cells count as 0. Only a problem the exact
    shortcuts cannot settle reaches scipy, charged to ``budget`` first.
    """
    arr = np.asarray(values, dtype=np.float64)
    if not np.isfinite(arr).all():
        arr = np.where(np.isfinite(arr), arr, 0.0)
    rows = np.asarray(row_counts, dtype=np.int64)
    cols = np.asarray(col_counts, dtype=np.int64)
    if arr.size == 0 or rows.sum() == 0 or cols.sum() == 0:
        return []
    if rows.sum() > cols.sum():  # make the rows the side that is assigned in full
        return [(i, j, c) for j, i, c in _assign_rows(arr.T, cols, rows, budget)]
    return _assign_rows(arr, rows, cols, budget)


def _assign_rows(arr: np.ndarray, rows: np.ndarray, cols: np.ndarray, budget: AssignmentBudget) -> GroupPairs:
    """:func:`assign_groups` with no more rows than columns: every row is assigned."""
    take = _own_best(arr, rows, cols)
    if take is None:
        return _solve_expanded(arr, rows, cols, budget)
    hit_rows, hit_cols = np.nonzero(take)
    pairs = list(zip(hit_rows.tolist(), hit_cols.tolist(), take[hit_rows, hit_cols].tolist(), strict=True))
    # Rows left over have no positive cell among their top ones: any free column is optimal.
    free_rows = rows - take.sum(axis=1)
    free_cols = cols - take.sum(axis=0)
    j = 0
    for i in np.nonzero(free_rows)[0].tolist():
        need = int(free_rows[i])
        while need:
            while free_cols[j] == 0:
                j += 1
            c = min(need, int(free_cols[j]))
            pairs.append((i, j, c))
            free_cols[j] -= c
            need -= c
    return pairs


def _top_slots(arr: np.ndarray, cols: np.ndarray, wants: np.ndarray) -> np.ndarray:
    """``took[i, j]``: copies of column group ``j`` among row ``i``'s ``wants[i]`` best columns.

    Best first, equal cells in column order (a stable sort), each column group
    offering its ``cols[j]`` copies.
    """
    order = np.argsort(-arr, axis=1, kind="stable")
    slots = cols[order]
    before = np.cumsum(slots, axis=1) - slots
    took = np.zeros(arr.shape, dtype=np.int64)
    np.put_along_axis(took, order, np.clip(wants[:, None] - before, 0, slots), axis=1)
    return took


def _own_best(arr: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray | None:
    """Each row group's top positive cells, ``take[i, j]`` copies, if no column is wanted too often.

    Every group then earns its upper bound at once: the optimum. None when two
    groups want the same column more often than it exists (or a tie hides a
    way out, or a cell is negative, which a primitive never returns): the
    caller solves it properly.
    """
    if arr.min() < 0.0:  # a full assignment may have to take negative cells: only the solver knows which
        return None
    take = np.zeros(arr.shape, dtype=np.int64)
    single = rows == 1
    if single.any():  # one copy: its best column (the first of equal ones)
        idx = np.nonzero(single)[0]
        take[idx, arr[idx].argmax(axis=1)] = 1
    if not single.all():
        idx = np.nonzero(~single)[0]
        take[idx] = _top_slots(arr[idx], cols, rows[idx])
    take[arr <= 0.0] = 0  # zero cells earn nothing: left to the fill-in
    if (take.sum(axis=0) > cols).any():
        return None
    return take


def _solve_expanded(arr: np.ndarray, rows: np.ndarray, cols: np.ndarray, budget: AssignmentBudget) -> GroupPairs:
    """scipy on the copies that can matter: each group's top-N columns, at most N copies of each."""
    n = int(rows.sum())
    keep = np.minimum(cols, n)
    if len(rows) * n < int(keep.sum()):  # the groups' top-N columns cannot cover every column
        keep = _top_slots(arr, keep, np.full(len(rows), n)).max(axis=0)
    budget.charge_solver(n, int(keep.sum()))
    if (rows == 1).all() and (keep == 1).all():  # nothing collapsed or dropped: the matrix as it is
        return [(i, j, 1) for i, j in _scipy_pairs(arr)]
    row_group = np.repeat(np.arange(len(rows)), rows)
    col_group = np.repeat(np.arange(len(cols)), keep)
    pairs = _scipy_pairs(arr[np.ix_(row_group, col_group)])
    counts: dict[tuple[int, int], int] = {}
    for r, c in pairs:
        key = (int(row_group[r]), int(col_group[c]))
        counts[key] = counts.get(key, 0) + 1
    return [(i, j, c) for (i, j), c in counts.items()]
