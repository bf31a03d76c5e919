"""``response_json_schema(instance=...)`` and ``format_instructions(instance=...)`` (issue 35, item 5).

A map type's role keys, read from the instance's target as the parser reads
them, are the annotation's required and only keys (the type-level schema can
only say "any role key", and its example shows ``k0``, ``k1``). Nothing else of
the target reaches the schema or the text: two instances with the same keys
and other values or set sizes give the same output.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trace_tasks import OptionError, format_instructions, response_json_schema, score_trace_response
from trace_tasks.family import schema_problems

from .helpers import contract


def _instance(annotation_type: str, value: Any, answer: Any = 2, answer_type: str = "integer") -> dict[str, Any]:
    return {
        "id": "row-1",
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": contract(answer_type, annotation_type),
    }


POINTS = _instance("point_set_map", {" left ": [[1, 2], [3, 4], [5, 6]], "right": [[7, 8]]})


def test_the_role_keys_are_the_required_and_only_keys() -> None:
    schema = response_json_schema(instance=POINTS)
    annotation = schema["properties"]["annotation"]
    assert list(annotation["properties"]) == annotation["required"] == ["left", "right"]  # stripped, in order
    assert annotation["additionalProperties"] is False and "propertyNames" not in annotation
    type_level = response_json_schema(answer_type="integer", annotation_type="point_set_map")
    assert annotation["properties"]["left"] == type_level["properties"]["annotation"]["additionalProperties"]
    good = {"answer": 2, "annotation": {"left": [[1, 2]], "right": []}}
    assert not schema_problems(good, schema)
    assert schema_problems({"answer": 2, "annotation": {"left": [[1, 2]]}}, schema)  # a role missing
    assert schema_problems({"answer": 2, "annotation": {"left": [], "right": [], "k0": []}}, schema)  # an extra key
    assert schema["required"] == ["answer", "annotation"] and schema["additionalProperties"] is False


def test_the_instructions_name_the_role_keys_and_the_example_uses_them() -> None:
    text = format_instructions(instance=POINTS)
    assert '"left", "right"' in text and "k0" not in text
    example = json.loads(text.rsplit("Example: ", 1)[1])
    assert list(example["annotation"]) == ["left", "right"]
    assert not schema_problems(example, response_json_schema(instance=POINTS))
    # A perfect answer validates and scores 1.
    fields = {k: POINTS[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    perfect = {"answer": 2, "annotation": {"left": [[1, 2], [3, 4], [5, 6]], "right": [[7, 8]]}}
    assert not schema_problems(perfect, response_json_schema(instance=POINTS))
    assert score_trace_response(response=json.dumps(perfect), **fields)["overall"] == 1.0


@pytest.mark.parametrize("tagged", [False, True])
def test_nothing_but_the_keys_reaches_the_output(tagged: bool) -> None:
    other = _instance("point_set_map", {"left": [], "right": [[0, 0]] * 9}, answer=7)
    assert response_json_schema(instance=other) == response_json_schema(instance=POINTS)
    assert format_instructions(instance=other, format_accept_answer_tag=tagged) == format_instructions(
        instance=POINTS, format_accept_answer_tag=tagged
    )
    text = format_instructions(instance=POINTS, format_accept_answer_tag=tagged)
    example = json.loads(text.rsplit("Example: ", 1)[1].removeprefix("<answer>").removesuffix("</answer>"))
    assert len({len(items) for items in example["annotation"].values()}) == 1  # one list for every role: no sizes


def test_a_map_target_given_as_a_string_and_a_bbox_map() -> None:
    boxes = _instance("bbox_map", '{"cup": [0, 0, 5, 5], "plate": [5, 5, 9, 9]}')
    annotation = response_json_schema(instance=boxes)["properties"]["annotation"]
    assert annotation["required"] == ["cup", "plate"]
    assert '"cup", "plate"' in format_instructions(instance=boxes)


@pytest.mark.parametrize("annotation_type", ["bbox", "point_set", "segment_set", "bbox_sequence"])
def test_types_without_role_keys_get_the_type_level_schema(annotation_type: str) -> None:
    value = {"bbox": [0, 0, 5, 5], "point_set": [[1, 2]], "segment_set": [[[0, 0], [1, 1]]], "bbox_sequence": [[0, 0, 5, 5]]}
    row = _instance(annotation_type, value[annotation_type])
    assert response_json_schema(instance=row) == response_json_schema(answer_type="integer", annotation_type=annotation_type)
    assert format_instructions(instance=row) == format_instructions(answer_type="integer", annotation_type=annotation_type)


def test_answer_mode_and_explicit_types() -> None:
    assert response_json_schema(instance=POINTS, trace_reward_mode="answer") == response_json_schema(
        answer_type="integer", trace_reward_mode="answer"
    )
    same = response_json_schema(instance=POINTS, answer_type="integer", annotation_type="point_set_map")
    assert same == response_json_schema(instance=POINTS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"instance": POINTS, "answer_type": "string"}, "disagrees with the instance's answer_gt.type"),
        ({"instance": POINTS, "annotation_type": "point_map"}, "disagrees with the instance's annotation_gt.type"),
        ({"instance": [1]}, "instance must be an instance record"),
        ({"instance": {"answer_gt": {"type": "integer"}}}, "annotation_gt.type must be a non-empty string"),
        ({"instance": _instance("point_map", [[1, 2]])}, "must be a non-empty mapping of role keys"),
        ({"instance": _instance("point_map", {"a": [1, 2], " a": [3, 4]})}, "one once stripped"),
    ],
)
def test_caller_mistakes_are_option_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        response_json_schema(**kwargs)
    with pytest.raises(OptionError, match=message):
        format_instructions(**kwargs)
