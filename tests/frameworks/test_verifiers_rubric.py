"""verifiers 0.3.1's own ``Rubric`` calling the trace rubric functions (opt-in: ``VERIFIERS_VERSION=0.3.1 tests/frameworks/run.sh``).

0.3.1 is the last release with the ``Rubric`` (``verifiers.legacy.Rubric``;
``vf.Rubric`` in 0.1-0.2); 0.4.0 dropped it. ``Rubric(funcs, weights)``
(``verifiers/legacy/rubrics/rubric.py`` l.40-57) and ``await
rubric.score_rollout(state)`` (l.318-356): each function called with the
arguments it declares (l.184-213: ``score_objects``, l.125-141), its value
recorded under its name in ``state["metrics"]``, the weighted sum in
``state["reward"]``; an exception logged and scored 0.0. The same code is
replayed without verifiers in ``tests/integrations/test_verifiers_rubric.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

pytest.importorskip("verifiers.legacy", reason="verifiers 0.3.1's Rubric: VERIFIERS_VERSION=0.3.1 tests/frameworks/run.sh")

from verifiers.legacy import Rubric
from verifiers.legacy.types import State

from tests.integrations.helpers import INSTANCES, RESPONSES, instance, pairs, reference
from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY
from trace_tasks.integrations.verifiers import make_rubric_funcs, rubric_weights

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]


def _state(reply: Any, answer: Any = "", info: Any = None) -> State:
    completion = [{"role": "assistant", "content": reply}] if isinstance(reply, str) else reply
    return State(prompt=[{"role": "user", "content": "q"}], completion=completion, answer=answer, info=info or {})


@pytest.mark.parametrize("asynchronous", [False, True])
def test_every_pair_exact_reward_and_metrics(asynchronous: bool) -> None:
    rubric = Rubric(funcs=make_rubric_funcs(format_weight=0.1, asynchronous=asynchronous), weights=rubric_weights())
    for reply, inst in pairs():
        state = _state(reply, answer=json.dumps(inst))
        asyncio.run(rubric.score_rollout(state))
        expected = reference(reply, inst, format_weight=0.1)
        assert state["reward"] == expected["overall"]
        assert state["metrics"] == {
            **{f"trace_{k}": expected[k] for k in ("overall", *CHARTED_KEYS)},
            f"trace_{REFUSED_KEY}": 0.0,
        }


def test_info_instance_and_per_row_options() -> None:
    rubric = Rubric(funcs=make_rubric_funcs(instance_key="instance", trace_reward_mode="answer"), weights=rubric_weights())
    for i, inst in enumerate(INSTANCES):
        info: dict[str, Any] = {"instance": inst}
        mode = "answer"
        if i == 2:
            info["trace_reward_mode"] = mode = "annotation"
        state = _state(RESPONSES[i], info=info)
        asyncio.run(rubric.score_rollout(state))
        assert state["reward"] == reference(RESPONSES[i], inst, trace_reward_mode=mode)["overall"]


def test_a_broken_row_is_logged_zeroed_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    rubric = Rubric(funcs=make_rubric_funcs(), weights=rubric_weights())
    broken = instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})
    state = _state(RESPONSES[1], answer=json.dumps(broken))
    with caplog.at_level(logging.ERROR):
        asyncio.run(rubric.score_rollout(state))
    assert state["reward"] == 0.0
    assert state["metrics"][f"trace_{REFUSED_KEY}"] == 1.0
    assert any("the rollout's answer: invalid instance" in r.getMessage() for r in caplog.records)
