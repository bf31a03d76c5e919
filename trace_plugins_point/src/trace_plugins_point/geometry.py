"""Points ``[x, y]`` in pixels and their soft-distance similarity.

The kernel and the half-life policy live in the core (``trace_tasks.family._distance``),
shared with the segment family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from trace_tasks.family import ScoringContext, coordinates, hypot_grid, is_flat, soft_similarity, soft_similarity_grid

Point = tuple[float, float]

#: Below this many cells a Python double loop beats numpy's per-call overhead.
#: Measured crossover of the whole set match (matrix, assignment, re-sum) at
#: 6x6 items: see ``benchmarks/bench_scoring.py`` and benchmarks/README.md.
NUMPY_MIN_CELLS = 36


def parse_point(value: Any) -> Point:
    """Exactly two finite, non-boolean numbers; image size never rescales them."""
    x, y = coordinates(value, 2)
    return (x, y)


def is_point(value: Any) -> bool:
    return is_flat(value, 2)


def similarity(a: Point, b: Point, ctx: ScoringContext) -> float:
    """exp(-ln 2 * (distance / half_life)^2)."""
    return soft_similarity(math.hypot(a[0] - b[0], a[1] - b[1]), ctx.half_life_px)


def similarity_matrix(preds: Sequence[Point], gts: Sequence[Point], ctx: ScoringContext) -> Any:
    """Pairwise similarity (rows: predictions), float64; numpy only for large sets.

    Used to choose the assignment; the reported total is re-summed with
    :func:`similarity`, so the two paths cannot disagree on the reward.
    """
    if len(preds) * len(gts) < NUMPY_MIN_CELLS:
        return [[similarity(p, g, ctx) for g in gts] for p in preds]
    p = np.asarray(preds, dtype=np.float64)
    g = np.asarray(gts, dtype=np.float64)
    with np.errstate(all="ignore"):  # exact differences; an overflow is an infinite distance, similarity 0
        dx = p[:, None, 0] - g[None, :, 0]
        dy = p[:, None, 1] - g[None, :, 1]
    # math.hypot and math.exp, as similarity computes them: the pairs are chosen on the values the reward sums
    return soft_similarity_grid(hypot_grid(dx, dy), ctx.half_life_px)
