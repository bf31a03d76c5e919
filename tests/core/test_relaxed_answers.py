"""answer_relaxed_match_v0 and the relaxed_accuracy view (issue 39, item 4).

The relaxed number match is checked against ChartQA's formula written out here
(|p - t| / |t| <= 0.05, exact for t = 0); letters against the forms models
write; pinning, contracts and compiled instances through the public API; the
default contract and its exact match stay as they were.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from trace_tasks import (
    RewardPinError,
    compile_instance,
    pin_reward_id,
    resolve_reward_contract,
    score_trace_response,
    unpin_reward_id,
    validate_reward_contract_payload,
)
from trace_tasks.errors import OptionError
from trace_tasks.plugins import reset_registry
from trace_tasks.scoring import (
    ANSWER_ACCURACY,
    RELAXED_ACCURACY,
    options_from,
    read_number,
    read_option_letter,
    relaxed_number_match,
    row_metrics,
)

RELAXED = "answer_relaxed_match_v0"
BOX = {"type": "bbox", "value": [0, 0, 10, 10]}


@pytest.fixture
def pinned() -> Iterator[Any]:
    kinds: list[str] = []

    def pin(kind: str) -> dict[str, Any]:
        pin_reward_id(kind, RELAXED)
        kinds.append(kind)
        return resolve_reward_contract(answer_type=kind, annotation_type="bbox").to_dict()

    try:
        yield pin
    finally:
        for kind in kinds:
            unpin_reward_id(kind)
        reset_registry()


def chartqa(prediction: float, target: float, tolerance: float = 0.05) -> bool:
    """ChartQA's relaxed correctness, as its evaluation writes it (a zero target needs an exact answer)."""
    if target == 0:
        return prediction == target
    return abs(prediction - target) / abs(target) <= tolerance


def answer(contract: dict[str, Any], predicted: Any, kind: str, target: Any, **options: Any) -> float:
    result = score_trace_response(
        response=json.dumps({"answer": predicted}),
        answer_gt={"type": kind, "value": target},
        annotation_gt=BOX,
        reward_contract=contract,
        trace_reward_mode="answer",
        **options,
    )
    return result["answer_reward"]


def test_relaxed_number_match_agrees_with_chartqa() -> None:
    rng = random.Random(39)
    for _ in range(2000):
        target = rng.choice([0.0, rng.uniform(-1000, 1000), float(rng.randint(-50, 50))])
        prediction = target * rng.uniform(0.9, 1.1) if rng.random() < 0.8 else rng.uniform(-1000, 1000)
        tolerance = rng.choice([0.05, 0.01, 0.1])
        assert relaxed_number_match(prediction, target, tolerance) == chartqa(prediction, target, tolerance)
        assert relaxed_number_match(repr(prediction), target, tolerance) == chartqa(prediction, target, tolerance)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("19.49", 19.49),
        ("about 19.49%", 19.49),
        ("1,234.5", 1234.5),
        ("-3", -3.0),
        (".5", 0.5),
        ("7 and 7.0", 7.0),
        (".35e1", 3.5),  # was read as 0.35: the leading-dot form had no exponent
        ("\u22125", -5.0),  # the typeset minus sign: was read as +5
        ("\u2212.5e1", -5.0),
        (10**302, 1e302),  # an int a float holds: was refused from 2**1000 on
    ],
)
def test_read_number(text: str, number: float) -> None:
    assert read_number(text) == number


@pytest.mark.parametrize("text", ["7 or 8", "", "none", "1e999", True, None, [7], "3-4", 10**400, "5 \u22125"])
def test_read_number_refuses(text: Any) -> None:
    assert read_number(text) is None


@pytest.mark.parametrize(
    "text",
    [
        *["B", "b", "(B)", "B.", "B) Settings", "Answer: B", "The answer is (B)", "\\boxed{B}", "\\boxed{(B)}"],
        # Case-insensitive in every form (only the bare letter was) ...
        *["(b)", "b.", "b) Settings", "Answer: b", "answer: (b)", "\\boxed{b}", "\\boxed{(b)}"],
    ],
)
def test_letter_forms(text: str) -> None:
    assert read_option_letter(text) == "B"


@pytest.mark.parametrize(
    "text",
    # ... but for "the answer is a ...", where a lower-case letter is an article.
    ["(A) or (B)", "A, B", "B. or C.", "Answer: B \\boxed{C}", "", "AB", "none of them", 2, "the answer is a dog", "(b) or (c)"],
)
def test_letter_refusals(text: Any) -> None:
    assert read_option_letter(text) is None


def test_never_current_by_default() -> None:
    contract = resolve_reward_contract(answer_type="number", annotation_type="bbox").to_dict()
    assert contract["answer"]["id"] == "answer_exact_match_v0"
    assert answer(contract, 19.49, "number", 19.5) == 0.0  # the training contract: exact


