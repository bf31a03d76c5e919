"""Megabyte-sized hostile responses (marked ``megabyte`` and ``slow``; they run in CI and in plain ``pytest``).

Each response is about 1 MiB of one shape that once made extraction slow
(a parser tried at every brace, a backtracking fence regex, unclosed tags).
Here only correctness is asserted; ``benchmarks/hostile_scaling.py`` measures
that each costs well under a second.
"""

from __future__ import annotations

import json

import pytest

from trace_tasks.limits import MAX_RESPONSE_CHARS

from .helpers import NOTHING, UNPARSED_BLOCK, WELL_FORMED, expect, flags, score

pytestmark = pytest.mark.slow  # each test is also marked megabyte

MIB = 1 << 20
FINAL = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
#: Recovered but not well formed (the final block is missing or is not the object).
RECOVERED = expect(found=1.0, structure=0.0, json_ok=0.0, schema=0.0, annotation_ok=1.0)


def _fill(unit: str) -> str:
    return unit * (MIB // len(unit))


def _fill_beside(unit: str, kept: str) -> str:
    """Nearly a megabyte of ``unit`` that still leaves ``kept`` inside the scanned window."""
    return unit * ((MAX_RESPONSE_CHARS - len(kept) - 1024) // len(unit))


MEGABYTE_CASES = [
    ("open_braces", _fill("{"), NOTHING, 0.0),
    ("close_braces", _fill("}"), NOTHING, 0.0),
    ("quotes", _fill('"'), NOTHING, 0.0),
    ("backticks", _fill("`"), NOTHING, 0.0),
    ("open_answer_tags", _fill("<answer>"), NOTHING, 0.0),
    ("answer_tag_pairs", _fill("<answer></answer>"), NOTHING, 0.0),
    # The final block "{}" parses to an empty mapping: json ok, schema not, nothing recovered.
    ("brace_pairs", _fill("{}"), expect(found=0.0, structure=1.0, json_ok=1.0, schema=0.0, annotation_ok=0.0), 0.0),
    ("open_then_close_braces", "{" * (MIB // 2) + "}" * (MIB // 2), UNPARSED_BLOCK, 0.0),
    ("quote_brace", _fill('"{'), NOTHING, 0.0),
    ("escaped_quotes", _fill('\\"'), NOTHING, 0.0),
    ("open_brackets", _fill("["), NOTHING, 0.0),
    ("literal_openers", _fill("{'a': ("), NOTHING, 0.0),
    ("think_tags", _fill("<think>"), NOTHING, 0.0),
    ("open_json_fence", "```json\n" + _fill("{"), NOTHING, 0.0),
    # The final object survives any amount of junk before it.
    ("open_braces_then_final", _fill("{") + FINAL, WELL_FORMED, 1.0),
    ("close_braces_then_final", _fill("}") + FINAL, WELL_FORMED, 1.0),
    ("quotes_then_final", _fill('"') + "\n" + FINAL, WELL_FORMED, 1.0),
    ("odd_quote_then_final", '"' + _fill("x") + FINAL, WELL_FORMED, 1.0),
    ("backticks_then_final", _fill("`") + "\n" + FINAL, WELL_FORMED, 1.0),
    ("unclosed_tags_then_final", _fill("<answer>") + FINAL, WELL_FORMED, 1.0),
    ("prose_then_final", _fill("Let me think about the boxes. ") + FINAL, WELL_FORMED, 1.0),
    ("prose_then_fenced_final", _fill("reasoning ") + "\n```json\n" + FINAL + "\n```", WELL_FORMED, 1.0),
    ("many_small_objects", _fill('{"answer": 1} ') + FINAL, WELL_FORMED, 1.0),
    (
        "alternating_answer_objects",
        _fill('{"answer": 1}'),
        expect(found=1.0, structure=1.0, json_ok=1.0, schema=0.0, annotation_ok=0.0),
        0.0,
    ),
    ("many_fenced_blocks", _fill('```\n{"answer": 1}\n```\n') + FINAL, WELL_FORMED, 1.0),
    # Recovery (not format) when the final block is broken.
    ("final_then_open_braces", FINAL + _fill_beside("{", FINAL), RECOVERED, 1.0),
    ("tagged_answer_then_junk", "<answer>" + FINAL + "</answer>" + _fill_beside("}", FINAL), RECOVERED, 1.0),
    # Past the window (MAX_RESPONSE_CHARS from the end) an object is not seen: docs/limits.md.
    ("final_before_the_window", FINAL + "{" * MAX_RESPONSE_CHARS, NOTHING, 0.0),
    ("final_in_tag_after_unclosed_tags", _fill("<answer>") + "<answer>" + FINAL + "</answer>", RECOVERED, 1.0),
    # Issue 17 item 4: floods that cost a Python step per token (now numpy passes).
    ("brace_pairs_then_quoted_answer_brace", _fill("{}") + '"answer"}', NOTHING, 0.0),
    ("brace_x_bracket_then_quoted_answer_brace", _fill("{x[}") + '"answer"}', NOTHING, 0.0),
    # The final block "{}" parses to an empty mapping, as for plain brace pairs.
    ("backslash_brace_pairs", _fill("\\{}"), expect(found=0.0, structure=1.0, json_ok=1.0, schema=0.0, annotation_ok=0.0), 0.0),
    ("brace_pairs_then_answer", _fill("{}") + " answer", NOTHING, 0.0),
    ("quotes_then_answer", _fill('"') + " answer", NOTHING, 0.0),
    ("quote_brace_then_answer", _fill('"{') + " answer", NOTHING, 0.0),
    ("escaped_quote_objects_then_final", _fill('{"\\"": 1}') + FINAL, WELL_FORMED, 1.0),
    ("answer_objects_in_brace_pairs_then_final", _fill('{}{"answer": 1}{}') + FINAL, WELL_FORMED, 1.0),
    # Past MAX_RECOVERY_CANDIDATES broken candidates, an early good object is not reached.
    ("broken_answer_objects_exhaust_the_candidates", FINAL + " " + _fill_beside("{answer}", FINAL), UNPARSED_BLOCK, 0.0),
]


@pytest.mark.megabyte
@pytest.mark.parametrize(
    ("response", "expected", "answer_reward"), [c[1:] for c in MEGABYTE_CASES], ids=[c[0] for c in MEGABYTE_CASES]
)
def test_megabyte_response(response: str, expected: dict[str, float], answer_reward: float) -> None:
    result = score(response)
    assert flags(result) == expected
    assert result["answer_reward"] == answer_reward
    if expected["annotation_parse_ok"]:
        assert result["annotation_reward"] == 1.0


@pytest.mark.megabyte
def test_megabyte_tag_answer_is_atomic() -> None:
    # A closed tag, then a megabyte of unclosed ones and no mapping: the closed tag's content answers.
    result = score("<answer> 7 </answer>" + _fill_beside("<answer>", "<answer> 7 </answer>"), mode="answer")
    assert result["answer_reward"] == 1.0
    assert result["json_found"] == 0.0


@pytest.mark.megabyte
def test_megabyte_string_answer() -> None:
    value = "x" * (MAX_RESPONSE_CHARS - 64)  # the whole object inside the scanned window
    result = score('{"answer": "' + value + '"}', answer=value.upper(), answer_type="string", mode="answer")
    assert result["answer_reward"] == 1.0
    assert result["format"] == 1.0


@pytest.mark.megabyte
def test_megabyte_of_answer_tag_pairs_with_content() -> None:
    # Every tag holds a JSON-looking candidate: only MAX_RECOVERY_CANDIDATES are tried, no crash.
    result = score(_fill('<answer>{"answer": x}</answer>'))
    assert flags(result) == NOTHING


@pytest.mark.megabyte
def test_atomic_answer_is_read_from_the_window() -> None:
    # Issue 17 item 3: the atomic answer used to be the whole response at any length
    # (16 MiB: 16 s, 1.1 GB). It is read from the last MAX_RESPONSE_CHARS characters.
    inside = "a" * (MAX_RESPONSE_CHARS - 8)
    assert score("  " + inside + "  ", answer=inside, answer_type="string", mode="answer")["answer_reward"] == 1.0
    past = "a" * (MAX_RESPONSE_CHARS + 8)
    assert score(past, answer=past, answer_type="string", mode="answer")["answer_reward"] == 0.0
    assert score(past, answer=past[8:], answer_type="string", mode="answer")["answer_reward"] == 1.0
    # A JSON list longer than the window is not decoded whole: its tail is not JSON.
    items = [1] * (MAX_RESPONSE_CHARS // 2)
    assert score(json.dumps(items), answer=items, answer_type="index_list", mode="answer")["answer_reward"] == 0.0


@pytest.mark.megabyte
def test_megabyte_atomic_json_compares_exactly() -> None:
    # A megabyte list inside the window: compared item by item when the lengths agree.
    items = list(range(100_000))
    text = json.dumps(items)
    assert len(text) < MAX_RESPONSE_CHARS
    assert score(text, answer=items, answer_type="index_list", mode="answer")["answer_reward"] == 1.0
    assert score(text, answer=items[:-1], answer_type="index_list", mode="answer")["answer_reward"] == 0.0
    assert score(text, answer=[*items[:-1], -1], answer_type="index_list", mode="answer")["answer_reward"] == 0.0
