"""Every adapter factory takes the opt-in response policies (docs/contracts.md §3.7) like any scorer option.

``SCORER_OPTIONS`` lists them, so verl, TRL, OpenRLHF, EasyR1, the server and
Ray accept ``trace_recovery`` and ``format_accept_answer_tag`` from their
config (and a row's ``extra_info``); an unknown value is an ``OptionError`` at
once; ``log_keys="all"`` includes their indicators.
"""

from __future__ import annotations

from typing import Any

import pytest

from trace_tasks import OptionError
from trace_tasks.integrations import easyr1, openrlhf, trl, verl
from trace_tasks.integrations._common import SCORER_OPTIONS, logged_keys, scorer_options, stable_keys
from trace_tasks.scoring import OPT_IN_KEYS

from .helpers import INSTANCES, as_json, reference

POLICY = {"trace_recovery": "outside_think", "format_accept_answer_tag": True}
INSTANCE = INSTANCES[0]  # integer 2, bbox_set
RESPONSES = [
    '<think>{"answer": 2, "annotation": [[10, 10, 20, 20], [30, 30, 50, 60]]}</think>I cannot tell.',
    '<think>two</think><answer>{"answer": 2, "annotation": [[10, 10, 20, 20], [30, 30, 50, 60]]}</answer>',
    '{"answer": 2, "annotation": [[10, 10, 20, 20], [30, 30, 50, 60]]}',
]


def test_the_options_are_scorer_options() -> None:
    assert {"trace_recovery", "format_accept_answer_tag"} <= set(SCORER_OPTIONS)
    assert scorer_options({**POLICY, "reward_router_address": "x"}, strict=False) == POLICY
    with pytest.raises(OptionError, match="trace_recovery must be one of"):
        scorer_options({"trace_recovery": "strict"}, strict=True)
    assert stable_keys(POLICY)[-len(OPT_IN_KEYS) :] == OPT_IN_KEYS
    assert stable_keys() == stable_keys({"trace_recovery": "lenient"})  # the contract: no indicators
    assert logged_keys("all", POLICY) == stable_keys(POLICY) and logged_keys("charted", POLICY) == logged_keys("charted")


@pytest.mark.parametrize(
    "factory", [verl.make_compute_score, easyr1.make_compute_score, trl.make_reward_func, openrlhf.make_reward_func]
)
def test_every_factory_refuses_a_bad_policy_at_once(factory: Any) -> None:
    with pytest.raises(OptionError):
        factory(trace_recovery="think")
    with pytest.raises(OptionError):
        factory(format_accept_answer_tag="yes")


def test_verl_scores_with_the_policy_and_logs_its_indicators() -> None:
    compute = verl.make_compute_score(log_keys="all", format_weight=0.1, **POLICY)
    for response in RESPONSES:
        got = compute("trace", response, as_json(INSTANCE))
        want = reference(response, INSTANCE, format_weight=0.1, **POLICY)
        assert isinstance(got, dict) and got["score"] == want["overall"]
        assert {k: got[k] for k in OPT_IN_KEYS} == {k: want[k] for k in OPT_IN_KEYS}
    # A row's extra_info switches its own policy.
    row = compute("trace", RESPONSES[0], as_json(INSTANCE), {"trace_recovery": "lenient", "format_accept_answer_tag": False})
    lenient = reference(RESPONSES[0], INSTANCE, format_weight=0.1)
    assert isinstance(row, dict) and row["score"] == lenient["overall"] == 0.9  # the draft recovered, format 0


def test_easyr1_and_openrlhf_and_trl_score_with_the_policy() -> None:
    want = [reference(r, INSTANCE, **POLICY)["overall"] for r in RESPONSES]
    assert want == [0.0, 1.0, 1.0]
    compute = easyr1.make_compute_score(**POLICY)
    assert [
        compute({"response": r, "response_length": len(r), "ground_truth": as_json(INSTANCE)})["overall"] for r in RESPONSES
    ] == want
    got = openrlhf.score_queries(RESPONSES, None, [as_json(INSTANCE)] * 3, scorer_options(POLICY, strict=True), log_keys="all")
    assert got["rewards"] == want and got["extra_logs"]["trace_recovery_outside_think"] == [1.0, 1.0, 1.0]
    func = trl.make_reward_func(log_metrics=False, **POLICY)
    columns = {name: [INSTANCE[name]] * 3 for name in ("answer_gt", "annotation_gt", "reward_contract")}
    assert func(prompts=["Q"] * 3, completions=RESPONSES, **columns) == want


def test_the_server_takes_the_policy_in_its_config() -> None:
    pytest.importorskip("fastapi")
    from trace_tasks.integrations.server import create_app

    create_app(**POLICY)
    with pytest.raises(OptionError, match="trace_recovery"):
        create_app(trace_recovery="x")
