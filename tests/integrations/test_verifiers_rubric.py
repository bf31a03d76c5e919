"""The verifiers ``Rubric`` (0.1-0.3) calling the trace rubric functions, copied from verifiers 0.3.1.

verifiers 0.4.0 dropped the ``Rubric`` (its ``verifiers.v1`` scoring is tested on
the package itself in ``tests/frameworks/test_verifiers.py``); 0.3.1, the last
release with it, keeps it as ``verifiers.legacy.Rubric``. The code below
is copied from the 0.3.1 wheel (``pip download verifiers==0.3.1 --no-deps``),
``verifiers/legacy/rubrics/rubric.py``:

* ``score_objects`` (l.125-141): the arguments a function may declare,
  ``prompt, completion, answer, state, info`` (and ``task``), from the rollout state;
* ``_call_individual_reward_func`` (l.184-213): the function is called with
  the arguments it declares (or all of them with ``**kwargs``), awaited when it
  returns an awaitable (``verifiers/legacy/utils/async_utils.py`` l.36-40), and an
  exception is logged at ERROR and scored 0.0;
* ``score_rollout`` (l.318-356): every function's value goes to
  ``state["metrics"]`` under its ``__name__``, the weighted sum to ``state["reward"]``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, stable_keys
from trace_tasks.integrations.verifiers import make_rubric_funcs, rubric_weights

from .helpers import INSTANCES, RESPONSES, instance, pairs, reference

log = logging.getLogger("verifiers.rubric")


async def maybe_await(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """verifiers/legacy/utils/async_utils.py l.36-40."""
    result = func(*args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


def score_objects(state: dict[str, Any]) -> dict[str, Any]:
    """rubric.py l.125-141 (no task resources, no providers)."""
    return {
        "prompt": state["prompt"],
        "completion": state["completion"],
        "answer": state.get("answer", ""),
        "state": state,
        "info": state.get("info", {}),
        "task": None,
    }


async def call_individual_reward_func(func: Callable[..., Any], state: dict[str, Any]) -> float:
    """rubric.py l.184-213."""
    sig = inspect.signature(func)
    merged = score_objects(state)
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        try:
            ans = float(await maybe_await(func, **merged))
        except Exception as e:
            log.error(f"Error calling reward function {func.__name__}: {e}")
            ans = 0.0
    else:
        allowed = {k: v for k, v in merged.items() if k in sig.parameters}
        try:
            ans = float(await maybe_await(func, **allowed))
        except Exception as e:
            log.error(f"Error calling reward function {func.__name__}: {e}")
            ans = 0.0
    return ans


async def score_rollout(funcs: list[Callable[..., Any]], weights: list[float], state: dict[str, Any]) -> None:
    """rubric.py l.318-356 (no group functions)."""
    scores = [await call_individual_reward_func(func, state) for func in funcs]
    state["metrics"] = {func.__name__: score for func, score in zip(funcs, scores, strict=True)}
    state["reward"] = sum(score * weight for score, weight in zip(scores, weights, strict=True))


def _state(reply: Any, answer: Any = "", info: Any = None) -> dict[str, Any]:
    completion = reply if not isinstance(reply, str) else [{"role": "assistant", "content": reply}]
    return {"prompt": [{"role": "user", "content": "q"}], "completion": completion, "answer": answer, "info": info or {}}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_every_pair_exact_reward_and_metrics(asynchronous: bool) -> None:
    funcs = make_rubric_funcs(format_weight=0.1, asynchronous=asynchronous)
    weights = rubric_weights()
    names = [f.__name__ for f in funcs]
    assert names == ["trace_overall", *(f"trace_{k}" for k in CHARTED_KEYS if k != "overall"), f"trace_{REFUSED_KEY}"]
    assert weights == [1.0] + [0.0] * (len(funcs) - 1)
    assert all(inspect.iscoroutinefunction(f) == asynchronous for f in funcs)
    for reply, inst in pairs():
        state = _state(reply, answer=json.dumps(inst))
        asyncio.run(score_rollout(funcs, weights, state))
        expected = reference(reply, inst, format_weight=0.1)
        assert state["reward"] == expected["overall"]
        assert state["metrics"] == {
            **{f"trace_{k}": expected[k] for k in ("overall", *CHARTED_KEYS)},
            f"trace_{REFUSED_KEY}": 0.0,
        }


def test_a_plain_string_completion_info_instance_and_options() -> None:
    funcs = make_rubric_funcs(instance_key="instance", log_keys="all", trace_reward_mode="answer")
    weights = rubric_weights("all")
    assert len(weights) == len(funcs) == len(stable_keys()) + 1
    for i, inst in enumerate(INSTANCES):
        info: dict[str, Any] = {"instance": inst}
        if i == 2:
            info["trace_reward_mode"] = "annotation"  # the row's info overrides the factory's option
        state = _state(RESPONSES[i], info=info)
        state["completion"] = RESPONSES[i]  # a completion-format environment passes the text itself
        asyncio.run(score_rollout(funcs, weights, state))
        mode = "annotation" if i == 2 else "answer"
        expected = reference(RESPONSES[i], inst, trace_reward_mode=mode)
        assert state["reward"] == expected["overall"]
        assert state["metrics"]["trace_answer_parse_ok"] == expected["answer_parse_ok"]


def test_a_broken_row_is_logged_zeroed_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    funcs = make_rubric_funcs()
    broken = instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})
    state = _state(RESPONSES[1], answer=json.dumps(broken))
    with caplog.at_level(logging.ERROR):
        asyncio.run(score_rollout(funcs, rubric_weights(), state))
    assert state["reward"] == 0.0
    assert state["metrics"][f"trace_{REFUSED_KEY}"] == 1.0
    assert all(v == 0.0 for k, v in state["metrics"].items() if k != f"trace_{REFUSED_KEY}")
    refusals = [r for r in caplog.records if r.name == "trace_tasks.integrations.verifiers"]
    assert len(refusals) == 1  # one line per rollout, not one per function
    assert "the rollout's answer: invalid instance" in refusals[0].getMessage()
    # a row with no instance at all is refused the same way
    state = _state(RESPONSES[1], answer="")
    asyncio.run(score_rollout(funcs, rubric_weights(), state))
    assert state["metrics"][f"trace_{REFUSED_KEY}"] == 1.0


def test_options_are_checked_when_the_functions_are_built() -> None:
    with pytest.raises(ValueError, match="unknown scorer option"):
        make_rubric_funcs(format_weigth=0.1)
    with pytest.raises(ValueError, match="log_keys"):
        rubric_weights("some")
