"""The soft pixel-distance kernel shared by point-like families, and their half-life diagnostic.

similarity = exp(-ln 2 * (distance / half_life_px) ** 2): 1 at distance 0, 1/2 at
one half-life. The half-life comes resolved in ``ScoringContext.half_life_px``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from trace_tasks.plugins import ScoringContext

LN2 = math.log(2.0)
#: The diagnostic :func:`half_life_diagnostic` reports.
HALF_LIFE_KEY = "annotation_point_half_life_px"


def soft_similarity(distance: float, half_life: float) -> float:
    """exp(-ln 2 * (distance / half_life)^2), 0.0 for non-finite or enormous distances."""
    ratio = distance / half_life
    if not ratio < 40.0:  # also catches NaN; exp(-ln2 * 1600) underflows to 0 anyway
        return 0.0
    return math.exp(-LN2 * ratio * ratio)


def hypot_grid(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """``math.hypot`` of every pair of cells of ``dx`` and ``dy`` (one shape), as a float64 array of that shape.

    The very distances the scalar similarity computes: numpy's ``hypot`` (and ``exp``) may differ from
    ``math``'s in the last bit, on some inputs and some CPUs (its SIMD dispatch), so a matrix built with them
    could choose a different assignment among near ties than the values the reward sums (issue 41).
    """
    values = map(math.hypot, dx.ravel().tolist(), dy.ravel().tolist())
    return np.fromiter(values, dtype=np.float64, count=dx.size).reshape(dx.shape)


def soft_similarity_grid(distance: np.ndarray, half_life: float) -> np.ndarray:
    """:func:`soft_similarity` of every cell of ``distance``, bit for bit: numpy's exact arithmetic, ``math.exp``."""
    with np.errstate(all="ignore"):
        ratio = distance / half_life
        exponent = np.where(ratio < 40.0, -LN2 * ratio * ratio, -np.inf)  # NaN fails the test too: exp(-inf) is 0.0
    values = map(math.exp, exponent.ravel().tolist())
    return np.fromiter(values, dtype=np.float64, count=distance.size).reshape(distance.shape)


def half_life_diagnostic(ctx: ScoringContext) -> Mapping[str, float]:
    """``{"annotation_point_half_life_px": ctx.half_life_px}``: a ``Primitive.extra_diagnostics`` for point-like families.

    Reporting the half-life a reward was scored with makes a run's rewards
    comparable across image sizes (the policy scales it with the diagonal).
    """
    return {HALF_LIFE_KEY: ctx.half_life_px}
