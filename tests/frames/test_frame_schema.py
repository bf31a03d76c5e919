"""Prompts and schemas speak the declared frame (issue 35, item 1): ``prediction_frame=`` on both, and the CLI flag."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.helpers import run_cli
from trace_tasks import format_instructions, response_json_schema
from trace_tasks.errors import OptionError
from trace_tasks.scoring import smart_resize


def _instance(annotation_type: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": "a",
        "answer_gt": {"type": "integer", "value": 1},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": f"{annotation_type}_soft_iou_v0" if "bbox" in annotation_type else "x", "type": annotation_type},
        },
        **extra,
    }


def _numbers(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [n for item in node for n in _numbers(item)]
    if not isinstance(node, dict):
        return []
    own = [node] if node.get("type") in ("number", "integer") else []
    return own + [n for value in node.values() for n in _numbers(value)]


@pytest.mark.parametrize("annotation_type", ["bbox", "bbox_set", "point", "point_map", "segment"])
def test_pixel_is_the_default_byte_for_byte(annotation_type: str) -> None:
    kwargs = {"answer_type": "integer", "annotation_type": annotation_type}
    assert response_json_schema(**kwargs, prediction_frame="pixel") == response_json_schema(**kwargs)
    assert format_instructions(**kwargs, prediction_frame="pixel") == format_instructions(**kwargs)


@pytest.mark.parametrize(
    ("frame", "maximum", "kind"),
    [("rel1000", 1000, "integer"), ("rel1000_yx", 1000, "integer"), ("rel999", 999, "integer"), ("rel1", 1, "number")],
)
@pytest.mark.parametrize("annotation_type", ["bbox", "bbox_set", "point", "point_sequence", "segment"])
def test_relative_frames_bound_every_coordinate(annotation_type: str, frame: str, maximum: int, kind: str) -> None:
    schema = response_json_schema(answer_type="integer", annotation_type=annotation_type, prediction_frame=frame)
    annotation = schema["properties"]["annotation"]
    numbers = _numbers(annotation)
    assert numbers and all(n["type"] == kind and n["minimum"] == 0 and n["maximum"] == maximum for n in numbers)
    assert f"written in the {frame} frame" in annotation["description"] and frame in schema["description"]
    assert _numbers(schema["properties"]["answer"]) == [{"description": "a whole number", "type": "integer"}]
    text = format_instructions(answer_type="integer", annotation_type=annotation_type, prediction_frame=frame)
    assert f"from 0 to {maximum}" in text and "Do not normalise" not in text
    assert ("Write y first" in text) == (frame == "rel1000_yx")
    assert "Example:" not in text  # the types' examples are pixels


def test_resized_bounds_come_from_the_instance() -> None:
    inst = _instance("bbox", [10, 10, 50, 50], image_size=[1920, 1080])
    height, width = smart_resize(1080, 1920)
    schema = response_json_schema(instance=inst, prediction_frame="resized")
    assert {n["maximum"] for n in _numbers(schema["properties"]["annotation"])} == {float(max(width, height))}
    assert f"{width}x{height} input" in schema["description"]
    text = format_instructions(instance=inst, prediction_frame="resized")
    assert f"the {width}x{height} image you are given" in text
    declared = _instance("bbox", [10, 10, 50, 50], image_size=[1920, 1080], model_image_size=[640, 360])
    schema = response_json_schema(instance=declared, prediction_frame="resized")
    assert {n["maximum"] for n in _numbers(schema["properties"]["annotation"])} == {640.0}
    # Without an instance the resized input is unknown: the schema says so and bounds nothing.
    schema = response_json_schema(answer_type="integer", annotation_type="bbox", prediction_frame="resized")
    assert all("maximum" not in n for n in _numbers(schema["properties"]["annotation"]))


def test_a_bad_frame_is_an_option_error() -> None:
    with pytest.raises(OptionError, match="prediction_frame"):
        response_json_schema(answer_type="integer", annotation_type="bbox", prediction_frame="rel100")


def test_schema_command_takes_the_frame() -> None:
    done = run_cli("schema", "--answer-type", "integer", "--annotation-type", "point", "--prediction-frame", "rel1000")
    assert done.returncode == 0
    items = _numbers(json.loads(done.stdout)["properties"]["annotation"])
    assert items and all(n["maximum"] == 1000 and n["type"] == "integer" for n in items)
    done = run_cli(
        "schema", "--answer-type", "integer", "--annotation-type", "point", "--instructions", "--prediction-frame", "rel1000_yx"
    )
    assert done.returncode == 0 and b"a point as [y, x]" in done.stdout
    plain = run_cli("schema", "--answer-type", "integer", "--annotation-type", "point")
    assert (
        plain.stdout
        == run_cli("schema", "--answer-type", "integer", "--annotation-type", "point", "--prediction-frame", "pixel").stdout
    )


def test_the_bounds_are_checked_by_schema_problems() -> None:
    from trace_tasks.family import schema_problems

    schema = response_json_schema(answer_type="integer", annotation_type="bbox", prediction_frame="rel1000")
    assert schema_problems({"answer": 1, "annotation": [100, 200, 300, 400]}, schema) == []
    assert schema_problems({"answer": 1, "annotation": [100, 200, 1200, 400]}, schema)
    assert schema_problems({"answer": 1, "annotation": [100.5, 200, 300, 400]}, schema)


OFFICIAL_TYPES = [
    f"{family}{shape}" for family in ("bbox", "point") for shape in ("", "_set", "_sequence", "_map", "_set_map")
] + ["segment", "segment_set"]
#: A y-first frame's words write y first; every other frame's write x first.
ORDER = {
    "rel1000_yx": ("[y", "[x"),
    "rel1000": ("[x", "[y"),
    "rel999": ("[x", "[y"),
    "rel1": ("[x", "[y"),
    "resized": ("[x", "[y"),
}


def _annotation_words(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith('- "annotation":')]
    return line


@pytest.mark.parametrize("frame", sorted(ORDER))
@pytest.mark.parametrize("annotation_type", OFFICIAL_TYPES)
def test_in_a_declared_frame_the_value_words_do_not_say_pixels_nor_the_other_order(annotation_type: str, frame: str) -> None:
    # The value's words said "in pixels of the image" (and x first) beside a frame sentence asking for 0-1000, y first.
    text = format_instructions(annotation_type=annotation_type, trace_reward_mode="annotation_only", prediction_frame=frame)
    words = _annotation_words(text)
    first, other = ORDER[frame]
    assert "pixels" not in words and first in words and other not in words, words
    schema = response_json_schema(annotation_type=annotation_type, trace_reward_mode="annotation_only", prediction_frame=frame)
    described = schema["properties"]["annotation"]["description"]
    assert "in pixels of the image" not in described and first in described and other not in described, described
    pixel = _annotation_words(format_instructions(annotation_type=annotation_type, trace_reward_mode="annotation_only"))
    assert "pixels of the image" in pixel and "[x" in pixel  # the default prompt unchanged


@pytest.mark.parametrize("frame", sorted(ORDER))
def test_a_click_version_says_its_point_in_the_frame(frame: str) -> None:
    from trace_tasks import pin_reward_id, unpin_reward_id

    pin_reward_id("bbox", "bbox_click_hit_v0")
    try:
        text = format_instructions(annotation_type="bbox", trace_reward_mode="annotation_only", prediction_frame=frame)
    finally:
        unpin_reward_id("bbox")
    words = _annotation_words(text)
    first, other = ORDER[frame]
    assert "one point" in words and "pixels" not in words and first in words and other not in words, words
