"""Raw IoU against hand computation (exact fractions), directly and through the scorer."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from trace_plugins_bbox.geometry import iou, parse_box

from .helpers import score


def exact_iou(a: list[float], b: list[float]) -> Fraction:
    """IoU in exact rational arithmetic, for boxes given in left/top/right/bottom order."""
    fa, fb = [Fraction(v) for v in a], [Fraction(v) for v in b]
    iw = min(fa[2], fb[2]) - max(fa[0], fb[0])
    ih = min(fa[3], fb[3]) - max(fa[1], fb[1])
    inter = iw * ih if iw > 0 and ih > 0 else Fraction(0)
    union = (fa[2] - fa[0]) * (fa[3] - fa[1]) + (fb[2] - fb[0]) * (fb[3] - fb[1]) - inter
    return inter / union


# (pred, target, IoU written out by hand)
CASES = {
    "disjoint": ([0, 0, 10, 10], [20, 20, 30, 30], Fraction(0)),
    "disjoint-in-x-only": ([0, 0, 10, 10], [11, 0, 21, 10], Fraction(0)),
    "touching-edge": ([0, 0, 10, 10], [10, 0, 20, 10], Fraction(0)),
    "touching-corner": ([0, 0, 10, 10], [10, 10, 20, 20], Fraction(0)),
    "identical": ([3, 4, 17, 9], [3, 4, 17, 9], Fraction(1)),
    "contained": ([2, 2, 4, 4], [0, 0, 10, 10], Fraction(4, 100)),
    "containing": ([0, 0, 10, 10], [2, 2, 4, 4], Fraction(4, 100)),
    "half-shifted": ([5, 0, 15, 10], [0, 0, 10, 10], Fraction(50, 150)),
    "corner-overlap": ([0, 0, 10, 10], [5, 5, 15, 15], Fraction(25, 175)),
    "different-sizes": ([0, 0, 4, 6], [2, 3, 8, 12], Fraction(2 * 3, 24 + 54 - 6)),
    "cross": ([0, 4, 10, 6], [4, 0, 6, 10], Fraction(4, 20 + 20 - 4)),
    "fractional": ([0.5, 0.25, 2.5, 1.25], [1.5, 0.75, 3.5, 2.75], Fraction(1, 2) / (2 + 4 - Fraction(1, 2))),
    "thin": ([0, 0, 1000, 1], [999, 0, 2000, 1], Fraction(1, 1000 + 1001 - 1)),
}


@pytest.mark.parametrize(("pred", "target", "expected"), CASES.values(), ids=CASES.keys())
def test_iou_matches_the_hand_computed_fraction(pred: list[float], target: list[float], expected: Fraction) -> None:
    assert exact_iou(pred, target) == expected  # the hand computation is right
    value = iou(parse_box(pred), parse_box(target))
    # Inputs and intermediate areas are exact in float64, so only the final
    # division rounds: the result is the correctly rounded fraction.
    assert value == float(expected)
    assert iou(parse_box(target), parse_box(pred)) == value  # symmetric
    assert score("bbox", pred, target)["annotation_reward"] == value


@pytest.mark.parametrize(("pred", "target", "expected"), CASES.values(), ids=CASES.keys())
def test_reversed_corners_give_the_same_iou(pred: list[float], target: list[float], expected: Fraction) -> None:
    reversed_pred = [pred[2], pred[3], pred[0], pred[1]]
    mirrored_target = [target[0], target[3], target[2], target[1]]
    assert score("bbox", reversed_pred, mirrored_target)["annotation_reward"] == float(expected)


@pytest.mark.parametrize(
    ("pred", "target"),
    [
        ([-1e308, -1e308, 1e308, 1e308], [-1e308, -1e308, 1e308, 1e308]),  # areas overflow: inf / inf
        ([-1e308, 0, 1e308, 10], [-1e308, 0, 1e308, 10]),  # widths overflow
        ([-1e308, -1e308, 1e308, 1e308], [0, 0, 10, 10]),  # union overflows
        ([0, 0, 1e200, 1e200], [0, 0, 1e200, 1e200]),  # area overflows from finite sides
    ],
    ids=["huge-identical", "overflowing-width", "huge-and-small", "area-overflow"],
)
def test_overflowing_coordinates_give_zero_not_nan(pred: list[float], target: list[float]) -> None:
    value = iou(parse_box(pred), parse_box(target))
    assert value == 0.0
    result = score("bbox", pred, target)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 0.0
    assert all(math.isfinite(v) for v in result.values())


def test_overflow_in_a_set_scores_zero_for_that_pair_only() -> None:
    huge = [-1e308, -1e308, 1e308, 1e308]
    result = score("bbox_set", [huge, [0, 0, 10, 10]], [huge, [0, 0, 10, 10]])
    assert result["annotation_reward"] == 0.5
    assert result["annotation_assigned_iou_mean"] == 0.5
    assert all(math.isfinite(v) for v in result.values())


def test_iou_is_in_unit_interval_for_near_identical_float_boxes() -> None:
    # Rounding must never push a ratio above 1 (which the scorer would then zero).
    a = parse_box([0.1, 0.2, 0.30000000000000004, 0.7])
    b = parse_box([0.1, 0.2, 0.3, 0.7])
    value = iou(a, b)
    assert 0.99 < value <= 1.0
