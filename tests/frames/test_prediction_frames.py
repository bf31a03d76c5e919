"""Declared prediction frames (issue 35, item 1): an honest prediction written in any frame scores what it scores in pixels.

The frame writer here is independent of the library: it walks the raw prediction
and rewrites each (x, y) pair; the reference ``smart_resize`` is a copy of the
released processor's code (transformers 4.57.1,
src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py, lines 54-80).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.support.benchmarks import import_benchmark
from trace_tasks import score_trace_response
from trace_tasks.core.reward_scoring import extract_trace_prediction
from trace_tasks.errors import OptionError
from trace_tasks.scoring import PREDICTION_FRAMES, Resize, smart_resize

workload = import_benchmark("workload")
bench_shapes = import_benchmark("bench_shapes")

SIZES = ((640.0, 480.0), (1920.0, 1080.0), (1000.0, 1000.0), (333.0, 2000.0))


def reference_smart_resize(
    height: int, width: int, factor: int = 28, min_pixels: int = 56 * 56, max_pixels: int = 28 * 28 * 1280
) -> tuple[int, int]:
    """transformers 4.57.1, models/qwen2_vl/image_processing_qwen2_vl.py lines 54-80 (the aspect-ratio check left out)."""
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def write_in(frame: str, value: Any, size: tuple[float, float], model: tuple[float, float] | None = None) -> Any:
    """The pixel prediction ``value`` as a model answering in ``frame`` writes it (floats)."""
    width, height = size
    if isinstance(value, dict):
        return {key: write_in(frame, item, size, model) for key, item in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value) and len(value) % 2 == 0:
        out: list[float] = []
        for x, y in zip(value[0::2], value[1::2], strict=True):
            if frame == "pixel":
                out += [x, y]
            elif frame == "rel1000_yx":
                out += [y / height * 1000, x / width * 1000]
            elif frame == "resized":
                assert model is not None
                out += [x / width * model[0], y / height * model[1]]
            else:
                span = {"rel1000": 1000, "rel999": 999, "rel1": 1}[frame]
                out += [x / width * span, y / height * span]
        return out
    if isinstance(value, list):
        return [write_in(frame, item, size, model) for item in value]
    return value


def _items() -> list[dict[str, Any]]:
    """The bench_shapes mix items whose response holds a predicted annotation (some are cut short on purpose)."""
    items = bench_shapes.make_workloads(120, 7)["mix"]
    return [
        item
        for item in items
        if item["trace_reward_mode"] == "answer_and_annotation" and extract_trace_prediction(item["response"])[1] is not None
    ]


def _call(item: dict[str, Any], payload: dict[str, Any], size: tuple[float, float], **options: Any) -> dict[str, float]:
    kwargs = {k: item[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    return score_trace_response(response=json.dumps(payload), image_size=list(size), **kwargs, **options)


def _assert_same(pixels: dict[str, float], framed: dict[str, float], frame: str) -> None:
    extra = [key for key in framed if key not in pixels]
    assert all(key.startswith(("trace_prediction_frame_", "trace_resize_", "trace_annotation_native")) for key in extra)
    assert framed[f"trace_prediction_frame_{frame}"] == 1.0
    for key, value in pixels.items():
        assert framed[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_every_official_type_is_in_the_workload() -> None:
    assert {item["annotation_gt"]["type"] for item in _items()} == set(workload.ANNOTATION_TYPES)


@pytest.mark.parametrize("frame", [f for f in PREDICTION_FRAMES if f != "pixel"])
@pytest.mark.parametrize("size", SIZES[:2])
def test_an_honest_prediction_scores_its_pixel_reward_in_every_frame(frame: str, size: tuple[float, float]) -> None:
    model = None
    if frame == "resized":
        h, w = reference_smart_resize(int(size[1]), int(size[0]))
        model = (float(w), float(h))
    for item in _items():
        answer, annotation, _ = extract_trace_prediction(item["response"])
        pixel = {"answer": answer, "annotation": annotation}
        written = {"answer": answer, "annotation": write_in(frame, annotation, size, model)}
        _assert_same(_call(item, pixel, size), _call(item, written, size, prediction_frame=frame), frame)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("resize", [None, {"factor": 32, "min_pixels": 256 * 32 * 32, "max_pixels": 1280 * 32 * 32}])
def test_resized_frame_for_several_image_sizes_and_resize_parameters(size: tuple[float, float], resize: Any) -> None:
    params = resize or {}
    h, w = reference_smart_resize(int(size[1]), int(size[0]), **params)
    for item in _items()[:24]:
        answer, annotation, _ = extract_trace_prediction(item["response"])
        pixel = {"answer": answer, "annotation": annotation}
        written = {"answer": answer, "annotation": write_in("resized", annotation, size, (w, h))}
        _assert_same(_call(item, pixel, size), _call(item, written, size, prediction_frame="resized", resize=resize), "resized")


def test_a_declared_model_image_size_is_the_resized_frame() -> None:
    size, model = (1920.0, 1080.0), (1000.0, 700.0)
    for item in _items()[:24]:
        answer, annotation, _ = extract_trace_prediction(item["response"])
        pixel = {"answer": answer, "annotation": annotation}
        written = {"answer": answer, "annotation": write_in("resized", annotation, size, model)}
        got = _call(item, written, size, prediction_frame="resized", model_image_size=list(model))
        _assert_same(_call(item, pixel, size), got, "resized")


def _rounded(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return round(value) if isinstance(value, float) else value


def test_integer_rel1000_scores_within_the_rounding() -> None:
    """Integers 0-1000 move a coordinate by at most half a unit: width / 2000 px on a 1920-wide image (0.96 px)."""
    size = (1920.0, 1080.0)
    compared = 0
    for item in _items():
        answer, annotation, _ = extract_trace_prediction(item["response"])
        pixel = _call(item, {"answer": answer, "annotation": annotation}, size)
        written = _rounded(write_in("rel1000", annotation, size))
        integers = _call(item, {"answer": answer, "annotation": written}, size, prediction_frame="rel1000")
        if not integers["annotation_parse_ok"]:  # rounding collapsed a sub-unit box to zero area: a parse failure
            continue
        compared += 1
        assert integers["annotation_reward"] == pytest.approx(pixel["annotation_reward"], abs=0.05)
    assert compared >= 0.8 * len(_items())


@pytest.mark.parametrize("size", [(640, 480), (1920, 1080), (1000, 1000), (333, 2000), (28, 28), (10000, 80), (4000, 3000)])
@pytest.mark.parametrize(
    "params", [{}, {"factor": 32, "min_pixels": 4 * 32 * 32, "max_pixels": 16384 * 32 * 32}, {"max_pixels": 256 * 28 * 28}]
)
def test_smart_resize_is_the_processors(size: tuple[int, int], params: dict[str, int]) -> None:
    width, height = size
    assert smart_resize(height, width, Resize(**params)) == reference_smart_resize(height, width, **params)


def test_smart_resize_known_values() -> None:
    """Worked by hand from the processor's formula: 640x480 rounds to 644x476 (23 and 17 blocks of 28), within
    the default area; 1920x1080 rounds to 1932x1092, above 1,003,520 pixels, so beta = sqrt(1920 * 1080 / 1003520)
    = 1.4375 and the sides are floored to 47 and 26 blocks: 1316x728."""
    assert smart_resize(480, 640) == (476, 644)
    assert smart_resize(1080, 1920) == (728, 1316)


def test_a_frame_without_an_image_size_is_an_option_error() -> None:
    item = _items()[0]
    kwargs = {k: item[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    with pytest.raises(OptionError, match=r"rel1000.*image size"):
        score_trace_response(response="{}", prediction_frame="rel1000", **kwargs)
    assert "trace_prediction_frame_pixel" not in score_trace_response(response="{}", **kwargs)


@pytest.mark.parametrize("value", ["rel100", 3, "xy"])
def test_an_unknown_frame_is_an_option_error(value: Any) -> None:
    item = _items()[0]
    kwargs = {k: item[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    with pytest.raises(OptionError, match="prediction_frame"):
        score_trace_response(response="{}", prediction_frame=value, image_size=[10, 10], **kwargs)


@pytest.mark.parametrize("resize", [{"factor": 0}, {"scale": 2}, {"min_pixels": 10, "max_pixels": 5}, "28", {"factor": True}])
def test_bad_resize_parameters_are_option_errors(resize: Any) -> None:
    item = _items()[0]
    kwargs = {k: item[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    with pytest.raises(OptionError, match="resize"):
        score_trace_response(response="{}", prediction_frame="resized", resize=resize, image_size=[10, 10], **kwargs)


def test_out_of_range_values_are_converted_not_clipped() -> None:
    """A 1200 in rel1000 is 1.2 widths: the box lies outside the image and is scored as such."""
    size = (1000.0, 1000.0)
    gt = {"type": "bbox", "value": [1100, 100, 1300, 300]}  # a target outside the frame, in pixels
    contract = {
        "answer": {"type": "integer", "id": "answer_exact_match_v0"},
        "annotation": {"type": "bbox", "id": "bbox_soft_iou_v0"},
    }
    response = json.dumps({"answer": 1, "annotation": [1100, 100, 1300, 300]})
    got = score_trace_response(
        response=response, answer_gt={"type": "integer", "value": 1}, annotation_gt=gt, reward_contract=contract,
        image_size=list(size), prediction_frame="rel1000",
    )  # fmt: skip
    assert got["annotation_reward"] == 1.0


# Sizes the resized frame cannot use: the processor refuses an aspect ratio above 200, and a size no image
# has (1e-300 pixels) underflows its arithmetic (it raised ZeroDivisionError / OverflowError, not OptionError).
UNRESIZABLE = ([2010, 10], [1e-300, 1e-300], [1e-160, 1e-160])


@pytest.mark.parametrize("size", UNRESIZABLE)
def test_an_image_the_resized_frame_cannot_resize_is_refused_everywhere(size: list[float]) -> None:
    from trace_tasks import compile_instance, instance_problems

    item = _items()[0]
    instance = {"id": "x", **{k: item[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}, "image_size": size}
    with pytest.raises(OptionError, match="resized"):
        score_trace_response(response="{}", prediction_frame="resized", **{k: v for k, v in instance.items() if k != "id"})
    problems = instance_problems(instance, prediction_frame="resized")
    assert [p.path for p in problems] == ["$.image_size"] and "resized" in problems[0].message
    assert instance_problems(instance, prediction_frame="resized") != instance_problems(instance)
    assert instance_problems({**instance, "model_image_size": [644, 476]}, prediction_frame="resized") == []
    compile_instance(instance)  # valid in pixels, and scored there
