"""Hostile values on the caller's side: annotation_gt, answer_gt, contract, image size, metadata.

A caller may pass model-derived data (a target written by another model, a
metadata blob from the dataset row): none of it may crash or stall scoring.
Caller *mistakes* that the spec names still raise: see ``test_caller_errors``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from trace_tasks import score_trace_response
from trace_tasks.scoring import DEFAULT_HALF_LIFE_PX

from .helpers import check_result, contract, score

GOOD = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
GOOD_POINT = '{"answer": 7, "annotation": [5, 5]}'


def _nested_dict(depth: int, key: str = "a") -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {key: value}
    return value


def _nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _self_referencing() -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key in ("source_image_size", "image_size", "image_sizes", "canvas_size", "img_size"):
        value[key] = value
    return value


def _exponential_list() -> list[Any]:
    # 64 references to one sub-list per level: tiny in memory, 64**10 leaves when unfolded.
    value: list[Any] = [1]
    for _ in range(10):
        value = [value] * 64
    return value


def _param_id(value: Any) -> str:
    # repr() of a 10,000-deep dict recurses too deep; a short shape description will do.
    if isinstance(value, dict):
        return "dict:" + ",".join(f"{k!s:.10}" for k in list(value)[:2])
    return f"{type(value).__name__}:{str(value)[:20] if isinstance(value, str) else ''}"


HOSTILE_TARGET_VALUES = {
    "deep_list": _nested_list(100_000),
    "deep_dict": _nested_dict(100_000),
    "deep_string": "[" * 100_000,
    "junk_string": "\x00\ud800{[(" * 50_000,
    "literal_string_too_long": "(" + "0, " * 30_000 + ")",
    "nan_coordinates": [float("nan"), 0, 10, 10],
    "boolean_coordinates": [True, False, True, True],
    "huge_int_coordinate": [0, 0, 10**400, 10],
    "complex_set": {1j, 2j},
    "bytes": b"[0, 0, 10, 10]",
    "none": None,
    "too_many_items": [[0, 0, 1, 1]] * 10_001,
}


@pytest.mark.parametrize("name", list(HOSTILE_TARGET_VALUES))
@pytest.mark.parametrize("annotation_type", ["bbox", "bbox_set", "bbox_set_map", "point_map", "segment_set"])
def test_hostile_target_value_is_an_annotation_parse_failure(name: str, annotation_type: str) -> None:
    result = score(GOOD, annotation_type=annotation_type, annotation=HOSTILE_TARGET_VALUES[name])
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0
    assert result["answer_reward"] == 1.0  # the answer side is untouched


@pytest.mark.parametrize(
    "annotation_gt",
    [
        None,
        "bbox",
        [0, 0, 10, 10],
        {"type": 5, "value": [0, 0, 10, 10]},
        {"type": "bbox\x00", "value": [0, 0, 10, 10]},
        {"type": "x" * (1 << 20), "value": [0, 0, 10, 10]},
        {"type": "\ud800", "value": [0, 0, 10, 10]},
        {"type": "bbox"},
        _nested_dict(10_000, "type"),
    ],
    ids=lambda v: _param_id(v),
)
def test_hostile_annotation_gt_is_a_quiet_zero(annotation_gt: Any) -> None:
    result = score_trace_response(
        response=GOOD, answer_gt={"type": "integer", "value": 7}, annotation_gt=annotation_gt, reward_contract=contract("bbox")
    )
    check_result(result)
    assert result["annotation_parse_ok"] == 0.0
    assert result["answer_reward"] == 1.0


def test_target_type_with_surrounding_whitespace_is_the_type() -> None:
    result = score_trace_response(
        response=GOOD,
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "  bbox\n", "value": [0, 0, 10, 10]},
        reward_contract=contract("bbox"),
    )
    check_result(result)
    assert result["annotation_reward"] == 1.0


@pytest.mark.parametrize(
    "reward_contract",
    [None, "junk", {"annotation": "bbox_soft_iou_v0"}, {"annotation": {"id": ["x"], "type": {"a": 1}}}, _nested_dict(10_000)],
    ids=lambda v: _param_id(v),
)
def test_hostile_contract_gates_the_annotation(reward_contract: Any) -> None:
    result = score_trace_response(
        response=GOOD,
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
        reward_contract=reward_contract,
    )
    check_result(result)
    assert result["annotation_parse_ok"] == 0.0


@pytest.mark.parametrize(
    "answer_gt",
    [
        None,
        "7",
        {"type": "integer"},
        {"type": ["integer"], "value": 7},
        {"type": "integer", "value": _nested_list(100_000)},
        {"type": "integer", "value": "[" * 100_000},
        {"type": "integer", "value": float("nan")},
        {"type": "\ud800", "value": 7},
    ],
    ids=lambda v: _param_id(v),
)
def test_hostile_answer_gt_never_raises(answer_gt: Any) -> None:
    result = score_trace_response(
        response=GOOD,
        answer_gt=answer_gt,
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
        reward_contract=contract("bbox"),
    )
    check_result(result)
    if not isinstance(answer_gt, dict) or "value" not in answer_gt:
        assert result["answer_parse_ok"] == 0.0
    assert result["answer_reward"] in (0.0, 1.0)
    if isinstance(answer_gt, dict) and answer_gt.get("type") == "integer" and answer_gt.get("value") != 7:
        assert result["answer_reward"] == 0.0


HOSTILE_SIZES = {
    "deep_dict": _nested_dict(100_000, "image_size"),
    "deep_list": _nested_list(100_000),
    "self_referencing": _self_referencing(),
    "exponential_list": _exponential_list(),
    "junk_string": "x" * (1 << 20),
    "deep_string": "[" * 100_000,
    "long_literal_string": "(" + "1, " * 20_000 + ")",
    "nul_string": "[640,\x00 480]",
    "boolean_pair": [True, 480],
    "nan_pair": [float("nan"), 480],
    "infinite_pair": [640, float("inf")],
    "huge_int_pair": [10**400, 480],
    "negative_pair": [-640, 480],
    "string_sides": {"width": "640", "height": "480"},
    "three_numbers": [640, 480, 3],
    "complex": {"w": 1j, "h": 2j},
}


@pytest.mark.parametrize("name", list(HOSTILE_SIZES))
@pytest.mark.parametrize("where", ["image_size", "image_sizes", "metadata", "extra_info"])
def test_hostile_size_falls_back_to_the_default_half_life(name: str, where: str) -> None:
    result = score(GOOD_POINT, annotation_type="point", annotation=[5, 5], **{where: HOSTILE_SIZES[name]})
    assert result["annotation_point_half_life_px"] == DEFAULT_HALF_LIFE_PX
    assert result["annotation_reward"] == 1.0


@pytest.mark.parametrize("name", list(HOSTILE_SIZES))
def test_a_valid_later_source_still_wins_after_a_hostile_one(name: str) -> None:
    result = score(
        GOOD_POINT,
        annotation_type="point",
        annotation=[5, 5],
        image_size=HOSTILE_SIZES[name],
        metadata=HOSTILE_SIZES[name],
        extra_info={"metadata": 1, "image_size": {"width": 1000, "height": 1000}},
    )
    assert result["annotation_point_half_life_px"] == pytest.approx(0.035 * math.hypot(1000, 1000))


def test_hostile_size_in_answer_mode_and_bbox_type_is_ignored() -> None:
    result = score(GOOD, mode="answer", image_size=_exponential_list(), metadata=_self_referencing())
    assert result["answer_reward"] == 1.0


# --- issue 17 item 5: the caller's literal strings are read within a budget per call --------------


@pytest.fixture
def literal_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lengths of the texts handed to ``ast.literal_eval`` (through ``literals.load_literal``)."""
    from trace_tasks.reading import _literals as literals

    reads: list[int] = []
    real = literals.ast.literal_eval

    def counted(text: str) -> Any:
        reads.append(len(text))
        return real(text)

    monkeypatch.setattr(literals.ast, "literal_eval", counted)
    return reads


