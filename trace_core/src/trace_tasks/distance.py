"""The soft pixel-distance kernel and the half-life policy, shared by point-like families.

similarity = exp(-ln 2 * (distance / half_life_px) ** 2): 1 at distance 0, 1/2 at
one half-life. The half-life is the caller's explicit value, else
clamp(0.035 * image diagonal, 20, 80) from the source image size, else 32 px.
"""

from __future__ import annotations

import math

LN2 = math.log(2.0)
DEFAULT_HALF_LIFE_PX = 32.0
#: 0.035 as the exact fraction 35 / 1000: the product is rounded once, so a
#: 640x480 image (diagonal 800) gets exactly 28.0 px, not 0.035 * 800 = 28.000000000000004.
HALF_LIFE_PER_MILLE = 35
HALF_LIFE_MIN_PX = 20.0
HALF_LIFE_MAX_PX = 80.0


def half_life_px(image_size: tuple[float, float] | None, explicit: float | None = None) -> float:
    """The half-life for an image of ``image_size`` (width, height) in pixels."""
    if explicit is not None:
        return explicit
    if image_size is None:
        return DEFAULT_HALF_LIFE_PX
    diagonal = math.hypot(image_size[0], image_size[1])
    return min(max(diagonal * HALF_LIFE_PER_MILLE / 1000, HALF_LIFE_MIN_PX), HALF_LIFE_MAX_PX)


def soft_similarity(distance: float, half_life: float) -> float:
    """exp(-ln 2 * (distance / half_life)^2), 0.0 for non-finite or enormous distances."""
    ratio = distance / half_life
    if not ratio < 40.0:  # also catches NaN; exp(-ln2 * 1600) underflows to 0 anyway
        return 0.0
    return math.exp(-LN2 * ratio * ratio)
