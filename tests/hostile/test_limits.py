"""Each bound in ``trace_tasks.limits`` holds where it should: just inside works, just past fails quietly."""

from __future__ import annotations

import json

import pytest

from trace_tasks.limits import (
    MAX_ANSWER_DEPTH,
    MAX_LITERAL_BUDGET,
    MAX_LITERAL_CHARS,
    MAX_LITERAL_DEPTH,
    MAX_RECOVERY_CANDIDATES,
    MAX_RESPONSE_CHARS,
    MAX_TARGET_LITERAL_BUDGET,
)
from trace_tasks.reading import _literals as literals

from .helpers import UNPARSED_BLOCK, WELL_FORMED, expect, flags, score

FINAL = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
LITERAL_FINAL = "{'answer': 7, 'annotation': [0, 0, 10, 10]}"
RECOVERED = expect(found=1.0, structure=0.0, json_ok=0.0, schema=0.0, annotation_ok=1.0)
NOT_RECOVERED = expect(found=0.0, structure=0.0, json_ok=0.0, schema=0.0, annotation_ok=0.0)


def _padded_literal(size: int) -> str:
    """A valid Python-literal (not JSON) final object of exactly ``size`` characters."""
    head = "{'answer': 7, 'annotation': [0, 0, 10, 10], 'pad': '"
    return head + "x" * (size - len(head) - 2) + "'}"


@pytest.mark.megabyte
@pytest.mark.slow
def test_only_the_last_response_chars_are_scanned() -> None:
    filler = " " * MAX_RESPONSE_CHARS
    inside = score(FINAL + " trailing words" + filler[: -len(FINAL) - 64])
    assert flags(inside) == RECOVERED
    outside = score(FINAL + " trailing words" + filler)
    assert flags(outside) == NOT_RECOVERED
    at_end = score(filler + filler + FINAL)
    assert flags(at_end) == WELL_FORMED


def test_literal_reader_size_limit() -> None:
    # The 'pad' key makes the schema wrong; what matters is that the block parses.
    inside = score(_padded_literal(MAX_LITERAL_CHARS))
    assert flags(inside) == expect(found=1.0, structure=1.0, json_ok=1.0, schema=0.0, annotation_ok=1.0)
    past = score(_padded_literal(MAX_LITERAL_CHARS + 1))
    assert flags(past) == UNPARSED_BLOCK


def test_literal_reader_depth_limit() -> None:
    # The outer mapping is one level; lists fill the rest.
    inside = "{'answer': " + "[" * (MAX_LITERAL_DEPTH - 1) + "]" * (MAX_LITERAL_DEPTH - 1) + "}"
    assert score(inside, mode="answer")["format_json_ok"] == 1.0
    past = "{'answer': " + "[" * MAX_LITERAL_DEPTH + "]" * MAX_LITERAL_DEPTH + "}"
    assert score(past, mode="answer")["format_json_ok"] == 0.0


def test_literal_budget_is_shared_by_the_reads_of_one_call() -> None:
    text = "(" + "1, " * 30 + ")"
    with literals.literal_budget([2 * len(text)]):
        assert literals.load_literal(text)[1]
        assert literals.load_literal(text)[1]
        assert literals.load_literal(text) == (None, False)
    assert literals.load_literal(text)[1]  # outside the block: no budget


def test_each_literal_read_costs_at_least_the_minimum_charge() -> None:
    budget = [literals.MIN_LITERAL_CHARGE * 3]
    with literals.literal_budget(budget):
        assert [literals.load_literal("1")[1] for _ in range(4)] == [True, True, True, False]


def _broken_literal_object(size: int, tag: int) -> str:
    # Holds 'answer', is neither JSON nor a literal, and fails only at its end.
    # ``tag`` makes each one different (a repeated text is parsed once, then remembered).
    head = "{'answer': %d, 'pad': '" % tag
    return head + "x" * (size - len(head) - 3) + "' x}"


