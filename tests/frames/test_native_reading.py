"""Model-native output read as the annotation, opt-in (issue 35, item 2): ``annotation_native=True``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.hostile.helpers import score
from trace_tasks.errors import OptionError

BOX, OTHER = [10, 10, 50, 50], [100, 100, 140, 140]
P, Q = [20, 30], [70, 80]
SEGMENT = [[0, 0], [100, 0]]

#: (annotation type, target in the contract's shape, what the model wrote natively)
NATIVE: list[tuple[str, Any, Any]] = [
    ("bbox", BOX, [{"bbox_2d": BOX, "label": "cat"}]),  # a one-item list for a scalar type
    ("bbox", BOX, {"bbox_2d": BOX}),  # a single object
    ("bbox", BOX, [BOX]),  # a one-item list holding the box
    ("bbox_set", [BOX, OTHER], [{"bbox_2d": OTHER}, {"bbox_2d": BOX}]),
    ("bbox_sequence", [BOX, OTHER], [{"bbox_2d": BOX, "label": "1"}, {"bbox_2d": OTHER, "label": "2"}]),
    ("bbox_map", {"cat": BOX, "dog": OTHER}, [{"bbox_2d": OTHER, "label": "dog"}, {"bbox_2d": BOX, "label": " cat "}]),
    ("bbox_set_map", {"cat": [BOX, OTHER]}, [{"bbox_2d": BOX, "label": "cat"}, {"bbox_2d": OTHER, "label": "cat"}]),
    ("point", P, [{"point_2d": P}]),
    ("point_set", [P, Q], [{"point_2d": Q, "label": "x"}, {"point_2d": P, "label": "y"}]),
    ("point_sequence", [P, Q], [{"point_2d": P}, {"point_2d": Q}]),
    ("point_map", {"start": P, "end": Q}, [{"point_2d": P, "label": "start"}, {"point_2d": Q, "label": "end"}]),
    ("point_set_map", {"a": [P], "b": [Q]}, [{"point_2d": P, "label": "a"}, {"point_2d": Q, "label": "b"}]),
    ("segment", SEGMENT, [{"line_2d": SEGMENT}]),
    ("segment_set", [SEGMENT], [{"line_2d": SEGMENT}]),
]


def _resp(annotation: Any) -> str:
    return json.dumps({"answer": 7, "annotation": annotation})


@pytest.mark.parametrize(("annotation_type", "target", "native"), NATIVE, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(NATIVE)])
def test_a_native_value_scores_what_its_contract_shape_scores(annotation_type: str, target: Any, native: Any) -> None:
    honest = score(_resp(target), annotation_type=annotation_type, annotation=target)
    off = score(_resp(native), annotation_type=annotation_type, annotation=target)
    on = score(_resp(native), annotation_type=annotation_type, annotation=target, annotation_native=True)
    assert off["annotation_reward"] == 0.0 and off["annotation_native_format"] == 1.0  # the default: diagnosed only
    assert "trace_annotation_native" not in off
    assert on["annotation_reward"] == honest["annotation_reward"] == 1.0
    assert on["annotation_parse_ok"] == 1.0 and on["annotation_native_format"] == 1.0
    assert on["trace_annotation_native"] == 1.0 and on["trace_prediction_frame_pixel"] == 1.0


def test_native_reading_of_a_value_in_the_contract_shape_changes_no_reward() -> None:
    plain = score(_resp(BOX), annotation=BOX)
    on = score(_resp(BOX), annotation=BOX, annotation_native=True)
    assert {k: v for k, v in on.items() if k in plain} == plain
    assert "annotation_native_format" not in on  # it parsed: nothing native was read


def test_qwen3_native_output_in_rel1000_scores_its_pixel_reward() -> None:
    """Qwen3-VL writes ``[{"bbox_2d": [...], "label": ...}]`` over 0-1000: native reading and the frame together."""
    size = [200, 400]
    rel = [[v / size[i % 2] * 1000 for i, v in enumerate(box)] for box in (BOX, OTHER)]
    native = [{"bbox_2d": rel[0], "label": "cat"}, {"bbox_2d": rel[1], "label": "dog"}]
    target = {"cat": BOX, "dog": OTHER}
    got = score(
        _resp(native), annotation_type="bbox_map", annotation=target, annotation_native=True, prediction_frame="rel1000",
        image_size=size,
    )  # fmt: skip
    assert got["annotation_reward"] == pytest.approx(1.0)
    assert got["trace_prediction_frame_rel1000"] == 1.0 and got["trace_annotation_native"] == 1.0


@pytest.mark.parametrize("value", [1, "yes", None, [True]])
def test_annotation_native_is_a_boolean(value: Any) -> None:
    with pytest.raises(OptionError, match="annotation_native"):
        score(_resp(BOX), annotation=BOX, annotation_native=value)
