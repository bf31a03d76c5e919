"""Model-native shapes of a prediction that does not parse, and the normalised-coordinates readings.

``annotation_native_format`` (docs/contracts.md §7) is set when the owner's
``trace_native_annotation`` recognises what a model wrote instead of the
contract's shape (Qwen-VL's ``bbox_2d`` lists, ``point_2d``, a one-item list
for a single box); the reward is unchanged. With a trail (explain, reports)
the run also says what the rewritten value would have scored, and what the
parsed prediction scores read as 0-1 or 0-1000 coordinates.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from trace_tasks import NativeFormat, compile_instance, hookimpl, score_trace_response
from trace_tasks.cli._views.frames import readings_hint
from trace_tasks.cli.explain import explain_response, explanation_json
from trace_tasks.family import Primitive, ShapeFamily, pairwise
from trace_tasks.plugins import register_plugin, reset_registry, unregister_plugin
from trace_tasks.scoring import NATIVE_FORMAT_KEY, options_from

from .helpers import contract


def instance(annotation_type: str, value: Any, answer: Any = 1, **extra: Any) -> dict[str, Any]:
    return {
        "answer_gt": {"type": "integer", "value": answer},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": contract("integer", annotation_type),
        **extra,
    }


def score(annotation_type: str, target: Any, response: str, **options: Any) -> dict[str, float]:
    return score_trace_response(response=response, **instance(annotation_type, target), **options)


def predicted(annotation: Any) -> str:
    return json.dumps({"answer": 1, "annotation": annotation})


QWEN_BOX = [{"bbox_2d": [0, 0, 10, 10], "label": "person"}]
NATIVE = [
    ("bbox", [0, 0, 10, 10], QWEN_BOX),
    ("bbox", [0, 0, 10, 10], [[0, 0, 10, 10]]),
    ("bbox", [0, 0, 10, 10], {"bbox_2d": [0, 0, 10, 10]}),
    ("bbox", [0, 0, 10, 10], json.dumps(QWEN_BOX)),  # as a string
    ("bbox_set", [[0, 0, 10, 10], [20, 20, 30, 30]], [{"bbox_2d": [0, 0, 10, 10]}, {"bbox_2d": [20, 20, 30, 30]}]),
    ("bbox_map", {"left": [0, 0, 10, 10]}, [{"bbox_2d": [0, 0, 10, 10], "label": "left"}]),
    ("bbox_set_map", {"cat": [[0, 0, 10, 10]]}, [{"bbox_2d": [0, 0, 10, 10], "label": "cat"}]),
    ("point", [5, 5], [{"point_2d": [5, 5], "label": "dot"}]),
    ("point", [5, 5], {"point_2d": [5, 5]}),
    ("point", [5, 5], [[5, 5]]),
    ("point_set", [[5, 5]], [{"point_2d": [5, 5]}]),
    ("segment", [[0, 0], [10, 10]], [[[0, 0], [10, 10]]]),
]


@pytest.mark.parametrize(("annotation_type", "target", "native"), NATIVE)
def test_a_native_shape_sets_the_flag_and_changes_no_reward(annotation_type: str, target: Any, native: Any) -> None:
    result = score(annotation_type, target, predicted(native))
    assert result[NATIVE_FORMAT_KEY] == 1.0 and list(result)[-1] == NATIVE_FORMAT_KEY
    assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0 and result["overall"] == 0.5
    # The same in answer mode, where the annotation is still parsed and reported.
    assert score(annotation_type, target, predicted(native), trace_reward_mode="answer")[NATIVE_FORMAT_KEY] == 1.0


@pytest.mark.parametrize(
    ("annotation_type", "target", "annotation"),
    [
        ("bbox", [0, 0, 10, 10], [0, 0, 10, 10]),  # parses: never asked
        ("bbox", [0, 0, 10, 10], [[0, 0, 10, 10], [1, 1, 5, 5]]),  # two boxes for one
        ("bbox", [0, 0, 10, 10], [{"box_2d": [0, 0, 10, 10]}]),  # an unknown key
        ("bbox", [0, 0, 10, 10], [{"bbox_2d": [0, 0, 0, 0]}]),  # the item itself does not parse
        ("bbox", [0, 0, 10, 10], "junk"),
        ("point", [5, 5], [{"point_2d": [5, 5]}, "x"]),
        ("bbox_set", [[0, 0, 10, 10]], [[0, 0, 10, 10]]),  # parses
        ("segment", [[0, 0], [10, 10]], [0, 0, 10, 10]),  # a box is no segment, and no known spelling of one
    ],
)
def test_no_flag_for_other_values(annotation_type: str, target: Any, annotation: Any) -> None:
    assert NATIVE_FORMAT_KEY not in score(annotation_type, target, predicted(annotation))


def test_a_response_that_is_the_models_own_output_gets_the_flag() -> None:
    # No final object at all: Qwen's grounding output, fenced or bare.
    fenced = "The person is here:\n```json\n" + json.dumps(QWEN_BOX) + "\n```"
    assert score("bbox", [0, 0, 10, 10], fenced)[NATIVE_FORMAT_KEY] == 1.0
    assert score("bbox", [0, 0, 10, 10], json.dumps(QWEN_BOX))[NATIVE_FORMAT_KEY] == 1.0
    assert NATIVE_FORMAT_KEY not in score("bbox", [0, 0, 10, 10], "I see a person.")
    assert NATIVE_FORMAT_KEY not in score("bbox", [0, 0, 10, 10], "```json\n[1, 2]\n```")


def test_compiled_instances_give_the_same_dict() -> None:
    for annotation_type, target, native in NATIVE:
        data = instance(annotation_type, target)
        response = predicted(native)
        assert compile_instance(data).score(response) == score_trace_response(response=response, **data)


def test_explain_names_the_shape_found_the_one_expected_and_what_it_would_score() -> None:
    compiled = compile_instance(instance("bbox", [0, 0, 10, 10]))
    explained = explain_response(predicted(QWEN_BOX), compiled, options_from({}))
    text = "\n".join(explained.lines)
    assert 'model-native shape: the prediction is [{"bbox_2d": [x0, y0, x1, y1], "label": ...}, ...]' in text
    assert "Qwen-VL grounding output" in text and "a bbox is written [x0, y0, x1, y1]" in text
    assert "written as the contract asks, it would score annotation_reward 1" in text
    native = explanation_json(explained)["explanation"]["annotation"]["native_format"]
    assert native["expected"] == "[x0, y0, x1, y1]" and native["converted_reward"] == 1.0
    assert explained.result == compiled.score(predicted(QWEN_BOX))
    # A map: the labels become the role keys.
    compiled = compile_instance(instance("bbox_map", {"left": [0, 0, 10, 10], "right": [20, 0, 30, 10]}))
    qwen = [{"bbox_2d": [0, 0, 10, 10], "label": "left"}, {"bbox_2d": [20, 0, 30, 10], "label": "right"}]
    _, trail = compiled.explain(predicted(qwen), options_from({}))
    assert trail.native is not None and trail.native.converted == {"left": [0, 0, 10, 10], "right": [20, 0, 30, 10]}
    assert trail.native_reward == 1.0


class _BrokenNative(ShapeFamily):
    @hookimpl
    def trace_native_annotation(self, annotation_type: str, value: object) -> NativeFormat | None:
        raise RuntimeError("boom")


def test_a_native_hook_that_raises_is_a_plugin_bug_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    prim = Primitive(
        name="span", similarity=lambda a, b, c: 1.0, matrix=pairwise(lambda a, b, c: 1.0), metric="iou",
        parse_item=lambda v: tuple(v) if isinstance(v, list) and len(v) == 2 else _refuse(), examples=([0, 1], [2, 3]),
    )  # fmt: skip
    register_plugin(_BrokenNative(prim, {"span": ("scalar", "span_v0")}), "broken-native")
    try:
        data = instance("span", [0, 1])
        with caplog.at_level(logging.WARNING, logger="trace_tasks.core.reward_scoring"):
            for _ in range(3):
                result = score_trace_response(response=predicted([[0, 1]]), **data)
                assert NATIVE_FORMAT_KEY not in result and result["overall"] == 0.5
        assert sum("trace_native_annotation raised RuntimeError: boom" in r.getMessage() for r in caplog.records) == 1
    finally:
        unregister_plugin("broken-native")
        reset_registry()


def _refuse() -> Any:
    from trace_tasks import AnnotationParseError

    raise AnnotationParseError("not a span")


# --- normalised readings ------------------------------------------------------------------------


def test_the_issue_point_in_0_1000_units_on_a_wide_screenshot() -> None:
    # A target at (905, 100) on a 2560x1440 screenshot, answered [333, 76] in 0-1000 units.
    compiled = compile_instance(instance("point", [905, 100], image_size=[2560, 1440]))
    result, trail = compiled.explain(predicted([333, 76]), options_from({}))
    assert result["annotation_reward"] == pytest.approx(3.8e-16, rel=0.05)
    assert trail.readings["pixels"] == result["annotation_reward"]
    assert trail.readings["0-1000"] == pytest.approx(0.735, abs=0.01) and trail.readings["0-1"] < 1e-100
    hint = readings_hint(trail.readings)
    assert hint is not None and "read as 0-1000 coordinates the prediction would score annotation_reward 0.735" in hint
    text = "\n".join(explain_response(predicted([333, 76]), compiled, options_from({})).lines)
    # Nothing left the frame, yet explain names the best other reading and its flag (issue 35: the mismatch list
    # replaced the 0-1/0-1000 note; these integers fit 0-999 a hair better than 0-1000).
    assert "note: read as rel999 (relative 0-999) the prediction would score annotation_reward 0.742" in text
    assert "--prediction-frame rel999 declares it" in text and "mismatch rel999:" in text
    assert result == compiled.score(predicted([333, 76]))  # the readings never touch the reward


@pytest.mark.parametrize(
    ("annotation_type", "target", "annotation", "reading"),
    [
        ("bbox", [100, 50, 300, 250], [0.25, 0.125, 0.75, 0.625], "0-1"),  # a 400x400 image
        ("bbox_set", [[100, 50, 300, 250]], [[250, 125, 750, 625]], "0-1000"),
        ("point_map", {"a": [200, 100]}, {"a": [500, 250]}, "0-1000"),
        ("segment_set", [[[0, 0], [400, 400]]], [[[0, 0], [1, 1]]], "0-1"),
    ],
)
def test_readings_name_the_better_scale_on_any_shape(annotation_type: str, target: Any, annotation: Any, reading: str) -> None:
    compiled = compile_instance(instance(annotation_type, target, image_size=[400, 400]))
    _, trail = compiled.explain(predicted(annotation), options_from({}))
    assert trail.readings[reading] == pytest.approx(1.0) and trail.readings["pixels"] < 0.5
    hint = readings_hint(trail.readings)
    assert hint is not None and f"normalised {reading} coordinates?" in hint


def test_no_readings_without_an_image_size_and_no_hint_for_a_good_prediction() -> None:
    _, trail = compile_instance(instance("bbox", [0, 0, 10, 10])).explain(predicted([0, 0, 10, 10]), options_from({}))
    assert trail.readings == {} and readings_hint(trail.readings) is None
    compiled = compile_instance(instance("bbox", [0, 0, 10, 10], image_size=[400, 400]))
    _, trail = compiled.explain(predicted([0, 0, 10, 10]), options_from({}))
    assert trail.readings["pixels"] == 1.0 and readings_hint(trail.readings) == ""


def test_a_trail_without_hints_scores_nothing_more() -> None:
    # A trail kept for metrics (score --summary-json) skips the readings' extra score calls.
    from trace_tasks.scoring import Trail

    compiled = compile_instance(instance("point", [905, 100], image_size=[2560, 1440]))
    trail = Trail()
    result = compiled.run(predicted([333, 76]), options_from({}), None, trail)
    assert trail.readings == {} and result == compiled.score(predicted([333, 76]))
    trail = Trail()
    compile_instance(instance("bbox", [0, 0, 10, 10])).run(predicted(QWEN_BOX), options_from({}), None, trail)
    assert trail.native is not None and trail.native_reward is None
