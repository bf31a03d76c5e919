"""The opt-in response policies of docs/contracts.md §3.7: ``trace_recovery`` and ``format_accept_answer_tag``.

The defaults are the contract (``lenient``, no answer tag): the conformance
replay pins that; here, each departure, its interaction with the other and
with the output modes, its indicators in the result, and that every way of
scoring (compiled instances, groups, ``score_instance``, batches) gives the
same dict as ``score_trace_response``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from trace_tasks import (
    OptionError,
    compile_instance,
    evaluate_trace_response_format,
    extract_trace_prediction,
    get_registry,
    result_keys,
    score_instance,
    score_trace_batch,
    score_trace_response,
)
from trace_tasks.scoring import OPT_IN_KEYS, RECOVERY_MODES, options_from

from .helpers import LEADING_KEYS, contract

CONTRACT = contract("string", "bbox")
INSTANCE: dict[str, Any] = {
    "answer_gt": {"type": "string", "value": "person"},
    "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
    "reward_contract": CONTRACT,
}
INT_INSTANCE: dict[str, Any] = {
    "answer_gt": {"type": "integer", "value": 7},
    "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
    "reward_contract": contract("integer", "bbox"),
}
RIGHT = '{"answer": "person", "annotation": [0, 0, 10, 10]}'
DRAFT_IN_THINK = f"<think>Candidate: {RIGHT}. Hmm, that may be wrong.</think>I cannot tell which object is meant."
TRUNCATED_AFTER_DRAFT = f'<think>Candidate: {RIGHT}</think>{{"answer": "person", "annotation": [0, 0, 1'
R1_TEMPLATE = f"<think>the person is on the left</think><answer>{RIGHT}</answer>"


def score(response: str, instance: dict[str, Any] = INSTANCE, **options: Any) -> dict[str, float]:
    return score_trace_response(response=response, **instance, **options)


# --- the defaults are the contract --------------------------------------------------------------


@pytest.mark.parametrize("response", [RIGHT, DRAFT_IN_THINK, TRUNCATED_AFTER_DRAFT, R1_TEMPLATE, "person", ""])
def test_the_defaults_spelled_out_give_the_same_dict_with_no_new_key(response: str) -> None:
    plain = score(response)
    spelled = score(response, trace_recovery="lenient", format_accept_answer_tag=False)
    assert spelled == plain and list(spelled) == list(plain)
    assert not set(OPT_IN_KEYS) & set(plain)
    assert tuple(plain)[: len(LEADING_KEYS)] == LEADING_KEYS


def test_the_issue_cases_under_the_contract() -> None:
    # Recovery finds the draft inside <think> (docs/contracts.md §3.3): the default, kept.
    assert score(DRAFT_IN_THINK)["overall"] == 1.0
    assert score(TRUNCATED_AFTER_DRAFT)["overall"] == 1.0
    # The R1 template is no final object (§3.1): format 0.
    assert score(R1_TEMPLATE, format_weight=0.1)["format"] == 0.0


# --- option values ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["strict", "", 1, True, ["lenient"], "final-only"])
def test_an_unknown_recovery_is_an_option_error_naming_the_allowed_values(value: Any) -> None:
    with pytest.raises(OptionError, match="trace_recovery must be one of \\['lenient', 'outside_think', 'final_only'\\]"):
        score(RIGHT, trace_recovery=value)
    with pytest.raises(ValueError):  # OptionError is a ValueError
        compile_instance(INSTANCE).score(RIGHT, trace_recovery=value)


def test_recovery_names_are_stripped_and_case_folded_and_none_is_lenient() -> None:
    assert score(DRAFT_IN_THINK, trace_recovery=" Outside_Think ") == score(DRAFT_IN_THINK, trace_recovery="outside_think")
    assert score(DRAFT_IN_THINK, trace_recovery=None) == score(DRAFT_IN_THINK)


@pytest.mark.parametrize("value", [1, 0, "true", None, "yes"])
def test_the_answer_tag_option_is_a_boolean(value: Any) -> None:
    with pytest.raises(OptionError, match="format_accept_answer_tag must be True or False"):
        score(RIGHT, format_accept_answer_tag=value)


def test_options_are_checked_before_the_response() -> None:
    with pytest.raises(OptionError):
        score_trace_response(response=7, trace_recovery="nope", **INSTANCE)  # type: ignore[arg-type]


# --- outside_think --------------------------------------------------------------------------------


def test_outside_think_ignores_a_draft_inside_think() -> None:
    assert score(DRAFT_IN_THINK, trace_recovery="outside_think")["overall"] == 0.0
    assert score(DRAFT_IN_THINK, trace_recovery="outside_think")["json_found"] == 0.0
    assert score(TRUNCATED_AFTER_DRAFT, trace_recovery="outside_think")["overall"] == 0.0


def test_outside_think_reads_the_final_block_as_before() -> None:
    response = f"<think>{RIGHT.replace('person', 'dog')}</think>So: {RIGHT}"
    for recovery in RECOVERY_MODES:
        result = score(response, trace_recovery=recovery)
        assert result["overall"] == 1.0 and result["format"] == 1.0


def test_outside_think_still_recovers_what_lies_outside() -> None:
    response = f'<think>{{"answer": "dog"}}</think>Final: {RIGHT} (I am fairly sure).'
    assert score(response)["answer_reward"] == 1.0  # lenient: the last top-level object
    result = score(response, trace_recovery="outside_think")
    assert result["overall"] == 1.0 and result["format"] == 0.0  # recovered, not a final object


def test_outside_think_atomic_answers_skip_the_thinking() -> None:
    # The whole response is the atomic answer: without the <think> block it is exactly "7".
    response = "<think>maybe 8, maybe 7</think>7"
    assert score(response, INT_INSTANCE, trace_reward_mode="answer")["answer_reward"] == 0.0
    assert score(response, INT_INSTANCE, trace_reward_mode="answer", trace_recovery="outside_think")["answer_reward"] == 1.0
    # An <answer> tag inside <think> is no atomic answer any more.
    tagged = "<think><answer>7</answer> is my guess</think>I do not know."
    assert score(tagged, INT_INSTANCE, trace_reward_mode="answer")["answer_reward"] == 1.0
    assert score(tagged, INT_INSTANCE, trace_reward_mode="answer", trace_recovery="outside_think")["answer_reward"] == 0.0


def test_outside_think_with_a_null_answer_in_the_common_ending() -> None:
    # {"answer": null, ...} is read on the fast path; the atomic answer is then the text outside <think>.
    response = '<think>7</think>{"answer": null}'
    lenient = score(response, INT_INSTANCE, trace_reward_mode="answer")
    outside = score(response, INT_INSTANCE, trace_reward_mode="answer", trace_recovery="outside_think")
    assert lenient["answer_reward"] == outside["answer_reward"] == 0.0


@pytest.mark.parametrize(
    ("response", "found"),
    [
        (f"reasoning with a draft {RIGHT}</think>I cannot tell.", False),  # <think> opened by the chat template
        (f"<think>still thinking {RIGHT} and then", False),  # cut short while thinking
        (f"<think>still thinking {RIGHT}", True),  # ... but ending with the object: the final block, read as before
        (f"<think>a</think>{RIGHT} trailing words", True),
        (f"<think>a</think><think>{RIGHT}</think>nothing", False),
        (f"{RIGHT} <think>second thoughts</think> trailing words", True),
    ],
)
def test_what_counts_as_inside_think(response: str, found: bool) -> None:
    assert score(response)["json_found"] == 1.0  # lenient recovers each
    assert score(response, trace_recovery="outside_think")["json_found"] == (1.0 if found else 0.0)


# --- final_only -------------------------------------------------------------------------------------


def test_final_only_takes_the_final_block_or_nothing() -> None:
    assert score(RIGHT, trace_recovery="final_only")["overall"] == 1.0
    assert score(f"```json\n{RIGHT}\n```", trace_recovery="final_only")["overall"] == 1.0
    trailing = f"{RIGHT} Hope this helps."
    assert score(trailing)["overall"] == 1.0
    result = score(trailing, trace_recovery="final_only")
    assert result["overall"] == 0.0 and result["json_found"] == 0.0
    assert score(DRAFT_IN_THINK, trace_recovery="final_only")["overall"] == 0.0
    # A final block holding the answer but a wrong key set is still the payload (format 0).
    extra = '{"answer": "person", "annotation": [0, 0, 10, 10], "why": "left"}'
    result = score(extra, trace_recovery="final_only")
    assert result["overall"] == 1.0 and result["format"] == 0.0


def test_final_only_atomic_answers_only_in_answer_mode() -> None:
    assert score("7", INT_INSTANCE, trace_reward_mode="answer", trace_recovery="final_only")["answer_reward"] == 1.0
    assert score("7", INT_INSTANCE)["overall"] == 0.5  # lenient, answer-and-annotation: the answer share
    assert score("7", INT_INSTANCE, trace_recovery="final_only")["overall"] == 0.0
    # The <answer> tag rule of §3.4 is recovery: final_only reads only a final <answer> pair (its final block).
    assert score("<answer>7</answer>", INT_INSTANCE, trace_reward_mode="answer")["answer_reward"] == 1.0
    assert (
        score("<answer>7</answer>", INT_INSTANCE, trace_reward_mode="answer", trace_recovery="final_only")["answer_reward"] == 1.0
    )
    assert (
        score("<answer>7</answer> Done.", INT_INSTANCE, trace_reward_mode="answer", trace_recovery="final_only")["answer_reward"]
        == 0.0
    )
    # A final block with a null answer has no atomic answer under final_only.
    assert (
        score('{"answer": null}', INT_INSTANCE, trace_reward_mode="answer", trace_recovery="final_only")["answer_reward"] == 0.0
    )


# --- format_accept_answer_tag ---------------------------------------------------------------------


def test_the_r1_template_gets_format_1_with_the_tag_option() -> None:
    plain = score(R1_TEMPLATE, format_weight=0.1)
    tagged = score(R1_TEMPLATE, format_weight=0.1, format_accept_answer_tag=True)
    assert plain["overall"] == pytest.approx(0.9) and plain["format"] == 0.0
    assert tagged["overall"] == 1.0 and tagged["format"] == tagged["format_structure_ok"] == tagged["format_json_ok"] == 1.0
    assert score(f"{R1_TEMPLATE}\n  \n", format_accept_answer_tag=True)["format"] == 1.0  # right-stripped


@pytest.mark.parametrize(
    ("response", "structure", "json_ok", "answer"),
    [
        (f"{R1_TEMPLATE} Done.", 0.0, 0.0, 1.0),  # text after the closing tag: no final block (recovered, format 0)
        ('<answer>{"answer": "person", "annotation": [0, 0, 10, 10], "k": 1}</answer>', 1.0, 1.0, 1.0),  # extra key
        ("<answer>person</answer>", 1.0, 0.0, 1.0),  # not an object: format 0 (the tag's text is still the atomic answer)
        (f"<answer>```json\n{RIGHT}\n```</answer>", 1.0, 0.0, 1.0),  # a fence is not exactly the object
        (f"<answer>{RIGHT} and more</answer>", 1.0, 0.0, 1.0),  # nor is an object followed by text
        ("<answer></answer>", 0.0, 0.0, 0.0),
        (f"{RIGHT}</answer>", 0.0, 0.0, 1.0),  # no opening tag
    ],
)
def test_what_the_tag_option_still_refuses(response: str, structure: float, json_ok: float, answer: float) -> None:
    result = score(response, format_accept_answer_tag=True)
    assert (result["format"], result["format_structure_ok"], result["format_json_ok"]) == (0.0, structure, json_ok)
    assert result["answer_reward"] == answer


def test_the_tag_must_hold_the_modes_keys_exactly() -> None:
    response = '<think>x</think><answer>{"answer": "person"}</answer>'
    assert score(response, format_accept_answer_tag=True, trace_reward_mode="answer")["format"] == 1.0
    assert score(response, format_accept_answer_tag=True)["format"] == 0.0  # answer-and-annotation wants both keys


def test_the_tag_block_is_the_final_block_for_final_only_and_outside_think() -> None:
    response = '<think><answer>{"answer": "dog"}</answer></think>' + f"<answer>{RIGHT}</answer>"
    for recovery in RECOVERY_MODES:
        result = score(response, format_accept_answer_tag=True, trace_recovery=recovery)
        assert result["overall"] == result["format"] == 1.0
    # Without the tag option final_only still reads the final <answer> pair (issue 35, item 4): scored, format 0.
    result = score(R1_TEMPLATE, trace_recovery="final_only", format_weight=0.1)
    assert result["overall"] == pytest.approx(0.9) and result["format"] == 0.0
    assert score(R1_TEMPLATE, trace_recovery="outside_think")["overall"] == 1.0  # a top-level object outside <think>


def test_the_format_helpers_take_the_options() -> None:
    assert evaluate_trace_response_format(R1_TEMPLATE)["format"] == 0.0
    got = evaluate_trace_response_format(R1_TEMPLATE, format_accept_answer_tag=True)
    assert got["format"] == 1.0 and got["answer_block"] == RIGHT and got["think_text"] == "the person is on the left"
    assert extract_trace_prediction(DRAFT_IN_THINK)[2] is True
    assert extract_trace_prediction(DRAFT_IN_THINK, trace_recovery="outside_think") == (None, None, False)
    assert extract_trace_prediction(R1_TEMPLATE, trace_recovery="final_only", format_accept_answer_tag=True)[2] is True
    with pytest.raises(OptionError):
        extract_trace_prediction(RIGHT, trace_recovery="x")


# --- indicators in the result ---------------------------------------------------------------------


POLICIES = [
    {"trace_recovery": recovery, "format_accept_answer_tag": tag}
    for recovery, tag in itertools.product(RECOVERY_MODES, (False, True))
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p['trace_recovery']}-{p['format_accept_answer_tag']}")
def test_the_indicators_follow_the_type_one_hot_only_when_a_policy_departs(policy: dict[str, Any]) -> None:
    result = score(RIGHT, **policy)
    opts = options_from(policy)
    keys = result_keys(get_registry(), opts)
    assert tuple(result)[: len(keys)] == keys
    departs = policy != {"trace_recovery": "lenient", "format_accept_answer_tag": False}
    if not departs:
        assert keys == result_keys() and not set(OPT_IN_KEYS) & set(result)
        return
    one_hot = len(LEADING_KEYS) + len(get_registry().type_indicator_keys)
    assert keys[one_hot:] == OPT_IN_KEYS
    assert [result[f"trace_recovery_{mode}"] for mode in RECOVERY_MODES] == [
        1.0 if mode == policy["trace_recovery"] else 0.0 for mode in RECOVERY_MODES
    ]
    assert result["format_accept_answer_tag"] == (1.0 if policy["format_accept_answer_tag"] else 0.0)


# --- every way of scoring gives the same dict -------------------------------------------------------

RESPONSES = [
    RIGHT,
    DRAFT_IN_THINK,
    TRUNCATED_AFTER_DRAFT,
    R1_TEMPLATE,
    f"{R1_TEMPLATE} Done.",
    "person",
    "<think>x</think>person",
    "<answer>person</answer>",
    f"{RIGHT} trailing",
    '{"answer": null, "annotation": [0, 0, 10, 10]}',
    "",
]


@pytest.mark.parametrize("mode", ["answer", "answer_and_annotation"])
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p['trace_recovery']}-{p['format_accept_answer_tag']}")
def test_compiled_instances_groups_records_and_batches_equal_the_scorer(policy: dict[str, Any], mode: str) -> None:
    options = {**policy, "trace_reward_mode": mode, "format_weight": 0.2}
    expected = [score(response, **options) for response in RESPONSES]
    compiled = compile_instance(INSTANCE)
    assert [compiled.score(response, **options) for response in RESPONSES] == expected
    assert compiled.score_group(RESPONSES, **options) == expected
    record = {**INSTANCE, "id": "r1", "prompt": "Who is it?", "image": "img.png", "image_size": [64, 48]}
    sized = [score(response, image_size=[64, 48], **options) for response in RESPONSES]
    assert [score_instance(record, response, **options) for response in RESPONSES] == sized
    assert score_trace_batch([{**record, "response": response} for response in RESPONSES], **options) == sized
    # The options may also come with each item.
    assert score_trace_batch([{**record, "response": response, **options} for response in RESPONSES]) == sized


# --- hostile responses under every policy ------------------------------------------------------------


def _hostile_cases() -> list[tuple[str, str]]:
    from tests.hostile.test_corpus import CASES

    extra = [
        ("think_flood", "<think>" * 100_000),
        ("close_flood", "</think>" * 100_000),
        ("answer_tag_flood", "<answer>" * 80_000 + "</answer>"),
        ("nested_tags", "<answer><think><answer>{}</answer></think>" * 5_000 + "</answer>"),
        ("tag_around_deep", "<answer>" + "[" * 100_000 + "</answer>"),
    ]
    return [(case.name, case.response) for case in CASES if not case.instance] + extra


@pytest.mark.parametrize(("name", "response"), _hostile_cases(), ids=lambda v: v if len(v) < 60 else "")
def test_hostile_responses_never_raise_under_any_policy(name: str, response: str) -> None:
    compiled = compile_instance(INT_INSTANCE)
    for policy in POLICIES[1:]:
        result = score(response, INT_INSTANCE, **policy)
        assert all(isinstance(v, float) and math.isfinite(v) for v in result.values()), name
        assert 0.0 <= result["overall"] <= 1.0
        assert compiled.score(response, **policy) == result
