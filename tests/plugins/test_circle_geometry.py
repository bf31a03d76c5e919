"""The circle example's maths, in-process: closed-form disc IoU against hand results and a raster."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from trace_tasks import AnnotationParseError, score_trace_response

#: Two unit circles with centres 1 apart: two 60° sectors (π/3 each) minus the
#: rhombus of side 1 they share (√3/2) gives the lens 2π/3 - √3/2.
UNIT_LENS = 2 * math.pi / 3 - math.sqrt(3) / 2


@pytest.fixture
def geometry(circle_plugin: Any) -> Any:
    import trace_plugins_circle.geometry as geometry

    return geometry


def test_identical_circles_have_iou_one(geometry: Any) -> None:
    for circle in [(0.0, 0.0, 1.0), (123.5, -7.25, 0.001), (1e6, 1e6, 3e5)]:
        assert geometry.iou(circle, circle) == 1.0


@pytest.mark.parametrize("b", [(5.0, 0.0, 1.0), (2.0, 0.0, 1.0), (0.0, 3.0, 2.0), (-4.0, -4.0, 1.5)])
def test_disjoint_or_tangent_circles_have_iou_zero(geometry: Any, b: tuple[float, float, float]) -> None:
    # (2, 0, 1) and (0, 3, 2) touch the first circle at one point only: area 0.
    assert geometry.iou((0.0, 0.0, 1.0), b) == 0.0
    assert geometry.intersection_area((0.0, 0.0, 1.0), b) == 0.0


@pytest.mark.parametrize(
    ("inner", "outer"),
    [((0.0, 0.0, 1.0), (0.0, 0.0, 2.0)), ((1.0, 0.5, 1.0), (0.0, 0.0, 3.0)), ((3.0, 0.0, 2.0), (0.0, 0.0, 5.0))],
)
def test_contained_circle_iou_is_the_ratio_of_squared_radii(geometry: Any, inner: Any, outer: Any) -> None:
    # The last pair is internally tangent (d = r2 - r1): still fully contained.
    expected = inner[2] ** 2 / outer[2] ** 2
    assert geometry.iou(inner, outer) == pytest.approx(expected, rel=1e-14)
    assert geometry.iou(outer, inner) == pytest.approx(expected, rel=1e-14)


def test_hand_computed_partial_overlap(geometry: Any) -> None:
    a, b = (0.0, 0.0, 1.0), (1.0, 0.0, 1.0)
    assert geometry.intersection_area(a, b) == pytest.approx(UNIT_LENS, rel=1e-14)
    assert geometry.iou(a, b) == pytest.approx(UNIT_LENS / (2 * math.pi - UNIT_LENS), rel=1e-14)
    assert geometry.iou(a, b) == pytest.approx(0.243010, abs=1e-6)  # 1.228370 / 5.054815


def test_unequal_partial_overlap_matches_a_raster(geometry: Any) -> None:
    """An independent check of the lens formula: count grid cells inside both discs."""
    a, b = (0.0, 0.0, 2.0), (2.5, 1.0, 1.5)
    step = 0.002
    xs = np.arange(-2.0, 4.0, step) + step / 2
    ys = np.arange(-2.0, 2.5, step) + step / 2
    x, y = np.meshgrid(xs, ys, sparse=True)
    in_a = (x - a[0]) ** 2 + (y - a[1]) ** 2 <= a[2] ** 2
    in_b = (x - b[0]) ** 2 + (y - b[1]) ** 2 <= b[2] ** 2
    raster = float((in_a & in_b).sum()) / float((in_a | in_b).sum())
    assert 0.05 < raster < 0.95  # a real partial overlap
    assert geometry.iou(a, b) == pytest.approx(raster, abs=1e-3)


def test_iou_is_symmetric_and_shift_invariant(geometry: Any) -> None:
    a, b = (3.0, 4.0, 2.0), (4.5, 5.0, 1.25)
    shifted = [(a[0] + 100, a[1] - 50, a[2]), (b[0] + 100, b[1] - 50, b[2])]
    assert geometry.iou(a, b) == pytest.approx(geometry.iou(b, a), rel=1e-15)
    assert geometry.iou(a, b) == pytest.approx(geometry.iou(*shifted), rel=1e-12)


def test_overflowing_circles_count_as_zero(geometry: Any) -> None:
    huge = (1e308, 1e308, 1e308)
    assert geometry.iou(huge, (0.0, 0.0, 1.0)) == 0.0
    assert geometry.iou(huge, huge) == 0.0


@pytest.mark.parametrize("value", [[0, 0, 0], [0, 0, -1], [0, 0], [0, 0, 1, 1], [True, 0, 1], ["0", 0, 1], None, 7])
def test_parse_rejects_malformed_circles(geometry: Any, value: Any) -> None:
    with pytest.raises(AnnotationParseError):
        geometry.parse_circle(value)


def test_in_process_registration_scores_through_the_public_scorer(register: Any, circle_plugin: Any) -> None:
    register(circle_plugin, "circle")
    contract = {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "circle_set_soft_iou_v0", "type": "circle_set"},
    }
    result = score_trace_response(
        response='{"answer": 2, "annotation": [[1, 0, 1], [40, 40, 8]]}',
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "circle_set", "value": [[40, 40, 8], [0, 0, 1]]},
        reward_contract=contract,
    )
    assert result["annotation_reward"] == pytest.approx((1 + UNIT_LENS / (2 * math.pi - UNIT_LENS)) / 2, rel=1e-14)
    assert result["annotation_assigned_count"] == 2.0