def test_pinned_number_policy(pinned: Any) -> None:
    contract = pinned("number")
    assert contract["answer"]["id"] == RELAXED
    assert answer(contract, 19.49, "number", 19.5) == 1.0
    assert answer(contract, "Answer: 19.49", "number", 19.5) == 1.0
    assert answer(contract, 21, "number", 19.5) == 0.0
    assert answer(contract, 21, "number", 19.5, answer_relative_tolerance=0.1) == 1.0
    assert answer(contract, "19.49 or 20", "number", 19.5) == 0.0
    assert answer(contract, 0.0001, "number", 0) == 0.0


def test_pinned_letter_policy(pinned: Any) -> None:
    contract = pinned("option_letter")
    for text in ["(B)", "B.", "B) Settings", "Answer: B", "\\boxed{B}", "b"]:
        assert answer(contract, text, "option_letter", "B") == 1.0, text
    assert answer(contract, "(A) or (B)", "option_letter", "B") == 0.0
    assert answer(contract, "(C)", "option_letter", "B") == 0.0


def test_a_json_literal_letter_reads_as_the_exact_match_reads_it(pinned: Any) -> None:
    # The target '"B"' (a valid target, read as B) compared as '"B"' with its quotes: nothing matched it.
    contract = pinned("option_letter")
    for text in ["B", "(B)", "\\boxed{b}"]:
        assert answer(contract, text, "option_letter", '"B"') == 1.0, text
    assert answer(contract, '"B"', "option_letter", "B") == 1.0  # a prediction written as the JSON string "B"
    assert answer(contract, '"C"', "option_letter", '"B"') == 0.0


def test_the_typeset_minus_is_a_sign(pinned: Any) -> None:
    contract = pinned("number")
    assert answer(contract, "\u22125", "number", -5) == 1.0
    assert answer(contract, "\u22125", "number", 5) == 0.0  # a sign error earned the reward


def test_tolerance_option_is_checked() -> None:
    contract = resolve_reward_contract(answer_type="number", annotation_type="bbox").to_dict()
    for bad in (-0.1, 1.0, float("nan"), "x", 10**400):
        with pytest.raises(OptionError, match="answer_relative_tolerance"):
            answer(contract, 1, "number", 1, answer_relative_tolerance=bad)


def test_pinning_a_type_it_does_not_score_fails() -> None:
    with pytest.raises(RewardPinError, match="number, option_letter"):
        pin_reward_id("integer", RELAXED)
    reset_registry()


def test_a_relaxed_contract_without_the_pin_is_refused_and_scores_exactly() -> None:
    contract = {
        "reward_contract_version": "v0",
        "answer": {"id": RELAXED, "type": "number"},
        "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
    }
    message = validate_reward_contract_payload(contract, answer_type="number", annotation_type="bbox")
    assert message == "reward_contract.answer.id must be 'answer_exact_match_v0'"
    assert answer(contract, 19.49, "number", 19.5) == 0.0  # not pinned: never the relaxed policy


def test_pinned_contract_validates_and_compiles(pinned: Any) -> None:
    contract = pinned("number")
    assert validate_reward_contract_payload(contract, answer_type="number", annotation_type="bbox") is None
    compiled = compile_instance(
        {"answer_gt": {"type": "number", "value": 19.5}, "annotation_gt": BOX, "reward_contract": contract}
    )
    response = json.dumps({"answer": 19.49, "annotation": [0, 0, 10, 10]})
    lenient = score_trace_response(
        response=response, answer_gt={"type": "number", "value": 19.5}, annotation_gt=BOX, reward_contract=contract
    )
    assert compiled.score(response) == lenient and lenient["answer_reward"] == 1.0


def test_relaxed_accuracy_is_a_view_whatever_the_version() -> None:
    contract = resolve_reward_contract(answer_type="number", annotation_type="bbox").to_dict()
    gt = {"type": "number", "value": 19.5}
    compiled = compile_instance({"answer_gt": gt, "annotation_gt": BOX, "reward_contract": contract})
    for predicted, relaxed in [(19.49, 1.0), (19.5, 1.0), ("19.49 or 20", 0.0), (25, 0.0)]:
        result, trail = compiled.explain(json.dumps({"answer": predicted, "annotation": [0, 0, 10, 10]}), options_from({}))
        metrics = row_metrics(trail, result, "scalar", answer_gt=gt)
        assert metrics[RELAXED_ACCURACY] == relaxed
        assert metrics[ANSWER_ACCURACY] == (1.0 if predicted == 19.5 else 0.0)  # the reward stays exact
    result, trail = compiled.explain(json.dumps({"answer": 19.49, "annotation": [0, 0, 10, 10]}), options_from({}))
    assert RELAXED_ACCURACY not in row_metrics(trail, result, "scalar")  # without answer_gt: not computed
    assert RELAXED_ACCURACY not in row_metrics(trail, result, "scalar", answer_gt={"type": "integer", "value": 19})
