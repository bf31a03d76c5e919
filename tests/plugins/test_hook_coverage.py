"""Every hook spec in ``trace_tasks.plugins.hookspecs`` is called by real code paths.

A recording plugin (``interval_family.IntervalFamily``) implements every hook
and notes each call. Driving it only through public entry points (building the
registry, ``resolve_reward_contract``, ``score_trace_response``, the image-frame
check of ``trace_tasks.cli._views.frames``) must call every hook the spec module defines:
a new hook added to ``hookspecs.py`` without a caller in the core, or without
an implementation in the recording plugin, fails here. Nothing is listed by
hand: the specs are read from the module.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from trace_tasks import compile_instance, get_registry, resolve_reward_contract, score_trace_response
from trace_tasks.cli._views.frames import frame_report
from trace_tasks.errors import OptionError
from trace_tasks.plugins import PROJECT_NAME, hookspecs
from trace_tasks.scoring import options_from

from .interval_family import V1, IntervalFamily

#: Hooks the registry asks once, when it is built.
LOAD_HOOKS = {"trace_annotation_types", "trace_reward_ids", "trace_answer_types", "trace_resolve_reward_id"}
#: Hooks scoring a response calls.
SCORE_HOOKS = {"trace_parse_annotation", "trace_score_annotation"}
#: Asked by the scorer only after a prediction failed to parse.
FAILURE_HOOKS = {"trace_native_annotation"}
#: Asked by the scorer only under a declared prediction frame other than ``pixel``.
FRAME_HOOKS = {"trace_frame_annotation"}
#: Capabilities the tools call (explain, draw, the normalised readings), never the scorer.
TOOL_HOOKS = {"trace_explain_annotation", "trace_draw_annotation", "trace_scale_annotation", "trace_reread_annotation"}


def spec_names() -> set[str]:
    """Every function marked as a hook spec in ``trace_tasks.plugins.hookspecs``."""
    marker = f"{PROJECT_NAME}_spec"
    return {name for name, fn in vars(hookspecs).items() if inspect.isfunction(fn) and getattr(fn, marker, None) is not None}


def test_the_phases_cover_every_spec() -> None:
    assert spec_names() == LOAD_HOOKS | SCORE_HOOKS | FAILURE_HOOKS | FRAME_HOOKS | TOOL_HOOKS
    assert len(spec_names()) == 12


def test_the_recording_plugin_implements_every_spec(register: Any) -> None:
    register(IntervalFamily(), "interval")
    (info,) = [p for p in get_registry().plugins if p.name == "interval"]
    assert set(info.hooks) == spec_names()


def test_real_code_paths_call_every_hook(register: Any) -> None:
    family = IntervalFamily()
    register(family, "interval")
    # Building the registry asks the collecting and resolving hooks, once each.
    assert family.hooks_called() == LOAD_HOOKS
    assert [name for name, _ in family.calls].count("trace_annotation_types") == 1

    family.calls.clear()
    contract = resolve_reward_contract(answer_type="hex_color", annotation_type="interval").to_dict()
    result = score_trace_response(
        response=json.dumps({"answer": "#00ff00", "annotation": [1, 4]}),
        answer_gt={"type": "hex_color", "value": "#00FF00"},
        annotation_gt={"type": "interval", "value": [0, 4]},
        reward_contract=contract,
    )
    assert result["annotation_parse_ok"] == 1.0 and result["answer_reward"] == 1.0
    # Scoring one response: the owner parses target and prediction, the id's plugin scores; nothing else.
    assert family.calls == [
        ("trace_parse_annotation", ("interval",)),
        ("trace_parse_annotation", ("interval",)),
        ("trace_score_annotation", (V1,)),
    ]

    family.calls.clear()
    registry = get_registry()
    parsed = registry.annotation_types["interval"].parse(annotation_type="interval", value=[2, 30])
    report = frame_report(registry, "interval", parsed, (20.0, 10.0))
    assert report.checked and [message for _, message in report.problems] == ["x=30 is outside the image frame [0, 20]"]
    assert family.hooks_called() == {"trace_parse_annotation", "trace_explain_annotation", "trace_draw_annotation"}

    # A prediction that does not parse is shown to the owner's native-shape hook, and only then.
    family.calls.clear()
    instance = {
        "answer_gt": {"type": "hex_color", "value": "#00FF00"},
        "annotation_gt": {"type": "interval", "value": [0, 4]},
        "reward_contract": contract,
        "image_size": [10, 10],
    }
    result = score_trace_response(response=json.dumps({"answer": "#00ff00", "annotation": [[0, 4]]}), **instance)
    assert result["annotation_parse_ok"] == 0.0 and result["annotation_native_format"] == 1.0
    assert [name for name, _ in family.calls] == ["trace_parse_annotation", "trace_parse_annotation", "trace_native_annotation"]

    # Explaining a parsed prediction reads it as normalised coordinates through the owner's scale hook.
    family.calls.clear()
    _, trail = compile_instance(instance).explain(json.dumps({"answer": "#00ff00", "annotation": [0, 0.4]}), options_from({}))
    assert "trace_scale_annotation" in family.hooks_called()
    assert trail.readings["0-1"] == 1.0 and trail.readings["pixels"] < 1.0
    # ... and asks the owner's other spellings of the raw prediction, for the mismatch readings
    assert "trace_reread_annotation" in family.hooks_called()
    assert "start_length" in trail.alternatives  # [0, 0.4] read as [0, 0 + 0.4], scored by the current id

    # A declared frame converts the parsed prediction through the owner's frame hook, and only then.
    family.calls.clear()
    result = score_trace_response(
        response=json.dumps({"answer": "#00ff00", "annotation": [0, 400]}), prediction_frame="rel1000", **instance
    )
    assert result["annotation_reward"] == 1.0 and result["trace_prediction_frame_rel1000"] == 1.0
    names = [name for name, _ in family.calls]
    # The target's parse and one probe of the frame (once per type and frame), then the response's.
    assert names == [
        "trace_parse_annotation", "trace_frame_annotation",
        "trace_parse_annotation", "trace_frame_annotation", "trace_score_annotation",
    ]  # fmt: skip

    # An owner that refuses a frame (None) makes declaring it a caller's error naming the family, not a zero.
    with pytest.raises(OptionError, match=r"rel1000_yx.*'interval'.*cannot convert"):
        score_trace_response(response="{}", prediction_frame="rel1000_yx", **instance)
