"""The half-life policy: explicit value, else clamp(0.035 * diagonal, 20, 80), else 32 px."""

from __future__ import annotations

import math

import pytest

from trace_tasks.scoring import half_life_px

from .helpers import expected_similarity, reward, score

TARGET = [100, 100]


def _reported(**options: object) -> float:
    return score("point", TARGET, TARGET, **options)["annotation_point_half_life_px"]


def test_documented_640x480_half_life_is_exactly_28() -> None:
    """docs/contracts.md quotes 28 px for 640x480: exactly, not 28.000000000000004."""
    assert half_life_px((640.0, 480.0)) == 28.0
    assert _reported(image_size=[640, 480]) == 28.0


@pytest.mark.parametrize(
    ("image_size", "expected"),
    [
        ([10, 10], 20.0),  # 0.035 * 14.1 = 0.49, clamped up
        ([100, 100], 20.0),
        ([640, 480], 28.0),  # diagonal 800
        ([1000, 0.5], 35.0),  # 0.035 * ~1000
        ([10_000, 10_000], 80.0),  # clamped down
        ([1e12, 1e12], 80.0),
    ],
)
def test_image_diagonal_policy_with_clamps(image_size: list[float], expected: float) -> None:
    assert _reported(image_size=image_size) == pytest.approx(expected, rel=1e-6)
    assert half_life_px(tuple(image_size)) == pytest.approx(expected, rel=1e-6)


def test_missing_or_invalid_size_falls_back_to_32() -> None:
    assert _reported() == 32.0
    assert _reported(image_size=[0, 480]) == 32.0
    assert _reported(image_size=[True, 480]) == 32.0
    assert _reported(image_size="not a size") == 32.0
    assert half_life_px(None) == 32.0


@pytest.mark.parametrize("explicit", [20, 20.0, "20", " 20 "])
def test_explicit_half_life_overrides_image_size(explicit: object) -> None:
    assert _reported(point_half_life_px=explicit, image_size=[10_000, 10_000]) == 20.0
    # And it is the half-life actually used: 20 px away scores exactly one half.
    assert reward("point", [120, 100], TARGET, point_half_life_px=explicit, image_size=[10_000, 10_000]) == pytest.approx(
        0.5, abs=1e-15
    )


@pytest.mark.parametrize("bad", [0, -1, "nan", float("inf"), "twenty", [20]])
def test_bad_explicit_half_life_raises(bad: object) -> None:
    with pytest.raises(ValueError):
        score("point", TARGET, TARGET, point_half_life_px=bad)


def test_size_is_found_in_metadata_and_extra_info() -> None:
    assert _reported(metadata={"image_size": [640, 480]}) == pytest.approx(28.0)
    assert _reported(extra_info={"width": 640, "height": 480}) == pytest.approx(28.0)
    # image_size comes first.
    assert _reported(image_size=[10_000, 10_000], metadata={"image_size": [640, 480]}) == 80.0


def test_image_size_never_transforms_coordinates() -> None:
    # Coordinates far outside a 100x100 image are neither clipped nor normalized:
    # 20 px apart with the clamped half-life of 20 px is exactly one half.
    target = [1000, 1000]
    assert reward("point", [1020, 1000], target, image_size=[100, 100]) == pytest.approx(0.5, abs=1e-15)
    # The same pixel offset on a larger image only changes the scale.
    assert reward("point", [1020, 1000], target, image_size=[640, 480]) == pytest.approx(expected_similarity(20, 28.0), rel=1e-12)
    # An exact hit is 1.0 whatever the image size.
    for size in ([100, 100], [640, 480], [10_000, 10_000]):
        assert reward("point", target, target, image_size=size) == 1.0


def test_half_life_reported_for_every_point_type() -> None:
    cases = {
        "point": [1, 2],
        "point_set": [[1, 2]],
        "point_sequence": [[1, 2]],
        "point_map": {"a": [1, 2]},
        "point_set_map": {"a": [[1, 2]]},
    }
    for annotation_type, value in cases.items():
        result = score(annotation_type, value, value, image_size=[640, 480])
        assert result["annotation_point_half_life_px"] == pytest.approx(28.0), annotation_type
        assert math.isfinite(result["annotation_point_half_life_px"])


def test_no_diagnostics_when_the_prediction_does_not_parse() -> None:
    result = score("point", "nowhere", TARGET, image_size=[640, 480])
    assert result["annotation_parse_ok"] == 0.0
    assert "annotation_point_half_life_px" not in result
