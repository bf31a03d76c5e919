"""The hostile corpora under a declared tool call (issue 39, item 3).

Reading the annotation from the last call of a declared tool may not turn anything a model writes
into more reward than the same annotation earns in a final object, and never reads a call of
another tool; floods of calls, unclosed tags and deep nesting are read in bounded time.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_tasks import extract_trace_prediction
from trace_tasks.reading import _tool_calls as tool_calls

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


# --- linear time (docs/limits.md): work counted, never timed ---

_OLD_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_OLD_POINT = re.compile(r"^\s*<point>\s*\(?\s*(-?[\d.eE+-]+)\s*[, ]\s*(-?[\d.eE+-]+)\s*\)?\s*</point>\s*$")


@given(st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "</tool_call", "x", "\n", "<tool_call"]), max_size=30))
@settings(max_examples=300, deadline=None)
def test_tool_call_blocks_are_the_lazy_patterns_blocks(pieces: list[str]) -> None:
    text = "".join(pieces)
    old = [(m.end(), "<tool_call>", m.start(1), m.end(1)) for m in _OLD_TAG.finditer(text)]
    assert tool_calls._tag_blocks(text) == old


class _CountingText(str):
    """A text that counts the characters its ``find`` calls look at."""

    looked = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        found = super().find(sub, start, end)
        _CountingText.looked += (found + len(sub) if found != -1 else len(self)) - (start or 0)
        return found


@pytest.mark.parametrize(
    "text",
    ["<tool_call>" * 20_000 + "click", ("<tool_call>x</tool_call>" * 5_000) + "<tool_call>" * 5_000, "</tool_call>" * 9_000],
)
def test_tool_call_blocks_look_at_each_character_about_once(text: str) -> None:
    # The lazy pattern scanned to the end of the text from every unclosed tag: 20,000 tags, 220,005 characters each.
    _CountingText.looked = 0
    tool_calls._tag_blocks(_CountingText(text))
    assert _CountingText.looked <= 2 * len(text)


@pytest.mark.parametrize(
    "response",
    [
        "click(" * 512 + "x" * 16_000,
        "{" + '"name":"click",' * 512 + "x" * 16_000,
        "click(" * 150_000,
        '{"name": "click", ' * 50_000,
        "click(geometry=[0, 0, 10, 10])" + "click(" * 2_000 + "x" * 16_000,
    ],
    ids=["open_calls_then_16k", "name_objects_then_16k", "open_calls", "name_objects", "a_call_then_a_flood"],
)
def test_the_candidates_share_one_scan_budget(response: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = [0]
    split, object_at = tool_calls._split_arguments, tool_calls._object_at

    def counted_split(text: str, start: int, limit: int = tool_calls._MAX_CALL_CHARS) -> Any:
        parts, stop = split(text, start, limit)
        scanned[0] += stop - start
        return parts, stop

    def counted_object(text: str, start: int, limit: int = tool_calls._MAX_CALL_CHARS) -> Any:
        block, count = object_at(text, start, limit)
        scanned[0] += count
        return block, count

    monkeypatch.setattr(tool_calls, "_split_arguments", counted_split)
    monkeypatch.setattr(tool_calls, "_object_at", counted_object)
    got = score(response, annotation=BOX, mode="annotation_only", tool_call=TOOL)
    assert got["annotation_reward"] == 0.0  # a flood after the call: the last call is the flood's
    # Without the shared budget the first two scanned 512 x 16 KiB (8.4 million characters, 0.8 s).
    assert 0 < scanned[0] <= tool_calls._scan_budget(response)


def test_the_last_call_is_read_in_full_after_a_long_text() -> None:
    padding = "I look at the image. " * 40_000  # 840,000 characters of prose before the call
    call = "click(geometry=[0, 0, 10, 10], note='" + "n" * 15_000 + "')"
    assert score(padding + call, annotation=BOX, mode="annotation_only", tool_call=TOOL)["annotation_reward"] == 1.0


_POINT_PIECES = st.sampled_from(["<point>", "</point>", "(", ")", ",", " ", "\t", "1", "-2.5", "3e2", "+", "x", "  "])


@given(st.lists(_POINT_PIECES, max_size=14))
@settings(max_examples=500, deadline=None)
def test_the_point_pattern_reads_what_it_read(pieces: list[str]) -> None:
    text = "".join(pieces).strip()
    old, new = _OLD_POINT.match(text), tool_calls._POINT.fullmatch(text)
    assert (old is None) == (new is None)
    if old is not None and new is not None:
        assert old.groups() == new.groups()


def test_a_point_with_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    # The old pattern's adjacent whitespace quantifiers backtracked quadratically: 8.7 s for these 16 KiB.
    response = "click(geometry=<point>" + " " * 16_000 + "x)"
    assert score(response, annotation=BOX, mode="annotation_only", tool_call=TOOL)["annotation_reward"] == 0.0
    spaced = "click(geometry=<point>(" + " " * 16_000 + "5, 5)</point>)"
    got = score(spaced, annotation_type="point", annotation=[5, 5], mode="annotation_only", tool_call=TOOL)
    assert got["annotation_reward"] == 1.0


@given(st.text(alphabet=st.sampled_from(["a", "_", "1", ".", "-", " ", "!", "é", "Z"]), max_size=30))
@settings(max_examples=500, deadline=None)
def test_a_calls_name_is_the_identifier_ending_its_head(head: str) -> None:
    old = re.search(r"([A-Za-z_][\w.-]*)$", head)
    assert tool_calls._call_name(head) == (old.group(1) if old is not None else "")
