"""The soft pixel-distance kernel shared by point-like families, and their half-life diagnostic.

similarity = exp(-ln 2 * (distance / half_life_px) ** 2): 1 at distance 0, 1/2 at
one half-life. The half-life comes resolved in ``ScoringContext.half_life_px``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from trace_tasks.plugins import ScoringContext

LN2 = math.log(2.0)


def soft_similarity(distance: float, half_life: float) -> float:
    """exp(-ln 2 * (distance / half_life)^2), 0.0 for non-finite or enormous distances."""
    ratio = distance / half_life
    if not ratio < 40.0:  # also catches NaN; exp(-ln2 * 1600) underflows to 0 anyway
        return 0.0
    return math.exp(-LN2 * ratio * ratio)


def half_life_diagnostic(ctx: ScoringContext) -> Mapping[str, float]:
    """``{"annotation_point_half_life_px": ctx.half_life_px}``: a ``Primitive.extra_diagnostics`` for point-like families.

    Reporting the half-life a reward was scored with makes a run's rewards
    comparable across image sizes (the policy scales it with the diagonal).
    """
    return {"annotation_point_half_life_px": ctx.half_life_px}
