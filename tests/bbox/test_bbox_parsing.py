"""Parse rules of the box family (docs/contracts.md §5.1 and §5.2).

Each rule is checked through the public scorer: a prediction that breaks a rule
gives ``annotation_parse_ok == 0`` and zero annotation reward, one that follows it
parses and scores its hand-computed IoU.
"""

from __future__ import annotations

import math

import pytest

from trace_plugins_bbox.geometry import parse_box
from trace_tasks import AnnotationParseError

from .helpers import parsed, reward, score, score_response

BOX = [0, 0, 10, 10]


# --- boxes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "corners",
    [[10, 10, 0, 0], [10, 0, 0, 10], [0, 10, 10, 0], [0, 0, 10, 10]],
    ids=["both-swapped", "x-swapped", "y-swapped", "ordered"],
)
def test_corners_are_reordered(corners: list[int]) -> None:
    assert parse_box(corners) == (0.0, 0.0, 10.0, 10.0)
    assert reward("bbox", corners, BOX) == 1.0


@pytest.mark.parametrize("box", [[0, 0, 0, 10], [0, 0, 10, 0], [5, 5, 5, 5], [3, 0, 3.0, 7]])
def test_zero_width_or_height_fails(box: list[float]) -> None:
    with pytest.raises(AnnotationParseError):
        parse_box(box)
    result = score("bbox", box, BOX)
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0


def test_zero_area_target_fails_too() -> None:
    # The target is parsed by the same rules: a degenerate target is not scorable.
    assert score("bbox", BOX, [0, 0, 0, 10])["annotation_parse_ok"] == 0.0


@pytest.mark.parametrize(
    "box",
    [
        [True, 0, 10, 10],
        [0, False, 10, 10],
        ["0", 0, 10, 10],
        [None, 0, 10, 10],
        [[0], 0, 10, 10],
        [{"x": 0}, 0, 10, 10],
        [float("nan"), 0, 10, 10],
        [0, 0, float("inf"), 10],
        [0, float("-inf"), 10, 10],
    ],
    ids=["true", "false", "string", "null", "list", "mapping", "nan", "inf", "-inf"],
)
def test_non_numeric_and_non_finite_coordinates_fail(box: list[object]) -> None:
    with pytest.raises(AnnotationParseError):
        parse_box(box)
    assert not parsed("bbox", box, BOX)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400])
def test_non_finite_and_too_large_coordinates_in_the_response_text_fail(literal: str) -> None:
    # Python's JSON reader accepts NaN/Infinity, 1e400 becomes inf, and a 401-digit
    # integer is too large for a float: all four are parse failures, never exceptions.
    response = f'{{"answer": 2, "annotation": [0, 0, {literal}, 10]}}'
    result = score_response("bbox", response, BOX)
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0
    assert result["answer_reward"] == 1.0


def test_too_large_for_float_integer_fails_directly() -> None:
    with pytest.raises(AnnotationParseError):
        parse_box([0, 0, 10**400, 10])


def test_large_but_finite_integer_coordinates_parse() -> None:
    assert parse_box([0, 0, 10**300, 10]) == (0.0, 0.0, 1e300, 10.0)


@pytest.mark.parametrize("box", [[0, 0, 10], [0, 0, 10, 10, 5], [], [0], "not a box", 7, None, {"x0": 0}])
def test_wrong_coordinate_count_or_shape_fails(box: object) -> None:
    with pytest.raises(AnnotationParseError):
        parse_box(box)
    assert not parsed("bbox", box, BOX)


@pytest.mark.parametrize(
    ("pred", "target", "expected"),
    [
        ([-10, -10, 0, 0], [-10, -10, 0, 0], 1.0),
        ([-5, -5, 5, 5], [0, 0, 10, 10], 25 / 175),
        ([100000, 100000, 100010, 100010], [100000, 100000, 100010, 100020], 0.5),
    ],
    ids=["negative", "straddling-zero", "far-outside-any-image"],
)
def test_coordinates_are_not_clipped(pred: list[int], target: list[int], expected: float) -> None:
    result = score("bbox", pred, target, image_size=[64, 64])
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == expected


def test_floats_are_accepted() -> None:
    assert reward("bbox", [0.0, 0.0, 2.5, 4.0], [0, 0, 5, 4]) == 0.5


# --- strings -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["[0, 0, 10, 10]", "(0, 0, 10, 10)", " [10, 10, 0, 0] ", "[0.0, 0, 1e1, 10]"],
    ids=["json", "python-tuple", "padded-reversed", "json-floats"],
)
def test_string_value_is_read_as_json_then_literal(text: str) -> None:
    assert reward("bbox", text, BOX) == 1.0


