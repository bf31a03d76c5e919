"""Every mismatch named from the scorer's own trail (issue 35, item 3): never a reward, only a reading."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.hostile.helpers import contract
from trace_tasks import compile_instance, score_trace_response
from trace_tasks.data import instance_problems
from trace_tasks.errors import InstanceError, OptionError
from trace_tasks.scoring import ANSWER_TAG_IGNORED, THINK, Resize, Trail, options_from, row_mismatches, smart_resize

SIZE = (1920.0, 1080.0)
BOX = [300.0, 200.0, 700.0, 600.0]
POINTS = [[300.0, 200.0], [1500.0, 900.0]]


def instance(annotation_type: str = "bbox", value: Any = BOX, **extra: Any) -> dict[str, Any]:
    return {
        "answer_gt": {"type": "integer", "value": 7},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": contract(annotation_type),
        "image_size": list(SIZE),
        **extra,
    }


def pairs(value: Any, write: Any) -> Any:
    """``value`` with every (x, y) pair of a flat item rewritten by ``write(x, y) -> list``."""
    if isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        return [c for x, y in zip(value[0::2], value[1::2], strict=True) for c in write(x, y)]
    return [pairs(v, write) for v in value]


def explain(response: str, data: dict[str, Any] | None = None, **options: Any) -> tuple[dict[str, float], Trail]:
    return compile_instance(data or instance()).explain(response, options_from(options))


def _resp(annotation: Any, answer: Any = 7) -> str:
    return json.dumps({"answer": answer, "annotation": annotation})


W, H = SIZE
RH, RW = smart_resize(H, W)
STYLES: list[tuple[str, Any]] = [
    ("rel1000", pairs(BOX, lambda x, y: [x / W * 1000, y / H * 1000])),
    ("rel999", pairs(BOX, lambda x, y: [x / W * 999, y / H * 999])),
    ("rel1", pairs(BOX, lambda x, y: [x / W, y / H])),
    ("rel1000_yx", pairs(BOX, lambda x, y: [y / H * 1000, x / W * 1000])),
    ("resized", pairs(BOX, lambda x, y: [x / W * RW, y / H * RH])),
    ("native", [{"bbox_2d": BOX, "label": "box"}]),
    ("native+rel1000", [{"bbox_2d": pairs(BOX, lambda x, y: [x / W * 1000, y / H * 1000])}]),
    ("xywh", [BOX[0], BOX[1], BOX[2] - BOX[0], BOX[3] - BOX[1]]),
]


@pytest.mark.parametrize(("kind", "written"), STYLES, ids=[k for k, _ in STYLES])
def test_each_style_is_named_with_what_it_would_have_scored(kind: str, written: Any) -> None:
    result, trail = explain(_resp(written))
    assert result == compile_instance(instance()).score(_resp(written))  # the trail changes no reward
    assert result["annotation_reward"] < 0.5
    (mismatch,) = row_mismatches(trail)
    assert mismatch.kind == kind
    assert mismatch.reward == pytest.approx(1.0) and mismatch.scored == result["annotation_reward"]


def test_pixels_under_a_declared_frame_are_named_pixel() -> None:
    result, trail = explain(_resp(BOX), prediction_frame="rel1000")
    assert result["annotation_reward"] < 0.5 and result["trace_prediction_frame_rel1000"] == 1.0
    assert [m.kind for m in row_mismatches(trail)] == ["pixel"]


def test_the_resized_reading_uses_the_declared_resize_parameters() -> None:
    params = {"factor": 32, "min_pixels": 4 * 32 * 32, "max_pixels": 512 * 32 * 32}
    rh, rw = smart_resize(H, W, Resize(**params))
    written = pairs(BOX, lambda x, y: [x / W * rw, y / H * rh])
    _, default = explain(_resp(written))
    _, declared = explain(_resp(written), resize=params)
    assert [m.kind for m in row_mismatches(declared)] == ["resized"]
    assert declared.alternatives["resized"] == pytest.approx(1.0)
    assert default.alternatives["resized"] < 0.9


def test_an_honest_row_has_no_mismatch() -> None:
    result, trail = explain(_resp(BOX))
    assert result["annotation_reward"] == 1.0 and row_mismatches(trail) == ()


def test_a_payload_from_inside_think_is_named() -> None:
    response = "<think>" + _resp(BOX) + "</think>I cannot determine this."
    result, trail = explain(response)
    assert result["annotation_reward"] == 1.0  # the contract's recovery: the reward is unchanged
    assert [m.kind for m in row_mismatches(trail)] == [THINK]
    _, outside = explain("<think>draft</think>" + _resp(BOX))
    assert row_mismatches(outside) == ()


def test_answer_tags_ignored_under_final_only_are_named() -> None:
    response = "<think>reasoning</think><answer>" + _resp(BOX) + "</answer>"
    result, trail = explain(response, trace_recovery="final_only")
    # final_only reads the final <answer> pair as the final block; without the tag option its format is 0
    assert result["json_found"] == 1.0 and result["format"] == 0.0
    assert [m.kind for m in row_mismatches(trail)] == [ANSWER_TAG_IGNORED]
    result, trail = explain(response, trace_recovery="final_only", format_accept_answer_tag=True)
    assert result["json_found"] == 1.0 and result["format"] == 1.0 and row_mismatches(trail) == ()


def test_a_set_type_in_rel1000_is_named() -> None:
    data = instance("point_set", POINTS)
    written = pairs(POINTS, lambda x, y: [x / W * 1000, y / H * 1000])
    _, trail = explain(_resp(written), data)
    assert [m.kind for m in row_mismatches(trail)] == ["rel1000"]


def test_the_default_result_keeps_its_keys() -> None:
    plain = score_trace_response(response=_resp(BOX), **instance())
    result, _ = explain(_resp(BOX))
    assert list(result) == list(plain)
    assert not any(key.startswith("trace_prediction_frame") for key in plain)


# --- data tools refuse an instance a declared frame cannot score


def test_validation_names_the_frame_when_the_image_size_is_missing() -> None:
    data = instance()
    del data["image_size"]
    assert instance_problems(data) == []
    (problem,) = instance_problems(data, prediction_frame="rel1000")
    assert problem.path == "$.image_size" and "prediction_frame 'rel1000' needs the image size" in problem.message
    with pytest.raises(InstanceError, match="rel1000"):
        compile_instance(data, prediction_frame="rel1000")
    with pytest.raises(OptionError, match="rel1000"):
        compile_instance(data).score(_resp(BOX), prediction_frame="rel1000")


def test_model_image_size_is_validated_and_used() -> None:
    (problem,) = instance_problems(instance(model_image_size=[0, 10]))
    assert problem.path == "$.model_image_size"
    data = instance(model_image_size=[1000, 500])
    written = pairs(BOX, lambda x, y: [x / W * 1000, y / H * 500])
    assert compile_instance(data).score(_resp(written), prediction_frame="resized")["annotation_reward"] == pytest.approx(1.0)
    assert score_trace_response(response=_resp(written), prediction_frame="resized", **instance(), model_image_size=[1000, 500])[
        "annotation_reward"
    ] == pytest.approx(1.0)


def test_every_door_takes_the_frame_options() -> None:
    """score_instance, score_trace_batch, score_group and a trainer factory score a declared frame alike."""
    from trace_tasks import score_instance, score_trace_batch
    from trace_tasks.integrations import verl

    data = instance(model_image_size=[1000, 500])
    written = [{"bbox_2d": pairs(BOX, lambda x, y: [x / W * 1000, y / H * 1000]), "label": "box"}]
    response = _resp(written)
    options = {"prediction_frame": "rel1000", "annotation_native": True}
    expected = score_trace_response(response=response, **instance(), **options)
    assert expected["annotation_reward"] == pytest.approx(1.0)
    assert score_instance(data, response, **options)["annotation_reward"] == expected["annotation_reward"]
    assert score_trace_batch([{**data, "response": response}], **options)[0]["annotation_reward"] == expected["annotation_reward"]
    assert compile_instance(data).score_group([response], **options)[0]["annotation_reward"] == expected["annotation_reward"]
    compute_score = verl.make_compute_score(**options)
    got = compute_score("trace", response, json.dumps(data), {})
    assert isinstance(got, dict) and got["annotation_reward"] == expected["annotation_reward"]
    error = score_trace_batch([{**instance(), "image_size": None, "response": response}], prediction_frame="rel1000")[0]
    assert "OptionError" in str(error["error"]) and "rel1000" in str(error["error"])
