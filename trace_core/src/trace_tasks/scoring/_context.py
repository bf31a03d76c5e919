"""The scoring context of a target: its image size and the point half-life policy.

The half-life is the caller's explicit ``point_half_life_px``, else
clamp(0.035 * image diagonal, 20, 80) px from the source image size, else 32 px
(docs/contracts.md, "Points and segments"). A family reads the resolved value
from :attr:`ScoringContext.half_life_px`; it never computes it.
"""

from __future__ import annotations

import math

from trace_tasks.plugins import ScoringContext

DEFAULT_HALF_LIFE_PX = 32.0
#: 0.035 as the exact fraction 35 / 1000: the product is rounded once, so a
#: 640x480 image (diagonal 800) gets exactly 28.0 px, not 0.035 * 800 = 28.000000000000004.
HALF_LIFE_PER_MILLE = 35
HALF_LIFE_MIN_PX = 20.0
HALF_LIFE_MAX_PX = 80.0

Size = tuple[float, float]


def half_life_px(image_size: Size | None, explicit: float | None = None) -> float:
    """The half-life for an image of ``image_size`` (width, height) in pixels."""
    if explicit is not None:
        return explicit
    if image_size is None:
        return DEFAULT_HALF_LIFE_PX
    diagonal = math.hypot(image_size[0], image_size[1])
    return min(max(diagonal * HALF_LIFE_PER_MILLE / 1000, HALF_LIFE_MIN_PX), HALF_LIFE_MAX_PX)


_contexts: dict[tuple[Size | None, float | None], ScoringContext] = {}


def scoring_context(size: Size | None, explicit_half_life: float | None) -> ScoringContext:
    """The :class:`ScoringContext` for an image size and the caller's half-life option (frozen, so shared).

    Built once per distinct pair: a run sees a handful of image sizes, and
    building the record costs more than finding it.
    """
    key = (size, explicit_half_life)
    context = _contexts.get(key)
    if context is None:
        context = ScoringContext(half_life_px(size, explicit_half_life), size)
        if len(_contexts) >= 1024:  # many distinct sizes: keep memory bounded
            _contexts.clear()
        _contexts[key] = context
    return context