def test_recovery_stops_when_the_literal_budget_is_spent() -> None:
    # Recovery tries top-level objects from last to first: the broken ones spend the budget first.
    size = min(MAX_LITERAL_CHARS, MAX_LITERAL_BUDGET // 2) - 8
    spend = (MAX_LITERAL_BUDGET - literals.MIN_LITERAL_CHARGE) // size + 1
    broken = " ".join(_broken_literal_object(size, tag) for tag in range(spend))
    assert flags(score(LITERAL_FINAL + " " + _broken_literal_object(size, 0) + " x")) == RECOVERED
    assert flags(score(LITERAL_FINAL + " " + broken + " x")) == NOT_RECOVERED


def test_annotation_strings_share_the_literal_budget() -> None:
    value = "(" + "(0, 0, 10, 10), " * (MAX_LITERAL_BUDGET // 64) + ")"  # a quarter of the budget, a literal, not JSON
    per_call = MAX_LITERAL_BUDGET // len(value)
    fits = {f"k{i}": value for i in range(per_call)}
    spent = {f"k{i}": value for i in range(per_call + 1)}
    target = {"k0": [[0, 0, 10, 10]]}
    ok = score(json.dumps({"answer": 7, "annotation": fits}), annotation_type="bbox_set_map", annotation=target)
    assert flags(ok) == WELL_FORMED
    past = score(json.dumps({"answer": 7, "annotation": spent}), annotation_type="bbox_set_map", annotation=target)
    assert past["annotation_parse_ok"] == 0.0


def test_the_target_is_not_charged_to_the_response_budget() -> None:
    # The target spends most of its own budget (MAX_TARGET_LITERAL_BUDGET); the prediction's
    # literal strings then need nearly all of the response's, which they still get.
    target = {f"k{i}": "(0, 0, 10, 10)" for i in range(MAX_TARGET_LITERAL_BUDGET // literals.MIN_LITERAL_CHARGE - 8)}
    big = "(" + "(0, 0, 10, 10), " * (MAX_LITERAL_BUDGET // 2 // 16 - 1) + ")"
    assert len(big) <= MAX_LITERAL_CHARS and 2 * len(big) <= MAX_LITERAL_BUDGET
    prediction = {"k0": big, "k1": big}
    result = score(json.dumps({"answer": 7, "annotation": prediction}), annotation_type="bbox_set_map", annotation=target)
    assert result["annotation_parse_ok"] == 1.0


def test_target_literal_budget() -> None:
    # Issue 17 item 5: the lenient scorer reads at most MAX_TARGET_LITERAL_BUDGET characters
    # of literal strings from the target per call; past it the target is not usable.
    value = "(" + "(0, 0, 10, 10), " * 500 + ")"
    fits = MAX_TARGET_LITERAL_BUDGET // len(value)
    response = json.dumps({"answer": 7, "annotation": {"k0": [[0, 0, 10, 10]]}})
    inside = score(response, annotation_type="bbox_set_map", annotation={f"k{i}": value for i in range(fits)})
    assert inside["annotation_parse_ok"] == 1.0
    past = score(response, annotation_type="bbox_set_map", annotation={f"k{i}": value for i in range(fits + 1)})
    assert past["annotation_parse_ok"] == 0.0


def test_recovery_candidate_limit() -> None:
    # Candidates tried, last first: `extra` broken objects, then the good one (the whole
    # response is no candidate: it does not end with a brace).
    def response(extra: int) -> str:
        return FINAL + " " + "{answer} " * extra + "x"

    inside = MAX_RECOVERY_CANDIDATES - 1
    assert flags(score(response(inside))) == RECOVERED
    assert flags(score(response(inside + 1))) == NOT_RECOVERED


def _nested(depth: int) -> object:
    value: object = 7
    for _ in range(depth):
        value = [value]
    return value


def test_answer_depth_limit() -> None:
    inside = _nested(MAX_ANSWER_DEPTH)
    result = score(json.dumps({"answer": inside}), answer=inside, answer_type="matrix", mode="answer")
    assert result["answer_reward"] == 1.0
    past = _nested(MAX_ANSWER_DEPTH + 1)
    result = score(json.dumps({"answer": past}), answer=past, answer_type="matrix", mode="answer")
    assert result["answer_reward"] == 0.0
    assert result["format"] == 1.0
