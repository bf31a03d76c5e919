"""``trace_tasks.data._records``: frozen records, one strict converter, contracts resolved by the builder."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import attrs
import pytest

from trace_tasks import RecordError, resolve_reward_contract, score_trace_response
from trace_tasks.data import (
    AnnotationGT,
    AnswerGT,
    TraceInstance,
    TrainInstance,
    build_instance,
    instance_from_dict,
    instance_to_dict,
    iter_jsonl,
)


def built() -> TraceInstance:
    return build_instance(
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "point_set", "value": [[1, 2], [3, 4]]},
        id="inst-1",
        image_size=(640, 480),
        metadata={"source": "unit"},
    )


def test_build_instance_resolves_the_contract() -> None:
    instance = built()
    assert instance.reward_contract == resolve_reward_contract(answer_type="integer", annotation_type="point_set")
    assert instance.reward_contract.annotation.id == "point_set_soft_distance_v0"
    assert instance.answer_gt == AnswerGT("integer", 7)
    assert instance.annotation_gt == AnnotationGT("point_set", [[1, 2], [3, 4]])


def test_build_instance_rejects_an_unknown_type() -> None:
    with pytest.raises(ValueError, match="unsupported annotation type"):
        build_instance(answer_gt={"type": "integer", "value": 7}, annotation_gt={"type": "mask", "value": []})


def test_records_are_frozen() -> None:
    instance = built()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        instance.id = "other"  # type: ignore[misc]


def test_round_trip_through_the_converter() -> None:
    instance = built()
    data = instance_to_dict(instance)
    assert instance_from_dict(data) == instance
    assert data["reward_contract"] == instance.reward_contract.to_dict()


def test_round_trip_through_json_lines() -> None:
    instance = built()
    line = json.dumps(instance_to_dict(instance))
    rows = list(iter_jsonl(io.StringIO(line + "\n\n")))
    assert len(rows) == 1
    number, value, error = rows[0]
    assert (number, error) == (1, None)
    assert instance_from_dict(value) == instance


def test_none_fields_are_left_out() -> None:
    instance = build_instance(answer_gt={"type": "integer", "value": 7}, annotation_gt={"type": "bbox", "value": [0, 0, 1, 1]})
    assert set(instance_to_dict(instance)) == {"answer_gt", "annotation_gt", "reward_contract"}


def test_train_instance_round_trip() -> None:
    data = {**instance_to_dict(built()), "prompt": "Count the dots.", "image": "img/1.png"}
    train = instance_from_dict(data, cls=TrainInstance)
    assert isinstance(train, TrainInstance)
    assert (train.prompt, train.image) == ("Count the dots.", "img/1.png")
    assert instance_to_dict(train) == data


def test_scoring_kwargs_feed_the_scorer() -> None:
    result = score_trace_response(response='{"answer": 7, "annotation": [[3, 4], [1, 2]]}', **built().scoring_kwargs())
    assert result["overall"] == 1.0
    assert result["annotation_point_half_life_px"] == pytest.approx(28.0)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(bogus=1), "$"),
        (lambda d: d["answer_gt"].update(extra=1), "$.answer_gt"),
        (lambda d: d["annotation_gt"].update(note="x"), "$.annotation_gt"),
    ],
)
def test_unknown_keys_are_rejected_with_their_path(change: Any, path: str) -> None:
    data = copy.deepcopy(instance_to_dict(built()))
    change(data)
    with pytest.raises(RecordError) as info:
        instance_from_dict(data)
    message = str(info.value)
    assert f"@ {path}" in message or f"{path}:" in message
    assert "extra" in message or "unknown" in message


def test_unknown_contract_keys_are_rejected() -> None:
    data = copy.deepcopy(instance_to_dict(built()))
    data["reward_contract"]["legacy"] = True
    with pytest.raises(RecordError, match="legacy"):
        instance_from_dict(data)


def test_wrong_field_type_names_the_path() -> None:
    data = copy.deepcopy(instance_to_dict(built()))
    data["annotation_gt"]["type"] = 5
    with pytest.raises(RecordError, match=r"\$\.annotation_gt\.type"):
        instance_from_dict(data)


def test_missing_field_is_rejected() -> None:
    data = copy.deepcopy(instance_to_dict(built()))
    del data["reward_contract"]
    with pytest.raises(RecordError, match="reward_contract"):
        instance_from_dict(data)


def test_non_object_instance_is_rejected() -> None:
    with pytest.raises(RecordError, match=r"\$"):
        instance_from_dict([1, 2])


@pytest.mark.parametrize(
    ("side", "key", "value", "expected"),
    [
        ("annotation", "id", "point_soft_distance_v0", "must match the resolved contract"),
        ("annotation", "type", "bbox_set", "annotation.type must match annotation_gt.type"),
        ("answer", "type", "number", "answer.type must match answer_gt.type"),
        ("answer", "id", "answer_fuzzy_v0", "answer.id must be 'answer_exact_match_v0'"),
        ("annotation", "id", "point_set_soft_distance_v1", "annotation.id must be one of"),
    ],
)
def test_hand_authored_contract_that_disagrees_is_rejected(side: str, key: str, value: str, expected: str) -> None:
    data = copy.deepcopy(instance_to_dict(built()))
    data["reward_contract"][side][key] = value
    with pytest.raises(RecordError, match=expected) as info:
        instance_from_dict(data)
    assert "$.reward_contract" in str(info.value)


def test_record_name_is_in_the_message() -> None:
    data = copy.deepcopy(instance_to_dict(built()))
    data["bogus"] = 1
    with pytest.raises(RecordError, match=r"^rows\.jsonl:3: "):
        instance_from_dict(data, record="rows.jsonl:3")


def test_bad_json_line_is_reported_not_raised() -> None:
    rows = list(iter_jsonl(io.StringIO('{"a": 1}\nnot json\n')))
    assert rows[0] == (1, {"a": 1}, None)
    assert rows[1][0] == 2 and rows[1][1] is None and "line 2" in rows[1][2]