def test_metadata_literal_strings_are_read_within_a_budget_per_source(literal_reads: list[int]) -> None:
    from trace_tasks.scoring._image_size import _MAX_LITERAL_CHARS_PER_SOURCE

    # 64 mappings, each with a 4 KiB literal string under a size key that is no size:
    # 256 KiB of literal reading per source and per call before the budget.
    junk = "[" + "0, " * 1300 + "]"
    source = [{"image_size": junk} for _ in range(64)]
    result = score(GOOD_POINT, annotation_type="point", annotation=[5, 5], metadata=source, extra_info=source)
    assert result["annotation_reward"] == 1.0
    assert 0 < sum(literal_reads) <= 2 * _MAX_LITERAL_CHARS_PER_SOURCE


def test_metadata_size_in_a_literal_string_is_still_found() -> None:
    result = score(GOOD_POINT, annotation_type="point", annotation=[5, 5], metadata={"image_size": "(640, 480)"})
    assert result["annotation_reward"] == 1.0


def test_set_map_target_literal_strings_share_one_budget(literal_reads: list[int]) -> None:
    from trace_tasks.limits import MAX_TARGET_LITERAL_BUDGET
    from trace_tasks.reading import MIN_LITERAL_CHARGE

    # 4,000 keys whose boxes are Python-literal strings: ~0.1 s of literal reading per call before.
    target = {f"k{i}": "(0, 0, 10, 10)" for i in range(4_000)}
    response = json.dumps({"answer": 7, "annotation": {key: [[0, 0, 10, 10]] for key in target}})
    result = score(response, annotation_type="bbox_set_map", annotation=target)
    assert result["annotation_reward"] == 0.0  # the target is not usable past the budget
    assert len(literal_reads) <= MAX_TARGET_LITERAL_BUDGET // MIN_LITERAL_CHARGE
    # A few literal strings are read as before.
    small = {f"k{i}": "(0, 0, 10, 10)" for i in range(20)}
    response = json.dumps({"answer": 7, "annotation": {key: [[0, 0, 10, 10]] for key in small}})
    assert score(response, annotation_type="bbox_set_map", annotation=small)["annotation_reward"] == 1.0


def test_a_repeated_long_metadata_string_is_decoded_within_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_tasks.reading import _literals as literals
    from trace_tasks.scoring import _image_size as image_size

    decoded: list[int] = []
    real = literals._json_loads

    def counted(text: str) -> Any:
        decoded.append(len(text))
        return real(text)

    # The decoder behind load_json, not load_json itself: compiled code calls load_json
    # directly, past any patch, but looks the decoder up in its module at every call.
    monkeypatch.setattr(literals, "_json_loads", counted)
    long_json = json.dumps({"caption": "x" * 50_000})  # valid JSON, no size: held once, listed 64 times
    source = [{"image_size": long_json} for _ in range(64)]
    assert image_size.find_image_size(source) is None
    assert 0 < sum(decoded) <= image_size._MAX_JSON_CHARS_PER_SOURCE  # decoded, but within the budget
    assert image_size.find_image_size({"image_size": json.dumps([640, 480])}) == (640.0, 480.0)