def test_string_target_is_read_too() -> None:
    assert reward("bbox", BOX, "(0, 0, 10, 10)") == 1.0


@pytest.mark.parametrize("text", ["0 0 10 10", "[0, 0, 10", "x0=0, y0=0", "", "__import__('os')"])
def test_unreadable_string_fails(text: str) -> None:
    assert not parsed("bbox", text, BOX)


def test_python_literal_response_with_tuple_annotation() -> None:
    result = score_response("bbox", "{'answer': 2, 'annotation': (5, 0, 15, 10)}", BOX)
    assert result["annotation_reward"] == 1 / 3


# --- scalar versus collections ----------------------------------------------


@pytest.mark.parametrize(
    "value",
    [[[0, 0, 10, 10]], [[0, 0, 10, 10], [0, 0, 5, 5]], {"bboxes": [[0, 0, 10, 10]]}, {"bboxes": [0, 0, 10, 10]}],
    ids=["one-item-list", "two-item-list", "wrapper", "wrapper-flat"],
)
def test_set_shaped_value_for_scalar_bbox_fails(value: object) -> None:
    assert not parsed("bbox", value, BOX)


def test_four_boxes_for_scalar_bbox_fail() -> None:
    # Four items, like a box's four numbers, but each is a box: not a box.
    four = [[0, 0, 10, 10]] * 4
    assert not parsed("bbox", four, BOX)


@pytest.mark.parametrize("annotation_type", ["bbox_set", "bbox_sequence"])
def test_collections_accept_a_single_flat_box(annotation_type: str) -> None:
    result = score(annotation_type, [10, 10, 0, 0], [[0, 0, 10, 10]])
    assert result["annotation_reward"] == 1.0
    assert result["annotation_parse_ok"] == 1.0
    # ...and a flat box target is a one-box collection too: a missing second box halves it.
    assert reward(annotation_type, [[0, 0, 10, 10], [20, 20, 30, 30]], [0, 0, 10, 10]) == 0.5


@pytest.mark.parametrize("annotation_type", ["bbox_set", "bbox_sequence"])
def test_collections_accept_the_bboxes_wrapper(annotation_type: str) -> None:
    target = [[0, 0, 10, 10], [20, 20, 30, 30]]
    assert reward(annotation_type, {"bboxes": target}, target) == 1.0
    assert reward(annotation_type, target, {"bboxes": target}) == 1.0
    assert reward(annotation_type, {"bboxes": []}, []) == 1.0
    assert reward(annotation_type, '{"bboxes": [[0, 0, 10, 10], [20, 20, 30, 30]]}', target) == 1.0


@pytest.mark.parametrize("annotation_type", ["bbox_set", "bbox_sequence"])
def test_collections_accept_strings_and_tuples(annotation_type: str) -> None:
    target = [[0, 0, 10, 10], [20, 20, 30, 30]]
    assert reward(annotation_type, "[[0, 0, 10, 10], [20, 20, 30, 30]]", target) == 1.0
    assert reward(annotation_type, "((0, 0, 10, 10), (20, 20, 30, 30))", target) == 1.0
    assert reward(annotation_type, "(0, 0, 10, 10)", target) == 0.5


@pytest.mark.parametrize("annotation_type", ["bbox_set", "bbox_sequence"])
@pytest.mark.parametrize(
    "bad_item",
    [[0, 0, 0, 10], [0, 0, 10], [True, 0, 10, 10], "[0, 0, 10, 10]", None, [0, 0, float("nan"), 10]],
    ids=["zero-width", "three-coords", "boolean", "string-item", "null", "nan"],
)
def test_one_bad_item_fails_the_whole_collection(annotation_type: str, bad_item: object) -> None:
    target = [[0, 0, 10, 10], [20, 20, 30, 30]]
    result = score(annotation_type, [[0, 0, 10, 10], bad_item, [20, 20, 30, 30]], target)
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0


@pytest.mark.parametrize("annotation_type", ["bbox_set", "bbox_sequence"])
@pytest.mark.parametrize("value", [{"boxes": [[0, 0, 10, 10]]}, {"x0": 0}, 5, "nope"])
def test_collections_reject_other_shapes(annotation_type: str, value: object) -> None:
    assert not parsed(annotation_type, value, [[0, 0, 10, 10]])


# --- maps ----------------------------------------------------------------------


@pytest.mark.parametrize("annotation_type", ["bbox_map", "bbox_set_map"])
def test_map_keys_are_stripped(annotation_type: str) -> None:
    target = {"source": [0, 0, 10, 10], "target": [20, 20, 30, 30]}
    pred = {"  source ": [0, 0, 10, 10], "\ttarget\n": [20, 20, 30, 30]}
    result = score(annotation_type, pred, target)
    assert result["annotation_reward"] == 1.0
    assert result["annotation_shared_key_count"] == 2.0


