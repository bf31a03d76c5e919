"""What a tag is under the opt-in response policies (issue 37, items 14-15; issue 35, item 4).

* ``outside_think``: ``<think>`` tags nest, and a ``</think>`` that closes no
  open ``<think>`` means everything before it was thinking, so a draft between
  a nested block's close and the outer close stays inside.
* Under every opt-in policy a tag written inside a string of a JSON object
  (``{"note": "</think>"}``) is text, not a tag.
* ``format_accept_answer_tag``: the final block is the content of the last
  ``<answer>`` pair, paired as recovery pairs tags (each open tag with the next
  close tag), so ``<answer>junk<answer>{...}</answer>`` holds text besides the
  object: format 0.
* ``final_only`` reads a final ``<answer>`` pair as the final block, with the
  tag option or without; without it the row earns no format, and the trail says
  so (``Extraction.final_tag``, source ``FINAL_ANSWER_TAG``).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from trace_tasks import score_trace_response
from trace_tasks.reading import (
    ANSWER_AND_ANNOTATION_KEYS,
    FINAL_ANSWER_TAG,
    FINAL_ONLY,
    LENIENT,
    OUTSIDE_THINK,
    answer_tags,
    extract,
    final_answer_tag,
    outside_think,
)

from .helpers import contract

INSTANCE: dict[str, Any] = {
    "answer_gt": {"type": "string", "value": "person"},
    "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
    "reward_contract": contract("string", "bbox"),
}
RIGHT = '{"answer": "person", "annotation": [0, 0, 10, 10]}'


def score(response: str, **options: Any) -> dict[str, float]:
    return score_trace_response(response=response, **INSTANCE, **options)


# --- nested <think> (37.14) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        f"<think>plan <think>inner</think> draft {RIGHT} </think>I cannot tell.",
        f"<think><think><think>a</think></think> draft {RIGHT}</think>I cannot tell.",
        # <think> in the prompt (chat template): a nested block closes, the draft follows, then the outer close.
        f"plan <think>inner</think> draft {RIGHT} </think>I cannot tell.",
        # A stray close after a balanced block: everything before it was thinking.
        f"<think>a</think> draft {RIGHT} </think>I cannot tell.",
    ],
)
def test_a_draft_inside_nested_thinking_earns_nothing(response: str) -> None:
    assert score(response)["answer_reward"] == 1.0  # lenient recovers it (the contract)
    result = score(response, trace_recovery="outside_think")
    assert result["answer_reward"] == 0.0 and result["json_found"] == 0.0


def test_text_outside_nested_thinking_is_still_read() -> None:
    response = f"<think>a <think>b</think> c</think>Final: {RIGHT} (sure)."
    assert score(response, trace_recovery="outside_think")["overall"] == 1.0
    assert outside_think("x<think>a<think>b</think>c</think>y<think>d</think>z") == "x\ny\nz"
    assert outside_think("a</think>b</think>c") == "c"
    assert outside_think("a<think>b") == "a"
    assert outside_think("no tags at all") == "no tags at all"


# --- tags inside JSON strings are text (37.14) ----------------------------------------------------------


def test_a_close_tag_inside_a_json_string_does_not_end_the_thinking() -> None:
    response = f'<think>{{"note": "</think>"}} draft {RIGHT} </think>I cannot tell.'
    result = score(response, trace_recovery="outside_think")
    assert result["answer_reward"] == 0.0 and result["json_found"] == 0.0


def test_an_open_tag_inside_a_json_string_does_not_hide_the_answer() -> None:
    honest = '<think>left</think>{"answer": "person", "annotation": [0, 0, 10, 10], "why": "a <think> tag"} (sure)'
    result = score(honest, trace_recovery="outside_think")
    assert result["answer_reward"] == 1.0 and result["json_found"] == 1.0
    assert outside_think('{"a": "<think>"} b') == '{"a": "<think>"} b'
    # Quotes in prose outside any object hide no tag.
    assert outside_think('He said "x</think> y') == " y"


def test_answer_tags_inside_json_strings_are_text_under_the_policies() -> None:
    text = '<answer>{"answer": "a </answer> b"}</answer>'
    assert answer_tags(text) == ['{"answer": "a ']  # the contract's §3.3 pairing, unchanged by default
    assert answer_tags(text, quoted_are_text=True) == ['{"answer": "a </answer> b"}']
    assert final_answer_tag(text) == '{"answer": "a </answer> b"}'
    result = score(text, trace_reward_mode="answer", format_accept_answer_tag=True)
    assert result["format"] == 1.0


# --- the answer-tag final block (37.15) --------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        f"<answer>junk<answer>{RIGHT}</answer>",
        f"<answer><answer>{RIGHT}</answer>",
        f"<think>x</think><answer>Sure! <answer>{RIGHT}</answer>",
    ],
)
def test_text_besides_the_object_inside_the_tag_gives_format_0(response: str) -> None:
    result = score(response, format_accept_answer_tag=True, format_weight=0.1)
    assert result["format"] == 0.0 and result["format_structure_ok"] == 1.0 and result["format_json_ok"] == 0.0


def test_the_last_pair_still_counts_when_earlier_pairs_are_closed() -> None:
    response = f"<answer>draft</answer> then <answer>{RIGHT}</answer>"
    assert score(response, format_accept_answer_tag=True)["format"] == 1.0
    assert final_answer_tag("x</answer>") is None  # a close tag closing no pair
    assert final_answer_tag("<answer>a</answer>b</answer>") is None


# --- final_only on the R1 template (35.4) ------------------------------------------------------------------


def test_final_only_reads_the_final_answer_pair_and_says_so() -> None:
    response = f"<think>the person is on the left</think><answer>{RIGHT}</answer>"
    plain = extract(response, ANSWER_AND_ANNOTATION_KEYS, FINAL_ONLY)
    assert plain.payload == {"answer": "person", "annotation": [0, 0, 10, 10]}
    assert plain.source == FINAL_ANSWER_TAG and plain.final_tag and plain.format.format == 0.0
    tagged = extract(response, ANSWER_AND_ANNOTATION_KEYS, FINAL_ONLY, answer_tag=True)
    assert tagged.source == "the final block" and not tagged.final_tag and tagged.format.format == 1.0
    for recovery in (LENIENT, OUTSIDE_THINK):  # the flag belongs to final_only
        assert not extract(response, ANSWER_AND_ANNOTATION_KEYS, recovery).final_tag
    # Only a final pair: text after it, or a draft pair earlier, is not the final block.
    assert extract(f"{response} Done.", ANSWER_AND_ANNOTATION_KEYS, FINAL_ONLY).payload is None
    draft = f"<answer>{RIGHT}</answer> but I cannot tell."
    assert score(draft, trace_recovery="final_only")["overall"] == 0.0


# --- hostile tag shapes stay linear and never raise ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "response",
    [
        "<think>" * 150_000,
        "</think>" * 130_000,
        "<think></think>" * 70_000 + RIGHT,
        '{"a": "' + "</think><think>" * 70_000 + '"}',
        '{"a": "</think>' + '"' * 500_000,
        "<answer>" * 130_000 + RIGHT + "</answer>",
        '<answer>{"a": "' + "</answer>" * 110_000 + '"}</answer>',
        ('{"x": "<think>"} ' * 60_000) + "</think>" + RIGHT,
    ],
    ids=[
        "opens",
        "closes",
        "pairs_then_object",
        "tags_in_a_string",
        "quote_flood",
        "open_answers",
        "answer_close_flood",
        "quoted_opens",
    ],
)
def test_megabyte_tag_floods_under_every_policy(response: str) -> None:
    for policy in ({"trace_recovery": "outside_think"}, {"trace_recovery": "final_only"}, {"format_accept_answer_tag": True}):
        result = score(response, **policy)
        assert 0.0 <= result["overall"] <= 1.0


@pytest.mark.slow
def test_the_numpy_tag_scans_agree_with_the_python_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tag floods switch to whole-array passes; on every short text of this alphabet both give the same answer.
    from trace_tasks.reading import _extraction

    alphabet = ("<think>", "</think>", "<answer>", "</answer>", "a", '"', "{", "}")

    def scans(steps: int, text: str) -> tuple[Any, ...]:
        monkeypatch.setattr(_extraction, "_PYTHON_STEPS", steps)
        return (
            _extraction.outside_think(text),
            _extraction._answer_pairs(text, False),
            _extraction._answer_pairs(text, True),
            _extraction._positions(text, "</think>"),
        )

    texts = ["".join(parts) for length in range(5) for parts in itertools.product(alphabet, repeat=length)]
    rng = random.Random(35)
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(5, 40))) for _ in range(2000)]
    for text in texts:
        assert scans(10**9, text) == scans(-1, text), text
