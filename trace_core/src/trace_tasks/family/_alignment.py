"""Order-preserving alignment of two sequences, and a family that offers it as a reward version.

The index-aligned sequence reward (``match_sequence``) pairs item i with item i:
one missing item shifts every later pair, so an honest answer that skips its
first item can score below n copies of one central item written blind to the
image (``docs/limits.md``, "Sequence rewards"). :func:`match_aligned` pairs
items in order instead: pairs never cross (if predicted i goes with target j,
every later prediction goes with a later target), and an item left out of
every pair (a gap) earns nothing, so it costs exactly its share of the
denominator, ``max(len(pred), len(gt))`` as for the index-aligned reward. The
pairs maximise the summed similarity (a weighted longest common subsequence,
Needleman-Wunsch with zero gap scores).

Because index alignment is one order-preserving alignment among others, the
aligned reward of a prediction is never below its index-aligned reward (up to
the last bit of the similarity matrix) and equals it whenever nothing is
missing, extra or swapped.

:class:`AlignedShapeFamily` is a :class:`~trace_tasks.family.ShapeFamily`
whose ``aligned`` reward ids (each offered by a ``sequence`` type, never its
default) are scored by this alignment; the box and point families use it for
``bbox_sequence_aligned_iou_v0`` and ``point_sequence_aligned_distance_v0``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from trace_tasks.errors import AnnotationParseError, FamilyDefinitionError
from trace_tasks.family._matching import Matched
from trace_tasks.family._primitives import Primitive
from trace_tasks.family._scoring import Scorer, Trail, make_explainer
from trace_tasks.family._shapes import ShapeFamily, TypeRow
from trace_tasks.limits import MAX_MATRIX_CELLS
from trace_tasks.plugins import AnnotationExplanation, AnnotationScore, ScoringContext

__all__ = ["ALIGNED_METHOD", "AlignedShapeFamily", "make_aligned_scorer", "match_aligned"]

#: The ``method`` an explanation of an aligned reward names.
ALIGNED_METHOD = "order-preserving alignment"


def _table(matrix: Any) -> Any:
    """The dynamic-programming table: ``D[i, j]`` is the best total of the first i predictions against the first j targets.

    ``D[i, j] = max(D[i-1, j], D[i, j-1], D[i-1, j-1] + S[i-1, j-1])``. Along a row
    the table never decreases, so a row is the running maximum of
    ``max(D[i-1, j], D[i-1, j-1] + S[i-1, j-1])``: one numpy pass per prediction.
    """
    sim = np.asarray(matrix, dtype=np.float64)
    n, m = sim.shape
    table = np.zeros((n + 1, m + 1), dtype=np.float64)
    for i in range(1, n + 1):
        prev = table[i - 1]
        np.maximum.accumulate(np.maximum(prev[1:], prev[:-1] + sim[i - 1]), out=table[i, 1:])
    return table


def _traceback(table: Any) -> list[tuple[int, int]]:
    """The pairs of one optimal alignment, in order; a gap is preferred on a tie (a pair of similarity 0 is no pair)."""
    # At most n + m steps of three lookups each: the table is not converted to lists.
    i, j = table.shape[0] - 1, table.shape[1] - 1
    pairs: list[tuple[int, int]] = []
    while i > 0 and j > 0:
        here = table[i, j]
        if here == table[i - 1, j]:
            i -= 1
        elif here == table[i, j - 1]:
            j -= 1
        else:  # neither gap reaches this total: the diagonal step did
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
    pairs.reverse()
    return pairs


def match_aligned(preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext) -> Matched:
    """Order-preserving alignment maximising the summed similarity; divided by max(pred, gt, 1).

    Pairs never cross and an unpaired item earns 0. The cost is the similarity
    matrix plus one numpy pass per prediction, ``O(len(pred) x len(gt))``: a
    matrix of more than ``MAX_MATRIX_CELLS`` cells raises
    :class:`AnnotationParseError` (the response fails, as for a set that large).
    The total is summed (``math.fsum``) over the chosen pairs from the
    primitive's scalar similarity, as :func:`match_set` does.
    """
    n, m = len(preds), len(gts)
    if n == 0 or m == 0:
        return Matched(0.0, 0, max(n, m, 1), [])
    if n * m > MAX_MATRIX_CELLS:
        raise AnnotationParseError(f"alignment of {n}x{m} items exceeds {MAX_MATRIX_CELLS} cells")
    matrix = prim.matrix(preds, gts, ctx)
    pairs = _traceback(_table(matrix))
    if isinstance(matrix, list):  # already the scalar similarity's own values (Primitive's contract)
        total = math.fsum(matrix[i][j] for i, j in pairs)
    else:  # a vectorized matrix only chose the pairs
        sim = prim.similarity
        total = math.fsum(sim(preds[i], gts[j], ctx) for i, j in pairs)
    return Matched(total, len(pairs), max(n, m), pairs)


def make_aligned_scorer(prim: Primitive) -> Scorer:
    """The score function ``(prediction, target, context, trail=None)`` of a sequence scored by :func:`match_aligned`.

    The reward and the diagnostics are those of the index-aligned sequence
    scorer (``annotation_pred_len``, ``annotation_gt_len``,
    ``annotation_assigned_count``, ``annotation_assigned_<metric>_mean``), over
    the aligned pairs.
    """
    mean_key = f"annotation_assigned_{prim.metric}_mean"
    extra = prim.extra_diagnostics or (lambda ctx: {})

    def aligned(pred: list[Any], gt: list[Any], ctx: ScoringContext, trail: Trail = None) -> AnnotationScore:
        matched = match_aligned(pred, gt, prim, ctx)
        if trail is not None:
            trail.append(("", matched))
        reward = 1.0 if not pred and not gt else matched.total / matched.denominator
        diag = {
            "annotation_pred_len": float(len(pred)),
            "annotation_gt_len": float(len(gt)),
            "annotation_assigned_count": float(matched.count),
            mean_key: matched.total / matched.count if matched.count else 0.0,
        }
        return AnnotationScore(reward, {**diag, **extra(ctx)})

    return aligned


class AlignedShapeFamily(ShapeFamily):
    """A :class:`ShapeFamily` whose ``aligned`` reward ids are scored by order-preserving alignment.

    Each id in ``aligned`` must be one a ``sequence`` type of ``types`` offers,
    and not its default (the first): an aligned version is pinnable, never
    current by itself. Every other id is scored as :class:`ShapeFamily` scores it.
    """

    def __init__(
        self,
        primitive: Primitive,
        types: Mapping[str, TypeRow],
        *,
        aligned: Collection[str],
        versions: Mapping[str, Primitive] | None = None,
    ) -> None:
        super().__init__(primitive, types, versions=versions)
        for rid in aligned:
            owner = next(((name, ids) for name, (_, ids) in self.types.items() if rid in ids), None)
            if owner is None:
                raise FamilyDefinitionError(f"aligned names reward id {rid!r}, which no type offers")
            name, ids = owner
            if self.types[name][0] != "sequence":
                raise FamilyDefinitionError(f"aligned reward id {rid!r} belongs to {name!r}, which is not a sequence type")
            if ids[0] == rid:
                raise FamilyDefinitionError(
                    f"aligned reward id {rid!r} is the default of {name!r}; list it after the default so it is only pinned"
                )
            prim = self.rewards[rid][2]
            scorer = make_aligned_scorer(prim)
            explain = make_explainer("sequence", prim, scorer)
            self.scorers[rid] = scorer
            self.explainers[rid] = _renamed(explain)


def _renamed(explain: Any) -> Any:
    """An explainer of the sequence shape whose explanations name :data:`ALIGNED_METHOD`."""

    def aligned(pred: Any, gt: Any, ctx: ScoringContext) -> AnnotationExplanation:
        explanation: AnnotationExplanation = explain(pred, gt, ctx)
        return attrs.evolve(explanation, method=ALIGNED_METHOD)

    return aligned
