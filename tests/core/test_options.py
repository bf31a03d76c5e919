"""Scorer options (docs/contracts.md §6 and §5.4): names, validation, half-life."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from trace_tasks import score_trace_response
from trace_tasks.scoring import MAX_POINT_HALF_LIFE_PX

from .helpers import contract, score

CORRECT = '{"answer": 7, "annotation": [0, 0, 10, 10]}'


# --- mode and formula names -------------------------------------------------


@pytest.mark.parametrize("mode", ["answer", "answer_only", " Answer_Only ", "ANSWER", None, "", "auto", "  AUTO "])
def test_answer_mode_names(mode: Any) -> None:
    result = score(CORRECT, trace_reward_mode=mode)
    assert result["trace_reward_mode_answer"] == 1.0
    assert result["trace_reward_mode_answer_only"] == 1.0
    assert result["trace_reward_mode_answer_and_annotation"] == 0.0


@pytest.mark.parametrize("mode", ["answer_and_annotation", "annotation", " Annotation ", "ANSWER_AND_ANNOTATION"])
def test_answer_and_annotation_mode_names(mode: str) -> None:
    result = score(CORRECT, trace_reward_mode=mode)
    assert result["trace_reward_mode_answer"] == 0.0
    assert result["trace_reward_mode_answer_only"] == 0.0
    assert result["trace_reward_mode_answer_and_annotation"] == 1.0


def test_default_mode_is_answer_and_annotation() -> None:
    assert score(CORRECT)["trace_reward_mode_answer_and_annotation"] == 1.0


@pytest.mark.parametrize("mode", ["answers", "both", "annotation-only", 1, True, ["answer"]])
def test_invalid_mode_raises_value_error_listing_accepted_names(mode: Any) -> None:
    with pytest.raises(ValueError) as info:
        score(CORRECT, trace_reward_mode=mode)
    message = str(info.value)
    for name in ("answer", "answer_only", "answer_and_annotation", "annotation", "annotation_only", "grounding"):
        assert repr(name) in message


@pytest.mark.parametrize("formula", ["gated", "answer_gated", "gated_annotation", " Gated ", None, "", "   "])
def test_gated_formula_names(formula: Any) -> None:
    result = score(CORRECT, trace_annotation_reward_formula=formula)
    assert result["trace_annotation_reward_formula_gated"] == 1.0
    assert result["trace_annotation_reward_formula_additive"] == 0.0


@pytest.mark.parametrize("formula", ["additive", "separate", "linear", " LINEAR "])
def test_additive_formula_names(formula: str) -> None:
    result = score(CORRECT, trace_annotation_reward_formula=formula)
    assert result["trace_annotation_reward_formula_gated"] == 0.0
    assert result["trace_annotation_reward_formula_additive"] == 1.0


@pytest.mark.parametrize("formula", ["multiplicative", "sum", "auto", 0, False])
def test_invalid_formula_raises_value_error(formula: Any) -> None:
    with pytest.raises(ValueError):
        score(CORRECT, trace_annotation_reward_formula=formula)


# --- weights ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer_weight", "annotation_weight"),
    [(0, 0), (0.0, 0.0)],
)
def test_non_positive_total_weight_raises(answer_weight: float, annotation_weight: float) -> None:
    with pytest.raises(ValueError):
        score(CORRECT, answer_weight=answer_weight, annotation_weight=annotation_weight)


@pytest.mark.parametrize("option", ["answer_weight", "annotation_weight"])
@pytest.mark.parametrize("value", [-0.1, -1, True, False, math.nan, math.inf, -math.inf, "0.5", None, [0.5]])
def test_invalid_task_weight_raises(option: str, value: Any) -> None:
    with pytest.raises(ValueError):
        score(CORRECT, **{option: value})


def test_negative_weight_raises_even_when_the_sum_is_positive() -> None:
    with pytest.raises(ValueError):
        score(CORRECT, answer_weight=2.0, annotation_weight=-1.0)


@pytest.mark.parametrize("value", [-0.01, 1.01, 2, math.nan, math.inf, -math.inf, True, "0.5", None])
def test_invalid_format_weight_raises(value: Any) -> None:
    with pytest.raises(ValueError):
        score(CORRECT, format_weight=value)


@pytest.mark.parametrize("value", [0, 0.0, 0.3, 1, 1.0, Fraction(1, 4)])
def test_format_weight_bounds_are_inclusive(value: Any) -> None:
    assert score(CORRECT, format_weight=value)["format_weight"] == float(value)


def test_zero_weight_on_one_side_is_allowed() -> None:
    result = score(CORRECT, answer_weight=0, annotation_weight=2)
    assert (result["trace_answer_weight"], result["trace_annotation_weight"]) == (0.0, 1.0)


def test_weights_accept_other_real_numbers() -> None:
    result = score(CORRECT, answer_weight=Fraction(3, 1), annotation_weight=1)
    assert (result["trace_answer_weight"], result["trace_annotation_weight"]) == (0.75, 0.25)


# --- point half-life option -------------------------------------------------


@pytest.mark.parametrize("value", [0, 0.0, -1, -20.5, math.nan, math.inf, "nan", "inf", "abc", "", [20], {}])
def test_invalid_point_half_life_raises(value: Any) -> None:
    with pytest.raises(ValueError):
        score(CORRECT, point_half_life_px=value)


@pytest.mark.parametrize("value", [10**400, -(10**400), "1e400", 1e308, 10_000.5, "20000"])
def test_non_finite_and_absurd_half_lives_raise(value: Any) -> None:
    # 1e308 would score every point 1.0; an int too large for a float overflows.
    with pytest.raises(ValueError, match="point_half_life_px"):
        score(CORRECT, point_half_life_px=value)


def test_half_life_upper_bound_is_inclusive_and_documented() -> None:
    assert MAX_POINT_HALF_LIFE_PX == 10_000.0
    result = score('{"answer": 7, "annotation": [0, 0]}', annotation=[0, 0], annotation_type="point",
                   point_half_life_px=MAX_POINT_HALF_LIFE_PX)  # fmt: skip
    assert result["annotation_point_half_life_px"] == MAX_POINT_HALF_LIFE_PX
    with pytest.raises(ValueError, match="at most 10000 px"):
        score(CORRECT, point_half_life_px=MAX_POINT_HALF_LIFE_PX * 1.0001)


@pytest.mark.parametrize("value", [20, 20.0, "20", " 20 ", Fraction(20, 1)])
def test_point_half_life_is_converted_with_float(value: Any) -> None:
    result = score('{"answer": 7, "annotation": [0, 0]}', annotation=[0, 0], annotation_type="point", point_half_life_px=value)
    assert result["annotation_point_half_life_px"] == 20.0


# --- options before the response ---------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"trace_reward_mode": "nope"},
        {"trace_annotation_reward_formula": "nope"},
        {"answer_weight": 0, "annotation_weight": 0},
        {"answer_weight": -1},
        {"annotation_weight": True},
        {"answer_weight": math.nan},
        {"format_weight": 1.5},
        {"format_weight": math.inf},
        {"point_half_life_px": 0},
        {"point_half_life_px": "x"},
    ],
)
def test_bad_option_raises_even_for_an_empty_response(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        score("", **bad)


@pytest.mark.parametrize("response", [None, b'{"answer": 7}', 7, ['{"answer": 7}'], {"answer": 7}])
def test_non_string_response_is_a_type_error(response: Any) -> None:
    with pytest.raises(TypeError):
        score_trace_response(
            response=response,
            answer_gt={"type": "integer", "value": 7},
            annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
            reward_contract=contract(),
        )


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        score_trace_response('{"answer": 7}', {"type": "integer", "value": 7}, None, None)  # type: ignore[misc]


# --- half-life policy and image-size lookup ----------------------------------

POINT_RESPONSE = '{"answer": 7, "annotation": [0, 0]}'


def half_life(**sources: Any) -> float:
    """The half-life the scorer reports for a point instance given these size sources."""
    result = score(POINT_RESPONSE, annotation=[0, 0], annotation_type="point", **sources)
    return result["annotation_point_half_life_px"]


def test_half_life_of_640_by_480_is_28() -> None:
    assert half_life(image_size=[640, 480]) == pytest.approx(28.0, abs=1e-12)


def test_tiny_image_clamps_to_20() -> None:
    assert half_life(image_size=[10, 10]) == 20.0


def test_huge_image_clamps_to_80() -> None:
    assert half_life(image_size=[5000, 5000]) == 80.0


def test_no_size_falls_back_to_32() -> None:
    assert half_life() == 32.0


def test_half_life_between_the_clamps_is_proportional_to_the_diagonal() -> None:
    assert half_life(image_size=[1000, 1000]) == pytest.approx(0.035 * math.hypot(1000, 1000))


def test_explicit_half_life_overrides_the_image_size() -> None:
    assert half_life(image_size=[640, 480], point_half_life_px=50) == 50.0
    assert half_life(point_half_life_px=7.5) == 7.5


def test_image_size_never_changes_coordinates() -> None:
    # A size that would matter if predictions were rescaled: same point, same reward.
    small = score(POINT_RESPONSE, annotation=[0, 0], annotation_type="point", image_size=[10, 10])
    large = score(POINT_RESPONSE, annotation=[0, 0], annotation_type="point", image_size=[5000, 5000])
    assert small["annotation_reward"] == large["annotation_reward"] == 1.0


def test_half_life_scales_the_point_similarity() -> None:
    # Distance 28 at half-life 28 gives similarity exactly 1/2.
    result = score('{"answer": 7, "annotation": [28, 0]}', annotation=[0, 0], annotation_type="point", image_size=[640, 480])
    assert result["annotation_reward"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "sources",
    [
        {"image_size": [640, 480]},
        {"image_size": (640, 480)},
        {"image_size": "[640, 480]"},
        {"image_size": "(640, 480)"},
        {"image_size": {"width": 640, "height": 480}},
        {"image_sizes": [[640, 480]]},
        {"image_sizes": [[0, 0], [640, 480], [10, 10]]},
        {"image_sizes": [{"w": 640, "h": 480}]},
        {"metadata": {"image_size": [640, 480]}},
        {"metadata": {"source_image_size": [640, 480]}},
        {"metadata": {"image_sizes": [[640, 480]]}},
        {"metadata": {"canvas_size": {"canvas_width": 640, "canvas_height": 480}}},
        {"metadata": {"img_size": "[640, 480]"}},
        {"metadata": {"image_width": 640, "image_height": 480}},
        {"metadata": '{"width": 640, "height": 480}'},
        {"extra_info": {"w": 640, "h": 480}},
        {"extra_info": {"metadata": None, "image_size": [640, 480]}},
    ],
)
def test_image_size_forms(sources: dict[str, Any]) -> None:
    assert half_life(**sources) == pytest.approx(28.0, abs=1e-12)


def test_lookup_order_image_size_first() -> None:
    assert half_life(
        image_size=[640, 480], image_sizes=[[10, 10]], metadata={"image_size": [5000, 5000]}, extra_info=[5000, 5000]
    ) == pytest.approx(28.0)


def test_lookup_order_image_sizes_before_metadata() -> None:
    assert half_life(image_sizes=[[10, 10]], metadata={"image_size": [640, 480]}) == 20.0


def test_lookup_order_metadata_before_extra_info() -> None:
    assert half_life(metadata={"width": 10, "height": 10}, extra_info={"image_size": [640, 480]}) == 20.0


def test_nested_keys_come_before_width_and_height() -> None:
    assert half_life(metadata={"width": 10, "height": 10, "image_size": [640, 480]}) == pytest.approx(28.0)


def test_nested_keys_are_searched_in_order() -> None:
    assert half_life(metadata={"img_size": [10, 10], "source_image_size": [640, 480]}) == pytest.approx(28.0)


def test_first_present_width_key_counts_even_if_invalid() -> None:
    # ``width`` is present but invalid, so ``w`` is not consulted: no size, 32 px.
    assert half_life(metadata={"width": "wide", "w": 640, "height": 480}) == 32.0


@pytest.mark.parametrize(
    "invalid",
    [
        [0, 480],
        [640, 0],
        [-640, 480],
        [True, 480],
        [640, False],
        [math.nan, 480],
        [math.inf, 480],
        ["640", "480"],
        [640],
        [640, 480, 3],
        "not a size",
        {"width": 640},
        {"width": 640, "height": None},
        [10**400, 480],
    ],
)
def test_invalid_sizes_are_skipped(invalid: Any) -> None:
    assert half_life(image_size=invalid) == 32.0
    assert half_life(image_size=invalid, extra_info={"image_size": [640, 480]}) == pytest.approx(28.0)
