"""The hostile corpora under a declared prediction frame and under native reading (issue 35, items 1 and 2).

A frame only rescales a prediction that parsed, and native reading only reads a
value the owner recognises as a model-native shape: neither may turn a hedge,
a flood or a malformed value into reward.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trace_tasks.scoring import PREDICTION_FRAMES

from .helpers import score
from .test_corpus import CASES, Case

#: Every declared reading: each frame (with an image size) and native reading (with and without a frame).
READINGS: list[dict[str, Any]] = [
    *({"prediction_frame": frame, "image_size": [100, 100]} for frame in PREDICTION_FRAMES if frame != "pixel"),
    {"annotation_native": True},
    {"annotation_native": True, "prediction_frame": "rel1000", "image_size": [100, 100]},
]
READING_IDS = [",".join(f"{k}={v}" for k, v in r.items() if k != "image_size") for r in READINGS]

BOX = [10, 10, 50, 50]
OTHER = [100, 100, 140, 140]


@pytest.mark.parametrize("reading", READINGS, ids=READING_IDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_hostile_case_earns_no_more_under_a_declared_reading(case: Case, reading: dict[str, Any]) -> None:
    instance = dict(case.instance)
    plain = score(case.response, **instance, image_size=[100, 100])
    got = score(case.response, **instance, **reading)  # check_result: finite floats, rewards in [0, 1]
    assert got["answer_reward"] == plain["answer_reward"]
    if plain["annotation_parse_ok"] == 0.0:  # what did not parse in pixels does not parse in any frame
        assert got["annotation_reward"] == 0.0 and got["annotation_parse_ok"] == 0.0


def _resp(annotation: Any) -> str:
    return "Reasoning...\n" + json.dumps({"answer": 7, "annotation": annotation})


NATIVE_HEDGES: list[tuple[str, Any, Any]] = [
    ("bbox", [{"bbox_2d": BOX}, {"bbox_2d": OTHER}], BOX),  # two boxes for one
    ("bbox", [{"bbox_2d": BOX}] * 50, BOX),  # a flood of one box for one
    ("bbox", [{"bbox_2d": BOX, "label": "a"}, {"bbox_2d": BOX, "label": "a"}], BOX),
    ("bbox", {"bbox_2d": [BOX, OTHER]}, BOX),  # a list of boxes under the key
    ("point", [{"point_2d": [20, 20]}, {"point_2d": [30, 30]}], [20, 20]),
    ("bbox_map", [{"bbox_2d": BOX, "label": "cat"}, {"bbox_2d": OTHER, "label": "cat"}], {"cat": BOX}),  # repeated label
    ("bbox_map", [{"bbox_2d": BOX, "label": "dog"}], {"cat": BOX}),  # unknown label
    ("bbox_map", [{"bbox_2d": BOX}], {"cat": BOX}),  # missing label
    ("bbox_map", [{"bbox_2d": BOX, "label": ""}], {"cat": BOX}),  # empty label
    ("point_map", [{"point_2d": [1, 2], "label": 3}], {"3": [1, 2]}),  # a label that is no string
]


@pytest.mark.parametrize(("annotation_type", "hedge", "target"), NATIVE_HEDGES, ids=range(len(NATIVE_HEDGES)))
def test_a_native_hedge_earns_nothing(annotation_type: str, hedge: Any, target: Any) -> None:
    got = score(_resp(hedge), annotation_type=annotation_type, annotation=target, annotation_native=True)
    assert got["annotation_reward"] == 0.0 and got["annotation_parse_ok"] == 0.0


@pytest.mark.parametrize("copies", [2, 10, 1000])
def test_a_native_flood_of_one_box_in_a_set_scores_as_the_same_flood_does(copies: int) -> None:
    flood = score(_resp([BOX] * copies), annotation_type="bbox_set", annotation=[BOX])
    native = score(_resp([{"bbox_2d": BOX}] * copies), annotation_type="bbox_set", annotation=[BOX], annotation_native=True)
    assert native["annotation_reward"] == flood["annotation_reward"] == pytest.approx(1.0 / copies)


def test_native_reading_never_reads_a_value_that_has_no_final_object() -> None:
    """A bare grounding list with no final object has no answer and no annotation: native reading changes nothing."""
    bare = json.dumps([{"bbox_2d": BOX, "label": "cat"}])
    plain = score(bare, annotation=BOX)
    native = score(bare, annotation=BOX, annotation_native=True)
    assert native["annotation_reward"] == plain["annotation_reward"] == 0.0
    assert native["annotation_native_format"] == plain["annotation_native_format"] == 1.0
