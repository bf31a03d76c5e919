"""The hostile corpora under a declared tool call (issue 39, item 3).

Reading the annotation from the last call of a declared tool may not turn anything a model writes
into more reward than the same annotation earns in a final object, and never reads a call of
another tool; floods of calls, unclosed tags and deep nesting are read in bounded time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trace_tasks import extract_trace_prediction

from .helpers import score
from .test_corpus import CASES, Case

TOOL = {"name": "click", "argument": "geometry"}
MODES = ["answer_and_annotation", "annotation_only"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_hostile_case_without_a_call_earns_no_annotation(case: Case, mode: str) -> None:
    plain = score(case.response, **case.instance)
    got = score(case.response, **case.instance, mode=mode, tool_call=TOOL)  # check_result: finite, in [0, 1]
    if "click(" not in case.response and '"click"' not in case.response:
        assert got["annotation_reward"] == 0.0 and got["annotation_parse_ok"] == 0.0
    if mode == "answer_and_annotation":
        assert got["answer_reward"] == plain["answer_reward"]


def _json_annotation(case: Case) -> Any:
    _, annotation, found = extract_trace_prediction(case.response)
    if not found or annotation is None:
        return None
    try:
        json.dumps(annotation, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return annotation


MOVABLE = [case for case in CASES if _json_annotation(case) is not None]


@pytest.mark.parametrize("case", MOVABLE, ids=lambda c: c.name)
def test_a_hostile_annotation_moved_into_a_call_earns_what_it_earns_in_a_final_object(case: Case) -> None:
    annotation = _json_annotation(case)
    in_object = score(json.dumps({"annotation": annotation}), **case.instance, mode="annotation_only")
    call = json.dumps({"name": "click", "arguments": {"geometry": annotation}})
    in_call = score(f"<tool_call>{call}</tool_call>", **case.instance, mode="annotation_only", tool_call=TOOL)
    assert in_call["annotation_reward"] == in_object["annotation_reward"]
    assert in_call["annotation_parse_ok"] == in_object["annotation_parse_ok"]


BOX = [0, 0, 10, 10]


@pytest.mark.parametrize(
    "response",
    [
        "click(" * 200_000,
        "<tool_call>" * 100_000,
        '{"name": "click", ' * 100_000,
        "click(geometry=" + "[" * 100_000,
        "click(geometry=[0, 0, 10, 10])" + " click(" * 100_000,
    ],
    ids=["open_calls", "open_tags", "open_objects", "deep_brackets", "flood_after_a_call"],
)
def test_floods_earn_nothing(response: str) -> None:
    got = score(response, annotation=BOX, mode="annotation_only", tool_call=TOOL)
    assert got["annotation_reward"] == 0.0


def test_another_tools_call_is_never_read() -> None:
    response = "click(geometry=[50, 50, 60, 60])\nscroll(geometry=[0, 0, 10, 10])"
    assert score(response, annotation=BOX, mode="annotation_only", tool_call=TOOL)["annotation_reward"] == 0.0


def test_only_the_last_call_counts() -> None:
    sweep = "".join(f"click(geometry=[{i}, {i}, {i + 10}, {i + 10}])\n" for i in (0, 50, 100))
    assert score(sweep, annotation=BOX, mode="annotation_only", tool_call=TOOL)["annotation_reward"] == 0.0
    last = sweep + "click(geometry=[0, 0, 10, 10])"
    assert score(last, annotation=BOX, mode="annotation_only", tool_call=TOOL)["annotation_reward"] == 1.0


@pytest.mark.parametrize(
    ("response", "tool"),
    [
        ('<tool_call>{"name": "click", "arguments": {"geometry": [0, 0, 10, 10]}}</tool_call>', TOOL),
        ('<tool_call>{"name": "click", "arguments": "{\\"geometry\\": [0, 0, 10, 10]}"}</tool_call>', TOOL),
        ('Acting now: {"name": "click", "arguments": {"geometry": [0, 0, 10, 10]}}', TOOL),
        ("click(geometry=[0, 0, 10, 10])", TOOL),
        ("click(0, 0, 10, 10)", TOOL),
        ("click(x0=0, y0=0, x1=10, y1=10)", {"name": "click", "argument": ["x0", "y0", "x1", "y1"]}),
        ("click(0, 0, 10, 10)", {"name": "click", "argument": ["x0", "y0", "x1", "y1"]}),
    ],
)
def test_the_forms_models_emit(response: str, tool: dict[str, Any]) -> None:
    got = score(response, annotation=BOX, mode="annotation_only", tool_call=tool)
    assert (got["annotation_reward"], got["format"], got["trace_tool_call"]) == (1.0, 1.0, 1.0)


def test_nemo_gym_point() -> None:
    got = score(
        "click(point=<point>(20, 30)</point>)",
        annotation_type="point",
        annotation=[20, 30],
        mode="annotation_only",
        tool_call={"name": "click", "argument": "point"},
    )
    assert got["annotation_reward"] == 1.0


def test_a_frame_applies_to_the_read_geometry() -> None:
    # 0-1000 coordinates of a 200 x 100 image: [0, 0, 50, 100] -> [0, 0, 10, 10] pixels
    got = score(
        "click(geometry=[0, 0, 50, 100])",
        annotation=BOX,
        mode="annotation_only",
        tool_call=TOOL,
        prediction_frame="rel1000",
        image_size=[200, 100],
    )
    assert got["annotation_reward"] == 1.0


def test_with_an_answer_the_final_object_holds_it() -> None:
    response = 'click(geometry=[0, 0, 10, 10])\n{"answer": 7}'
    got = score(response, annotation=BOX, tool_call=TOOL)
    assert (got["answer_reward"], got["annotation_reward"], got["format"]) == (1.0, 1.0, 1.0)
    in_object = score('{"answer": 7, "annotation": [0, 0, 10, 10]}', annotation=BOX, tool_call=TOOL)
    assert in_object["annotation_reward"] == 0.0  # the final object's annotation is not read


@pytest.mark.parametrize(
    "tool",
    [{"name": "click"}, {"name": "", "argument": "x"}, {"name": "click", "argument": []}, {"name": "a b", "argument": "x"}, "{"],
)
def test_a_bad_declaration_is_an_option_error(tool: Any) -> None:
    with pytest.raises(ValueError, match="tool_call"):
        score("click(x=1)", tool_call=tool)
