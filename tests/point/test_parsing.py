"""What counts as a point, a point collection and a point map (docs/contracts.md §5.1 and §5.2)."""

from __future__ import annotations

from typing import Any

import pytest

from trace_plugins_point.geometry import parse_point
from trace_plugins_point.plugin import family
from trace_tasks import AnnotationParseError

from .helpers import expected_similarity, score, score_text

PARSERS = family.parsers

TARGET = [10, 20]


def _parses(annotation_type: str, text: str, target: Any) -> bool:
    return score_text(annotation_type, text, target)["annotation_parse_ok"] == 1.0


@pytest.mark.parametrize("text", ["[10, 20]", "[10.0, 20.0]", "[1e1, 2e1]", '"[10, 20]"', '"(10, 20)"'])
def test_point_forms_that_parse(text: str) -> None:
    result = score_text("point", text, TARGET)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "[true, 20]",
        "[10, false]",
        '["10", "20"]',
        "[NaN, 20]",
        "[10, Infinity]",
        "[-Infinity, 20]",
        "[1e400, 20]",  # overflows to inf in JSON
        "[" + "9" * 400 + ", 20]",  # an int too large for a float
        '{"x": 10, "y": 20}',
        "[10]",
        "[10, 20, 30]",
        "[[10, 20]]",  # a set-shaped value for the scalar type
        "[]",
        "null",
        '"somewhere"',
    ],
)
def test_point_forms_that_fail(text: str) -> None:
    result = score_text("point", text, TARGET)
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0


@pytest.mark.parametrize("value", [[True, 1], [1, None], [float("nan"), 1], [10**400, 1], {"x": 1, "y": 2}, (1, 2, 3), "1, 2"])
def test_parse_point_rejects_directly(value: Any) -> None:
    with pytest.raises(AnnotationParseError):
        parse_point(value)


def test_parse_point_keeps_pixels() -> None:
    assert parse_point([3, -4.5]) == (3.0, -4.5)
    assert parse_point((10**15, 0)) == (1e15, 0.0)


def test_an_unparseable_target_scores_zero_and_flags_it() -> None:
    result = score("point", TARGET, [True, 1])
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0


@pytest.mark.parametrize("annotation_type", ["point_set", "point_sequence"])
def test_collections_accept_a_single_flat_point(annotation_type: str) -> None:
    result = score(annotation_type, [10, 20], [[10, 20]])
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0
    assert result["annotation_assigned_count"] == 1.0
    assert PARSERS[annotation_type]([10, 20]) == [(10.0, 20.0)]
    # The promoted form is also accepted on the target side.
    assert score(annotation_type, [[10, 20]], [10, 20])["annotation_reward"] == 1.0


@pytest.mark.parametrize("annotation_type", ["point_set", "point_sequence"])
@pytest.mark.parametrize("text", ['[[10, 20], [1, "2"]]', "[[10, 20], [true, 2]]", "[[10, 20], 5]", '{"points": [[10, 20]]}'])
def test_collections_fail_on_any_bad_item(annotation_type: str, text: str) -> None:
    assert not _parses(annotation_type, text, [[10, 20]])


@pytest.mark.parametrize("annotation_type", ["point_set", "point_sequence"])
def test_empty_collections(annotation_type: str) -> None:
    assert score(annotation_type, [], [])["annotation_reward"] == 1.0
    assert score(annotation_type, [], [[1, 2]])["annotation_reward"] == 0.0
    assert score(annotation_type, [[1, 2]], [])["annotation_reward"] == 0.0


# --- maps -----------------------------------------------------------------------


def test_map_keys_are_stripped() -> None:
    result = score("point_map", {" left ": [0, 0], "right": [5, 0]}, {"left": [0, 0], "  right": [5, 0]})
    assert result["annotation_reward"] == 1.0
    assert result["annotation_shared_key_count"] == 2.0


def test_map_keys_must_be_unique_after_stripping() -> None:
    assert not _parses("point_map", '{"a": [0, 0], " a": [0, 0]}', {"a": [0, 0]})
    assert not _parses("point_set_map", '{"a": [[0, 0]], "a ": [[0, 0]]}', {"a": [[0, 0]]})


@pytest.mark.parametrize("annotation_type", ["point_map", "point_set_map"])
def test_empty_map_key_fails(annotation_type: str) -> None:
    value = [0, 0] if annotation_type == "point_map" else [[0, 0]]
    assert not _parses(annotation_type, '{"  ": ' + str(value) + "}", {"a": value})


def test_map_keys_are_case_sensitive() -> None:
    result = score("point_map", {"Left": [0, 0]}, {"left": [0, 0]})
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 0.0
    assert result["annotation_shared_key_count"] == 0.0
    assert result["annotation_missing_key_count"] == 1.0
    assert result["annotation_extra_key_count"] == 1.0


def test_point_map_rejects_string_values() -> None:
    assert not _parses("point_map", '{"a": "[0, 0]"}', {"a": [0, 0]})
    # ...but the whole map may itself be given as a string.
    assert _parses("point_map", '"{\\"a\\": [0, 0]}"', {"a": [0, 0]})


def test_point_map_values_are_single_points() -> None:
    assert not _parses("point_map", '{"a": [[0, 0]]}', {"a": [0, 0]})
    assert not _parses("point_map", "[[0, 0]]", {"a": [0, 0]})


def test_point_set_map_reads_string_values_and_single_points() -> None:
    result = score("point_set_map", {"a": "[[0, 0], [9, 9]]", "b": [4, 4]}, {"a": [[9, 9], [0, 0]], "b": [[4, 4]]})
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0
    assert PARSERS["point_set_map"]({"a": "[[1, 2]]"}) == {"a": [(1.0, 2.0)]}


def test_point_set_map_rejects_a_bad_string_value() -> None:
    assert not _parses("point_set_map", '{"a": "[[0, 0], oops]"}', {"a": [[0, 0]]})


def test_python_literal_annotation_string() -> None:
    # Compatibility: a string annotation is read as JSON, then as a bounded Python literal.
    result = score("point_set", "[(0, 0), (3, 4)]", [[0, 0], [3, 4]])
    assert result["annotation_reward"] == 1.0
    result = score("point", "(3, 4)", [0, 0], point_half_life_px=5)
    assert result["annotation_reward"] == pytest.approx(expected_similarity(5, 5))