@pytest.mark.parametrize("annotation_type", ["bbox_map", "bbox_set_map"])
@pytest.mark.parametrize("key", ["", "   "])
def test_map_keys_must_be_non_empty(annotation_type: str, key: str) -> None:
    assert not parsed(annotation_type, {key: [0, 0, 10, 10]}, {"a": [0, 0, 10, 10]})


@pytest.mark.parametrize("annotation_type", ["bbox_map", "bbox_set_map"])
def test_map_keys_must_be_unique_after_stripping(annotation_type: str) -> None:
    pred = {"a": [0, 0, 10, 10], " a": [0, 0, 10, 10]}
    assert not parsed(annotation_type, pred, {"a": [0, 0, 10, 10]})


@pytest.mark.parametrize("annotation_type", ["bbox_map", "bbox_set_map"])
def test_map_keys_are_case_sensitive(annotation_type: str) -> None:
    result = score(annotation_type, {"Left": [0, 0, 10, 10]}, {"left": [0, 0, 10, 10]})
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 0.0
    assert result["annotation_shared_key_count"] == 0.0
    assert result["annotation_missing_key_count"] == 1.0
    assert result["annotation_extra_key_count"] == 1.0


def test_bbox_map_rejects_a_string_value() -> None:
    assert not parsed("bbox_map", {"a": "[0, 0, 10, 10]"}, {"a": [0, 0, 10, 10]})


def test_bbox_set_map_reads_a_string_value() -> None:
    target = {"a": [[0, 0, 10, 10], [20, 20, 30, 30]]}
    assert reward("bbox_set_map", {"a": "[[0, 0, 10, 10], [20, 20, 30, 30]]"}, target) == 1.0
    assert reward("bbox_set_map", {"a": "((20, 20, 30, 30), (0, 0, 10, 10))"}, target) == 1.0


def test_bbox_set_map_values_accept_wrapper_and_flat_box() -> None:
    target = {"a": [[0, 0, 10, 10]], "b": [[20, 20, 30, 30], [40, 40, 50, 50]]}
    pred = {"a": [0, 0, 10, 10], "b": {"bboxes": [[40, 40, 50, 50], [20, 20, 30, 30]]}}
    assert reward("bbox_set_map", pred, target) == 1.0


def test_whole_map_may_be_a_string() -> None:
    assert reward("bbox_map", '{"a": [0, 0, 10, 10]}', {"a": [0, 0, 10, 10]}) == 1.0
    assert reward("bbox_set_map", "{'a': [(0, 0, 10, 10)]}", {"a": [[0, 0, 10, 10]]}) == 1.0


@pytest.mark.parametrize("annotation_type", ["bbox_map", "bbox_set_map"])
def test_one_bad_value_fails_the_whole_map(annotation_type: str) -> None:
    pred = {"a": [0, 0, 10, 10], "b": [0, 0, 0, 10]}
    assert not parsed(annotation_type, pred, {"a": [0, 0, 10, 10], "b": [0, 0, 5, 5]})


@pytest.mark.parametrize("annotation_type", ["bbox_map", "bbox_set_map"])
@pytest.mark.parametrize("value", [[[0, 0, 10, 10]], [0, 0, 10, 10], 3, "[1, 2]"])
def test_maps_reject_non_mappings(annotation_type: str, value: object) -> None:
    assert not parsed(annotation_type, value, {"a": [0, 0, 10, 10]})


def test_bbox_map_value_must_be_a_single_box() -> None:
    assert not parsed("bbox_map", {"a": [[0, 0, 10, 10]]}, {"a": [0, 0, 10, 10]})
    assert not parsed("bbox_map", {"a": {"bboxes": [[0, 0, 10, 10]]}}, {"a": [0, 0, 10, 10]})


# --- missing or unusable annotations -------------------------------------------


@pytest.mark.parametrize("annotation_type", ["bbox", "bbox_set", "bbox_sequence", "bbox_map", "bbox_set_map"])
def test_missing_or_null_annotation_scores_zero(annotation_type: str) -> None:
    target = {"bbox": BOX, "bbox_map": {"a": BOX}, "bbox_set_map": {"a": [BOX]}}.get(annotation_type, [BOX])
    for response in ('{"answer": 2}', '{"answer": 2, "annotation": null}'):
        result = score_response(annotation_type, response, target)
        assert result["annotation_parse_ok"] == 0.0
        assert result["annotation_reward"] == 0.0
        assert math.isclose(result["overall"], 0.5)
