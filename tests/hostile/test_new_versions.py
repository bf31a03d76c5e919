"""The hostile corpora under the opt-in versions of issue 39: click rewards of ``bbox`` and ``answer_relaxed_match_v0``.

Every corpus response predicts a box, an answer or nothing; under a click
version none of them earns annotation reward (a box is not a click), and under
the relaxed answer policy none earns an answer reward the exact policy denies,
except where the policy is the point (a number read from a string within 5%).
Hedges naming two letters or two numbers earn nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from trace_tasks import pin_reward_id, resolve_reward_contract, score_trace_response, unpin_reward_id
from trace_tasks.plugins import reset_registry

from .helpers import check_result
from .test_corpus import CASES, Case


@pytest.fixture
def pin() -> Iterator[Any]:
    pinned: list[str] = []

    def add(kind: str, reward_id: str) -> None:
        pin_reward_id(kind, reward_id)
        pinned.append(kind)

    try:
        yield add
    finally:
        for kind in pinned:
            unpin_reward_id(kind)
        reset_registry()


def _score(case: Case, answer_type: str | None = None) -> dict[str, float]:
    instance = dict(case.instance)
    kind = answer_type or instance.get("answer_type", "integer")
    answer = instance.get("answer", 7)
    annotation = instance.get("annotation", [0, 0, 10, 10])
    annotation_type = instance.get("annotation_type", "bbox")
    result = score_trace_response(
        response=case.response,
        answer_gt={"type": kind, "value": answer},
        annotation_gt={"type": annotation_type, "value": list(annotation) if isinstance(annotation, tuple) else annotation},
        reward_contract=resolve_reward_contract(answer_type=kind, annotation_type=annotation_type).to_dict(),
    )
    check_result(result)
    return result


@pytest.mark.parametrize("reward_id", ["bbox_click_hit_v0", "bbox_click_soft_v0"])
@pytest.mark.parametrize("case", [c for c in CASES if c.instance.get("annotation_type", "bbox") == "bbox"], ids=lambda c: c.name)
def test_corpus_under_click_versions(pin: Any, reward_id: str, case: Case) -> None:
    pin("bbox", reward_id)
    result = _score(case)
    assert result["annotation_reward"] == 0.0
    assert result["annotation_parse_ok"] == 0.0


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.instance.get("answer_type", "integer") == "integer"], ids=lambda c: c.name
)
def test_corpus_under_the_relaxed_number_policy(pin: Any, case: Case) -> None:
    exact = _score(case, "number")
    pin("number", "answer_relaxed_match_v0")
    relaxed = _score(case, "number")
    # The relaxed policy reads the one number of an answer: it never credits a response the exact policy
    # refuses unless that response names exactly one number within 5% of 7 (none of the corpus does).
    assert relaxed["answer_reward"] <= exact["answer_reward"]


HEDGES = ["A or B", "A, B", "A/B", "A and B", "A B C D", "AB", ["A", "B"], "(A) or (B)", "Answer: A. Answer: B", "\\boxed{A} (B)"]


@pytest.mark.parametrize("hedge", HEDGES, ids=repr)
def test_two_letters_earn_nothing(pin: Any, hedge: Any) -> None:
    pin("option_letter", "answer_relaxed_match_v0")
    contract = resolve_reward_contract(answer_type="option_letter", annotation_type="bbox").to_dict()
    for target in ("A", "B"):
        result = score_trace_response(
            response=json.dumps({"answer": hedge}),
            answer_gt={"type": "option_letter", "value": target},
            annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
            reward_contract=contract,
            trace_reward_mode="answer",
        )
        assert result["answer_reward"] == 0.0


@pytest.mark.parametrize("hedge", ["7 or 8", "7, 8", "7/8", "7 8", [7, 8], "7 (or 7.2)", "between 6.9 and 7.1"], ids=repr)
def test_two_numbers_earn_nothing(pin: Any, hedge: Any) -> None:
    pin("number", "answer_relaxed_match_v0")
    contract = resolve_reward_contract(answer_type="number", annotation_type="bbox").to_dict()
    result = score_trace_response(
        response=json.dumps({"answer": hedge}),
        answer_gt={"type": "number", "value": 7},
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
        reward_contract=contract,
        trace_reward_mode="answer",
    )
    assert result["answer_reward"] == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "answer" + " " * 200_000 + "B",
        "Answer:" * 50_000,
        "\\boxed{" * 50_000,
        "(" * 100_000 + "B",
        "1," * 100_000 + "1",
        "1" * 4000 + "." + "2" * 4000,
        "1e" + "9" * 5000,
    ],
    ids=lambda t: t[:12],
)
def test_long_hostile_answers_are_read_without_error(pin: Any, text: str) -> None:
    # The readers are single passes of regular expressions without nested repetition (linear); here: no error,
    # a sane result.
    for kind, target in (("number", 7), ("option_letter", "B")):
        pin(kind, "answer_relaxed_match_v0")
        contract = resolve_reward_contract(answer_type=kind, annotation_type="bbox").to_dict()
        result = score_trace_response(
            response=json.dumps({"answer": text}),
            answer_gt={"type": kind, "value": target},
            annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
            reward_contract=contract,
            trace_reward_mode="answer",
        )
        check_result(result)
