"""Pairing predicted items with target items: one-to-one for sets, by index for sequences."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from typing import Any

import attrs
import numpy as np

from trace_tasks.errors import AnnotationParseError
from trace_tasks.family._assignment import AssignmentBudget, assign_groups, assign_pairs
from trace_tasks.family._primitives import Primitive
from trace_tasks.limits import MAX_MATRIX_CELLS
from trace_tasks.plugins import ScoringContext


@attrs.frozen(slots=True)
class Matched:
    """Result of matching one pair of collections.

    ``pairs`` are the ``(prediction index, target index)`` pairs the total was
    summed over; ``None`` for a sequence, whose pairs are ``(i, i)`` for every
    index both sides have (not built on the hot path).
    """

    total: float  # sum of matched similarities
    count: int  # number of matched pairs
    denominator: int  # what the total is divided by
    pairs: Sequence[tuple[int, int]] | None = ()

    def index_pairs(self) -> list[tuple[int, int]]:
        if self.pairs is None:
            return [(i, i) for i in range(self.count)]
        return sorted(self.pairs)


_ONE_PAIR = ((0, 0),)


#: From this many cells (predicted x target items) identical items are collapsed
#: before solving. Below it scipy's worst case is under a millisecond and the
#: plain path, the same since the first release, is the faster one.
REDUCE_MIN_CELLS = 4096


def match_set(
    preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext, budget: AssignmentBudget | None = None
) -> Matched:
    """One-to-one assignment maximizing total similarity; divided by max(pred, gt, 1).

    ``budget`` is the response's assignment budget, shared by every key of a
    set-map (when None, a fresh one sized for ``gts``:
    :meth:`AssignmentBudget.for_target`); spending past it, or a matrix of more
    than ``MAX_MATRIX_CELLS``, raises :class:`AnnotationParseError`.
    """
    n, m = len(preds), len(gts)
    if n == 0 or m == 0:
        return Matched(0.0, 0, max(n, m, 1))
    if n * m > MAX_MATRIX_CELLS:
        raise AnnotationParseError(f"assignment of {n}x{m} items exceeds {MAX_MATRIX_CELLS} cells")
    sim = prim.similarity
    if n == 1 and m == 1:
        return Matched(sim(preds[0], gts[0], ctx), 1, 1, _ONE_PAIR)
    if n * m >= REDUCE_MIN_CELLS:
        return _match_grouped(preds, gts, prim, ctx, AssignmentBudget.for_target((m,)) if budget is None else budget)
    if budget is not None:  # alone, a set this small is far within the budget
        budget.charge_set(n * m)
        budget.charge_solver(n, m)
    # fsum is exact before its one rounding, so the order of the items (a set has
    # none) cannot change the last bit of the reward.
    matrix = prim.matrix(preds, gts, ctx)
    if budget is not None and isinstance(matrix, list):
        budget.charge_list(n * m)
    pairs = assign_pairs(matrix)
    if isinstance(matrix, list):  # already the scalar similarity's own values (Primitive's contract)
        total = math.fsum(matrix[i][j] for i, j in pairs)
    else:  # a vectorized matrix only chose the pairs
        total = math.fsum(sim(preds[i], gts[j], ctx) for i, j in pairs)
    return Matched(total, min(n, m), max(n, m), pairs)


def _groups(items: Sequence[Any]) -> tuple[list[Any], list[list[int]]] | None:
    """Distinct items (first occurrences, in order) and the indices of each one's copies.

    None when every item is distinct, or unhashable (a third-party primitive's
    items are then not collapsed). Items that compare equal score equally (a
    similarity is a function of the items' values), so one row of the matrix
    serves all copies.
    """
    try:
        if len(dict.fromkeys(items)) == len(items):  # hashing in C: the common case costs little
            return None
    except TypeError:
        return None
    index: dict[Hashable, int] = {}
    distinct: list[Any] = []
    members: list[list[int]] = []
    for i, item in enumerate(items):
        group = index.get(item)
        if group is None:
            index[item] = len(distinct)
            distinct.append(item)
            members.append([i])
        else:
            members[group].append(i)
    return distinct, members


def _match_grouped(
    preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext, budget: AssignmentBudget
) -> Matched:
    """:func:`match_set` over distinct items: the matrix and the solver see each value once."""
    n, m = len(preds), len(gts)
    row_groups, col_groups = _groups(preds), _groups(gts)
    rows, row_counts = (preds, [1] * n) if row_groups is None else (row_groups[0], [len(g) for g in row_groups[1]])
    cols, col_counts = (gts, [1] * m) if col_groups is None else (col_groups[0], [len(g) for g in col_groups[1]])
    budget.charge_set(len(rows) * len(cols))
    matrix = prim.matrix(rows, cols, ctx)
    if isinstance(matrix, list):
        budget.charge_list(len(rows) * len(cols))
    groups = assign_groups(np.asarray(matrix, dtype=np.float64), row_counts, col_counts, budget)
    pairs = _index_pairs(groups, row_groups, col_groups)
    if isinstance(matrix, list):  # the similarity's own values (Primitive's contract)
        total = math.fsum(itertools.chain.from_iterable(itertools.repeat(matrix[i][j], c) for i, j, c in groups))
    else:
        sim = prim.similarity
        total = math.fsum(itertools.chain.from_iterable(itertools.repeat(sim(rows[i], cols[j], ctx), c) for i, j, c in groups))
    return Matched(total, min(n, m), max(n, m), pairs)


def _index_pairs(
    groups: list[tuple[int, int, int]],
    row_groups: tuple[list[Any], list[list[int]]] | None,
    col_groups: tuple[list[Any], list[list[int]]] | None,
) -> list[tuple[int, int]]:
    """Item index pairs of a grouped assignment; copies are handed out in index order."""
    if row_groups is None and col_groups is None:
        return [(i, j) for i, j, _ in groups]
    row_next = None if row_groups is None else [iter(g) for g in row_groups[1]]
    col_next = None if col_groups is None else [iter(g) for g in col_groups[1]]
    return [
        (i if row_next is None else next(row_next[i]), j if col_next is None else next(col_next[j]))
        for i, j, count in groups
        for _ in range(count)
    ]


def match_sequence(preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext) -> Matched:
    """Index-aligned similarity; divided by the longer length."""
    sim = prim.similarity
    total = 0.0
    for p, g in zip(preds, gts, strict=False):
        total += sim(p, g, ctx)
    return Matched(total, min(len(preds), len(gts)), max(len(preds), len(gts), 1), None)
