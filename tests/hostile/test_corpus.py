"""A corpus of hostile responses: none raises, all values are sane, flags are as stated.

Each case names the response, the instance it is scored against (defaults in
``helpers.score``: integer answer 7, a ``bbox`` target [0, 0, 10, 10],
answer-and-annotation mode) and the diagnostic flags it must produce, plus the
answer reward where the case is about the answer.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from .helpers import BAD_ANNOTATION, NOTHING, UNPARSED_BLOCK, WELL_FORMED, expect, flags, score

DEEP = 100_000
BIG = "1" + "0" * 5000  # more digits than Python converts (4300): JSON and literal both refuse
BIG_OK = "1" + "0" * 4000  # within the limit: an exact integer


@attrs.frozen
class Case:
    name: str
    response: str
    expected: dict[str, float]
    answer_reward: float | None = None
    annotation_reward: float | None = None
    instance: dict[str, Any] = attrs.field(factory=dict)


CASES = [
    # Deep nesting: recursion in the JSON decoder, refusal in the literal reader.
    Case("deep_brackets_unclosed", "[" * DEEP, NOTHING, 0.0),
    Case("deep_objects_unclosed", '{"a":' * DEEP, NOTHING, 0.0),
    Case("deep_objects_closed", '{"a":' * DEEP + "1" + "}" * DEEP, UNPARSED_BLOCK, 0.0),
    Case("deep_answer_value", '{"answer": ' + "[" * DEEP + "]" * DEEP + "}", UNPARSED_BLOCK, 0.0),
    Case("deep_literal_answer", "{'answer': " + "[" * DEEP + "]" * DEEP + "}", UNPARSED_BLOCK, 0.0),
    Case(
        "deep_answer_within_json_but_past_answer_depth",
        '{"answer": ' + "[" * 600 + "7" + "]" * 600 + ', "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        1.0,
    ),
    Case("deep_annotation", '{"answer": 7, "annotation": ' + "[" * 900 + "]" * 900 + "}", BAD_ANNOTATION, 1.0, 0.0),
    # Numbers with thousands of digits.
    Case("huge_integer_answer", '{"answer": ' + BIG + ', "annotation": [0, 0, 10, 10]}', UNPARSED_BLOCK, 0.0),
    Case("huge_literal_integer_answer", "{'answer': " + BIG + ", 'annotation': [0, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case(
        "long_integer_answer_matches",
        '{"answer": ' + BIG_OK + ', "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        1.0,
        1.0,
        {"answer": int(BIG_OK)},
    ),
    Case("huge_integer_coordinate", '{"answer": 7, "annotation": [0, 0, 1' + "0" * 400 + ", 10]}", BAD_ANNOTATION, 1.0, 0.0),
    Case("huge_fraction_coordinate", '{"answer": 7, "annotation": [0, 0, 10.' + "0" * 5000 + ", 10]}", WELL_FORMED, 1.0, 1.0),
    Case("overflowing_float_coordinate", '{"answer": 7, "annotation": [0, 0, 1e400, 10]}', BAD_ANNOTATION, 1.0, 0.0),
    Case("overflowing_float_answer", '{"answer": 1e400, "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0),
    Case(
        "overflowing_float_answer_vs_infinite_target",
        '{"answer": 1e400, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        instance={"answer": float("inf"), "answer_type": "number"},
    ),
    # NaN / Infinity tokens (json accepts them): never a match, never a coordinate.
    Case(
        "nan_answer_vs_nan",
        '{"answer": NaN, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        instance={"answer": float("nan"), "answer_type": "number"},
    ),
    Case(
        "infinity_answer",
        '{"answer": Infinity, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        instance={"answer": float("inf"), "answer_type": "number"},
    ),
    Case(
        "minus_infinity_answer",
        '{"answer": -Infinity, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        instance={"answer": float("-inf"), "answer_type": "number"},
    ),
    Case(
        "nan_string_answer",
        '{"answer": "NaN", "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        instance={"answer": float("nan"), "answer_type": "number"},
    ),
    Case("nan_coordinate", '{"answer": 7, "annotation": [NaN, 0, 10, 10]}', BAD_ANNOTATION, 1.0, 0.0),
    Case("infinity_coordinate", '{"answer": 7, "annotation": [0, 0, Infinity, 10]}', BAD_ANNOTATION, 1.0, 0.0),
    Case("minus_infinity_coordinate", '{"answer": 7, "annotation": [-Infinity, 0, 10, 10]}', BAD_ANNOTATION, 1.0, 0.0),
    # Booleans are not numbers.
    Case("boolean_coordinates", '{"answer": 7, "annotation": [true, false, 10, 10]}', BAD_ANNOTATION, 1.0, 0.0),
    Case(
        "boolean_point",
        '{"answer": 7, "annotation": [true, true]}',
        BAD_ANNOTATION,
        1.0,
        0.0,
        {"annotation_type": "point", "annotation": [1, 1]},
    ),
    Case(
        "boolean_answer_for_integer_one",
        '{"answer": true, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        0.0,
        instance={"answer": 1},
    ),
    # Lone surrogates: as a JSON escape and as a raw character of the str.
    Case("surrogate_escape_answer", '{"answer": "\\ud800", "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0),
    Case(
        "surrogate_escape_matches_itself",
        '{"answer": "\\ud800", "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        1.0,
        instance={"answer": "\ud800", "answer_type": "string"},
    ),
    Case("surrogate_raw_answer", '{"answer": "\ud800", "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0),
    Case("surrogate_raw_in_literal", "{'answer': '\ud800', 'annotation': [0, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case(
        "surrogate_raw_in_prose",
        "\udfff reasoning \ud800\n" + '{"answer": 7, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        1.0,
        1.0,
    ),
    Case("surrogate_raw_atomic", "\ud800", NOTHING, 0.0),
    # NUL and control characters.
    Case("nul_inside_string", '{"answer": "7\x00", "annotation": [0, 0, 10, 10]}', UNPARSED_BLOCK, 0.0),
    Case(
        "nul_inside_literal",
        "{'answer': 7, 'annotation': [0, 0, 10, 10]}\x00",
        expect(found=1.0, structure=0.0, json_ok=0.0, schema=0.0, annotation_ok=1.0),
        1.0,
        1.0,
    ),
    Case("escaped_nul_answer", '{"answer": "\\u0000", "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0),
    Case(
        "control_characters_in_prose",
        "".join(map(chr, range(32))) + '{"answer": 7, "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        1.0,
        1.0,
    ),
    Case(
        "control_characters_after_object",
        '{"answer": 7, "annotation": [0, 0, 10, 10]}\x01\x02',
        expect(found=1.0, structure=0.0, json_ok=0.0, schema=0.0, annotation_ok=1.0),
        1.0,
        1.0,
    ),
    # Python-literal payloads with odd types.
    # Values JSON cannot hold (complex numbers, bytes, Ellipsis) make the literal "not parsed" (issue 17 item 8).
    Case("literal_set_of_complex", "{'answer': {1j}, 'annotation': [0, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case("literal_set_of_bytes", "{'answer': {b'7'}, 'annotation': [0, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case(
        "literal_mixed_set",
        "{'answer': {1j, b'x', 7, 'a', (1, 2), ..., None}, 'annotation': (0, 0, 10, 10)}",
        UNPARSED_BLOCK,
        0.0,
    ),
    Case("literal_complex_answer", "{'answer': 7+0j, 'annotation': [0, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case("literal_bytes_answer", "{'answer': b'7', 'annotation': [0, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case("literal_complex_coordinates", "{'answer': 7, 'annotation': [1j, 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case("literal_bytes_coordinates", "{'answer': 7, 'annotation': [b'0', 0, 10, 10]}", UNPARSED_BLOCK, 0.0),
    Case("literal_plain_set_answer", "{'answer': {7, 'a', (1, 2), None}, 'annotation': (0, 0, 10, 10)}", WELL_FORMED, 0.0),
    Case("literal_set_annotation", "{'answer': 7, 'annotation': {0, 10}}", BAD_ANNOTATION, 1.0, 0.0),
    # A complex map key: not a literal at all.
    Case(
        "literal_complex_map_key",
        "{'answer': 7, 'annotation': {1j: [0, 0, 10, 10]}}",
        UNPARSED_BLOCK,
        0.0,
        0.0,
        {"annotation_type": "bbox_map", "annotation": {"a": [0, 0, 10, 10]}},
    ),
    Case(
        "literal_call_is_not_evaluated",
        "{'answer': __import__('os').getpid(), 'annotation': [0, 0, 10, 10]}",
        UNPARSED_BLOCK,
        0.0,
    ),
    # Duplicate keys: JSON's last value wins; map keys equal after stripping fail.
    Case("duplicate_answer_last_wins", '{"answer": 7, "answer": 8, "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0),
    Case("duplicate_answer_last_wins_right", '{"answer": 8, "answer": 7, "annotation": [0, 0, 10, 10]}', WELL_FORMED, 1.0),
    Case(
        "duplicate_map_keys_after_strip",
        '{"answer": 7, "annotation": {"a": [0, 0, 10, 10], " a": [0, 0, 10, 10]}}',
        BAD_ANNOTATION,
        1.0,
        0.0,
        {"annotation_type": "bbox_map", "annotation": {"a": [0, 0, 10, 10]}},
    ),
    Case(
        "empty_map_key",
        '{"answer": 7, "annotation": {" ": [0, 0, 10, 10]}}',
        BAD_ANNOTATION,
        1.0,
        0.0,
        {"annotation_type": "bbox_map", "annotation": {"a": [0, 0, 10, 10]}},
    ),
    # Huge strings as answers.
    Case("huge_string_answer", '{"answer": "' + "7" * 200_000 + '", "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0),
    Case(
        "huge_string_answer_matches",
        '{"answer": "' + "ab " * 100_000 + '", "annotation": [0, 0, 10, 10]}',
        WELL_FORMED,
        1.0,
        instance={"answer": "AB " * 100_000, "answer_type": "string"},
    ),
    Case(
        "huge_json_array_string_answer", '{"answer": "[' + "1," * 100_000 + '1]", "annotation": [0, 0, 10, 10]}', WELL_FORMED, 0.0
    ),
]


def _run(case: Case) -> dict[str, float]:
    instance = dict(case.instance)
    return score(case.response, **instance)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_case(case: Case) -> None:
    result = _run(case)
    assert flags(result) == case.expected
    if case.answer_reward is not None:
        assert result["answer_reward"] == case.answer_reward
    if case.annotation_reward is not None:
        assert result["annotation_reward"] == case.annotation_reward


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_case_in_answer_mode(case: Case) -> None:
    # The same response in answer mode: the answer side does not change, no crash.
    result = score(case.response, mode="answer", **case.instance)
    if case.answer_reward is not None:
        assert result["answer_reward"] == case.answer_reward
    assert result["overall"] == result["answer_reward"]
