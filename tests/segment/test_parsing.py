"""What counts as a segment and a segment set (docs/contracts.md §5.1 and §5.2)."""

from __future__ import annotations

from typing import Any

import pytest

from trace_plugins_segment.geometry import parse_segment
from trace_plugins_segment.plugin import family
from trace_tasks import AnnotationParseError

from .helpers import score, score_text

PARSERS = family.parsers

SEGMENT = [[0, 0], [10, 0]]


def _parse_ok(annotation_type: str, text: str, target: Any) -> float:
    return score_text(annotation_type, text, target)["annotation_parse_ok"]


@pytest.mark.parametrize(
    "text", ["[[0, 0], [10, 0]]", "[[0.0, 0.0], [1e1, 0]]", "[[10, 0], [0, 0]]", '"[[0, 0], [10, 0]]"', '"((0, 0), (10, 0))"']
)
def test_segment_forms_that_parse(text: str) -> None:
    result = score_text("segment", text, SEGMENT)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "[[[0, 0], [10, 0]]]",  # a set-shaped value for the scalar type
        "[0, 0, 10, 0]",  # a flat box-like list is not a segment
        "[[0, 0]]",
        "[[0, 0], [10, 0], [20, 0]]",
        "[[0, 0], [10]]",
        "[[0, 0, 1], [10, 0]]",
        "[[true, 0], [10, 0]]",
        '[["0", 0], [10, 0]]',
        "[[NaN, 0], [10, 0]]",
        "[[0, 0], [Infinity, 0]]",
        "[[0, 0], [" + "9" * 400 + ", 0]]",
        '[{"x": 0, "y": 0}, {"x": 10, "y": 0}]',
        '{"start": [0, 0], "end": [10, 0]}',
        "[]",
        "null",
    ],
)
def test_segment_forms_that_fail(text: str) -> None:
    result = score_text("segment", text, SEGMENT)
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0


@pytest.mark.parametrize("value", [[[0, 0], [1, True]], [[0, 0], [10**400, 0]], [(0, 0)], [0, 0], "[[0, 0], [1, 1]]"])
def test_parse_segment_rejects_directly(value: Any) -> None:
    with pytest.raises(AnnotationParseError):
        parse_segment(value)


def test_parse_segment_keeps_endpoint_order_and_pixels() -> None:
    assert parse_segment([[5, 6], [1, -2.5]]) == (5.0, 6.0, 1.0, -2.5)
    assert parse_segment(((0, 0), (1e6, 1e6))) == (0.0, 0.0, 1e6, 1e6)


def test_segment_set_takes_a_list_of_segments() -> None:
    value = [[[0, 0], [10, 0]], [[0, 5], [10, 5]]]
    assert PARSERS["segment_set"](value) == [(0.0, 0.0, 10.0, 0.0), (0.0, 5.0, 10.0, 5.0)]
    assert score("segment_set", value, value)["annotation_reward"] == 1.0


def test_empty_segment_set_is_valid() -> None:
    assert PARSERS["segment_set"]([]) == []
    result = score("segment_set", [], [])
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0
    assert score("segment_set", [], [SEGMENT])["annotation_reward"] == 0.0
    assert score("segment_set", [SEGMENT], [])["annotation_reward"] == 0.0


def test_lone_segment_is_not_promoted_to_a_segment_set() -> None:
    with pytest.raises(AnnotationParseError):
        PARSERS["segment_set"](SEGMENT)
    result = score("segment_set", SEGMENT, [SEGMENT])
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0
    # Not on the target side either.
    assert score("segment_set", [SEGMENT], SEGMENT)["annotation_parse_ok"] == 0.0


@pytest.mark.parametrize(
    "text",
    [
        '[[[0, 0], [10, 0]], [[0, 0], [10, "0"]]]',
        "[[[0, 0], [10, 0]], [[0, 0]]]",
        "[[[0, 0], [10, 0]], 5]",
        '{"segments": [[[0, 0], [10, 0]]]}',
    ],
)
def test_segment_set_fails_on_any_bad_item(text: str) -> None:
    assert _parse_ok("segment_set", text, [SEGMENT]) == 0.0


def test_segment_set_as_a_string() -> None:
    assert score_text("segment_set", '"[[[0, 0], [10, 0]]]"', [SEGMENT])["annotation_reward"] == 1.0
