"""Pairing predicted items with target items: one-to-one for sets, by index for sequences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from trace_tasks.assignment import assign_pairs
from trace_tasks.errors import AnnotationParseError
from trace_tasks.limits import MAX_MATRIX_CELLS
from trace_tasks.primitives import Primitive
from trace_tasks.specs import ScoringContext


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


def match_set(preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext) -> Matched:
    """One-to-one assignment maximizing total similarity; divided by max(pred, gt, 1)."""
    n, m = len(preds), len(gts)
    if n == 0 or m == 0:
        return Matched(0.0, 0, max(n, m, 1))
    if n * m > MAX_MATRIX_CELLS:
        raise AnnotationParseError(f"assignment of {n}x{m} items exceeds {MAX_MATRIX_CELLS} cells")
    sim = prim.similarity
    if n == 1 and m == 1:
        return Matched(sim(preds[0], gts[0], ctx), 1, 1, _ONE_PAIR)
    # fsum is exact before its one rounding, so the order of the items (a set has
    # none) cannot change the last bit of the reward.
    matrix = prim.matrix(preds, gts, ctx)
    pairs = assign_pairs(matrix)
    if isinstance(matrix, list):  # already the scalar similarity's own values (Primitive's contract)
        total = math.fsum(matrix[i][j] for i, j in pairs)
    else:  # a vectorized matrix only chose the pairs
        total = math.fsum(sim(preds[i], gts[j], ctx) for i, j in pairs)
    return Matched(total, min(n, m), max(n, m), pairs)


def match_sequence(preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext) -> Matched:
    """Index-aligned similarity; divided by the longer length."""
    sim = prim.similarity
    total = 0.0
    for p, g in zip(preds, gts, strict=False):
        total += sim(p, g, ctx)
    return Matched(total, min(len(preds), len(gts)), max(len(preds), len(gts), 1), None)
