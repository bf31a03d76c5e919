"""Reward hacking: no hedge, duplicate or hidden answer scores better than the honest answer.

Each test scores an honest response and one or more hacks against the same
instance and asserts the hack's ``overall`` (and the component it targets) is
not higher; most are strictly lower.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import score

BOX = [10, 10, 50, 50]
OTHER = [100, 100, 140, 140]


def _resp(answer: Any, annotation: Any = None) -> str:
    payload = {"answer": answer} if annotation is None else {"answer": answer, "annotation": annotation}
    return "Reasoning...\n" + json.dumps(payload)


def _assert_no_better(honest: dict[str, float], hack: dict[str, float], key: str = "overall") -> None:
    assert hack[key] <= honest[key]
    assert hack["overall"] <= honest["overall"]


@pytest.mark.parametrize("mode", ["answer", "answer_and_annotation"])
@pytest.mark.parametrize(
    "guesses",
    [[1, 2, 3], [7, 8], [8, 7], [7], {"a": 7}, "7 or 8", "7, 8", "7/8", "7 8", "maybe 7", "", "[7, 8]", "{7}"],
    ids=repr,
)
def test_many_guesses_for_an_integer(mode: str, guesses: Any) -> None:
    honest = score(_resp(7, BOX), annotation=BOX, mode=mode)
    hack = score(_resp(guesses, BOX), annotation=BOX, mode=mode)
    assert honest["answer_reward"] == 1.0
    assert hack["answer_reward"] == 0.0
    _assert_no_better(honest, hack)


@pytest.mark.parametrize("hedge", ["A or B", "A, B", "A/B", "A and B", "A B C D", "AB", ["A", "B"], "(A)", "any of A"])
def test_hedged_option_letters(hedge: Any) -> None:
    kwargs: dict[str, Any] = {"answer": "A", "answer_type": "option_letter", "mode": "answer"}
    honest = score(_resp("A"), **kwargs)
    hack = score(_resp(hedge), **kwargs)
    assert honest["answer_reward"] == 1.0
    assert hack["answer_reward"] == 0.0


@pytest.mark.parametrize("hedge", ["red or blue", "red blue", ["red", "blue"], "red, blue, green"])
def test_hedged_strings(hedge: Any) -> None:
    kwargs: dict[str, Any] = {"answer": "red", "answer_type": "string", "mode": "answer"}
    assert score(_resp("Red "), **kwargs)["answer_reward"] == 1.0
    assert score(_resp(hedge), **kwargs)["answer_reward"] == 0.0


@pytest.mark.parametrize(
    "many",
    [[BOX, OTHER], [BOX, BOX], [BOX] * 50, {"bboxes": [BOX, OTHER]}, [BOX + OTHER], [[BOX]]],
    ids=["two", "twice", "fifty", "wrapped", "eight_numbers", "nested"],
)
def test_many_boxes_for_a_single_box_contract_fail_or_score_no_better(many: Any) -> None:
    honest = score(_resp(7, BOX), annotation=BOX)
    hack = score(_resp(7, many), annotation=BOX)
    assert honest["annotation_reward"] == 1.0
    assert hack["annotation_parse_ok"] == 0.0 or hack["annotation_reward"] < 1.0
    _assert_no_better(honest, hack, "annotation_reward")


@pytest.mark.parametrize("copies", [2, 3, 10, 1000])
def test_the_same_box_repeated_in_a_set_scores_worse(copies: int) -> None:
    honest = score(_resp(7, [BOX]), annotation_type="bbox_set", annotation=[BOX])
    hack = score(_resp(7, [BOX] * copies), annotation_type="bbox_set", annotation=[BOX])
    assert honest["annotation_reward"] == 1.0
    assert hack["annotation_reward"] == pytest.approx(1.0 / copies)
    assert hack["overall"] < honest["overall"]


def test_jittered_boxes_around_each_target_score_worse_than_one_box_each() -> None:
    targets = [BOX, OTHER]
    jitter = [[x + d for x in box] for box in targets for d in (-2, -1, 0, 1, 2)]
    honest = score(_resp(7, targets), annotation_type="bbox_set", annotation=targets)
    hack = score(_resp(7, jitter), annotation_type="bbox_set", annotation=targets)
    assert hack["annotation_reward"] < honest["annotation_reward"] == 1.0


@pytest.mark.parametrize("annotation_type", ["point_set", "point_sequence"])
def test_extra_predicted_points_score_worse(annotation_type: str) -> None:
    target = [[20, 20], [80, 80]]
    honest = score(_resp(7, target), annotation_type=annotation_type, annotation=target)
    for extra in ([[50, 50]], [[20, 20], [80, 80]], [[x, x] for x in range(0, 200, 10)]):
        hack = score(_resp(7, target + extra), annotation_type=annotation_type, annotation=target)
        assert hack["annotation_reward"] < honest["annotation_reward"] == 1.0


def test_extra_segments_and_map_keys_score_worse() -> None:
    segment = [[0, 0], [100, 0]]
    honest = score(_resp(7, [segment]), annotation_type="segment_set", annotation=[segment])
    hack = score(_resp(7, [segment, segment[::-1], [[0, 0], [0, 100]]]), annotation_type="segment_set", annotation=[segment])
    assert hack["annotation_reward"] < honest["annotation_reward"] == 1.0
    target = {"cat": BOX}
    honest = score(_resp(7, target), annotation_type="bbox_map", annotation=target)
    hack = score(_resp(7, {"cat": BOX, "Cat": BOX, "dog": BOX}), annotation_type="bbox_map", annotation=target)
    assert hack["annotation_reward"] < honest["annotation_reward"] == 1.0


HIDDEN = [
    'I think {"answer": 7, "annotation": [10, 10, 50, 50]} but finally:\n{"answer": 8, "annotation": [10, 10, 50, 50]}',
    "<answer>7</answer>\n" + '{"answer": 8, "annotation": [10, 10, 50, 50]}',
    '```json\n{"answer": 7, "annotation": [10, 10, 50, 50]}\n```\nActually: {"answer": 8, "annotation": [10, 10, 50, 50]}',
    '{"answer": 7, "annotation": [10, 10, 50, 50]}{"answer": 8, "annotation": [10, 10, 50, 50]}',
    '<think>the answer is 7</think>{"answer": 8, "annotation": [10, 10, 50, 50]}',
    '{"answer": 7}\n```json\n{"answer": 8, "annotation": [10, 10, 50, 50]}\n```',
]


@pytest.mark.parametrize("response", HIDDEN, ids=range(len(HIDDEN)))
@pytest.mark.parametrize("mode", ["answer", "answer_and_annotation"])
def test_an_answer_hidden_in_the_reasoning_loses_to_the_final_object(response: str, mode: str) -> None:
    honest = score(_resp(7, BOX), annotation=BOX, mode=mode)
    hack = score(response, annotation=BOX, mode=mode)
    assert hack["answer_reward"] == 0.0
    _assert_no_better(honest, hack)


def test_a_wrong_answer_with_a_perfect_box_gets_nothing_under_the_gated_formula() -> None:
    hack = score(_resp(8, BOX), annotation=BOX)
    assert hack["annotation_reward"] == 1.0
    assert hack["overall"] == 0.0


def test_a_python_literal_set_of_guesses_does_not_match_an_integer() -> None:
    honest = score("{'answer': 7}", mode="answer")
    hack = score("{'answer': {6, 7, 8}}", mode="answer")
    assert hack["answer_reward"] == 0.0 < honest["answer_reward"]
