"""AReaL reward functions, driven the way AReaL 1.0.4 calls them (copied from the released wheel).

The ``areal`` wheel (``pip download areal==1.0.4 --no-deps``) is not installed
here: it requires torch (``>=2.9.1,<2.11``), ray, transformers, vLLM-era
tooling and a hundred more packages, and ``import areal`` imports its
controllers (``areal/__init__.py`` l.7-14). The calling code is copied instead:

* ``areal/api/reward_api.py`` l.40-59: ``reward_fn(prompt, completions,
  prompt_ids, completion_ids, **kwargs) -> float``, every other column of the
  dataset row as a keyword argument;
* ``AsyncRewardWrapper.__call__`` (l.141-183): the function and its arguments
  go through ``functools.partial`` to a ``ProcessPoolExecutor``
  (``run_in_executor``, so they must pickle), awaited with a timeout; an
  exception is logged and retried ``max_retries`` (3) times, then re-raised;
* the calls: ``areal/workflow/rlvr.py`` l.100-107 (positional, the completion
  decoded with special tokens) and ``areal/workflow/vision_rlvr.py`` l.64-71
  (keywords), then ``stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward)``
  (``rlvr.py`` l.135; ``areal/utils/stats_tracker.py`` l.109-114: each value
  appended as a float under its key).
"""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
from collections import defaultdict
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from typing import Any, Optional

import pytest

from trace_tasks import InstanceError
from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, strip_special_tokens
from trace_tasks.integrations.areal import make_async_reward_fn, make_reward_fn

from .helpers import INSTANCES, RESPONSES, instance, pairs, reference

PROMPT_IDS = [1, 2, 3]
COMPLETION_IDS = [4, 5]
log = logging.getLogger("RewardAPI")


async def async_reward_wrapper(
    reward_fn: Any, executor: Optional[Executor], *args: Any, max_retries: int = 3, timeout: float = 15, **kwargs: Any
) -> float:
    """reward_api.py l.141-183 (the executor passed in; ``None`` is asyncio's thread pool)."""
    for attempt in range(max_retries + 1):
        is_last = attempt == max_retries
        try:
            future = asyncio.get_running_loop().run_in_executor(executor, partial(reward_fn, *args, **kwargs))
            result: float = await asyncio.wait_for(future, timeout=timeout)
            return result
        except TimeoutError:
            if is_last:
                return 0
        except Exception:
            log.exception(f"Reward computation error (attempt {attempt + 1}/{max_retries + 1})")
            if is_last:
                raise
    return 0


def rlvr_call(reward_fn: Any, completion: str, row: dict[str, Any], executor: Optional[Executor] = None) -> float:
    """rlvr.py l.100-107: positional arguments, then the row's columns."""
    return asyncio.run(async_reward_wrapper(reward_fn, executor, "prompt", completion, PROMPT_IDS, COMPLETION_IDS, **row))


def vision_call(reward_fn: Any, completion: str, row: dict[str, Any]) -> float:
    """vision_rlvr.py l.64-71: keywords."""
    return asyncio.run(
        async_reward_wrapper(
            reward_fn,
            None,
            prompt="prompt",
            completions=completion,
            prompt_ids=PROMPT_IDS,
            completion_ids=COMPLETION_IDS,
            **row,
        )
    )


def _row(inst: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A dataset row: the instance columns as JSON strings, and the columns a vision dataset has besides."""
    row = {k: json.dumps(v) for k, v in inst.items()}
    return {"messages": [{"role": "user", "content": "q"}], "images": [], "query_id": "q-1", **row, **extra}


def test_every_pair_positional_and_keyword_calls_are_exact() -> None:
    reward_fn = make_reward_fn(format_weight=0.1)
    for reply, inst in pairs():
        want = reference(reply, inst, format_weight=0.1)["overall"]
        decoded = reply + "<|im_end|>"  # tokenizer.decode(output_tokens) keeps the end-of-turn token
        assert (
            rlvr_call(reward_fn, decoded, _row(inst))
            == reference(strip_special_tokens(decoded), inst, format_weight=0.1)["overall"]
        )
        assert vision_call(reward_fn, reply, _row(inst)) == want


@pytest.mark.slow  # a process pool: what AsyncRewardWrapper runs the function in
def test_the_function_pickles_and_scores_in_a_process_pool() -> None:
    reward_fn = make_reward_fn(instance_key="instance", trace_reward_mode="answer")
    assert pickle.loads(pickle.dumps(reward_fn)).options == reward_fn.options
    with ProcessPoolExecutor(max_workers=1) as pool:
        for inst, reply in zip(INSTANCES, RESPONSES, strict=False):
            row = {"instance": json.dumps(inst)}
            assert rlvr_call(reward_fn, reply, row, pool) == reference(reply, inst, trace_reward_mode="answer")["overall"]


def test_options_and_a_rows_extra_info() -> None:
    reward_fn = make_reward_fn(answer_weight=0.2, annotation_weight=0.8)
    for i, inst in enumerate(INSTANCES):
        extra = {"extra_info": {"trace_reward_mode": "answer"}} if i == 0 else {}
        options: dict[str, Any] = {"answer_weight": 0.2, "annotation_weight": 0.8}
        if extra:
            options["trace_reward_mode"] = "answer"
        assert vision_call(reward_fn, RESPONSES[i], _row(inst, **extra)) == reference(RESPONSES[i], inst, **options)["overall"]
    with pytest.raises(ValueError, match="unknown scorer option"):
        make_reward_fn(format_wieght=0.1)


BROKEN = instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})


def test_a_broken_row_raises_through_the_wrapper_naming_the_row(caplog: pytest.LogCaptureFixture) -> None:
    reward_fn = make_reward_fn()
    with caplog.at_level(logging.ERROR), pytest.raises(InstanceError, match=r"dataset row query_id='q-1': invalid instance"):
        vision_call(reward_fn, RESPONSES[1], _row(BROKEN))
    assert sum("Reward computation error" in r.getMessage() for r in caplog.records) == 4  # AReaL retried 3 times


def test_on_invalid_zero_logs_and_scores_zero(caplog: pytest.LogCaptureFixture) -> None:
    reward_fn = make_reward_fn(on_invalid="zero")
    with caplog.at_level(logging.ERROR, logger="trace_tasks.integrations.areal"):
        assert vision_call(reward_fn, RESPONSES[1], _row(BROKEN, query_id=7)) == 0.0
    assert any("dataset row query_id=7" in r.getMessage() for r in caplog.records)


class StatsTracker:
    """areal/utils/stats_tracker.py l.109-114: ``scalar(**kwargs)`` appends each value as a float under its key."""

    def __init__(self) -> None:
        self.stats: dict[str, list[float]] = defaultdict(list)

    def scalar(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            self.stats[key].append(float(value))


def test_the_async_function_logs_the_charted_keys_to_the_stats_tracker() -> None:
    tracker = StatsTracker()
    reward_fn = make_async_reward_fn(on_invalid="zero", stats=lambda: tracker.scalar, format_weight=0.1)
    rows = [(RESPONSES[0], INSTANCES[0]), (RESPONSES[1], INSTANCES[1]), (RESPONSES[1], BROKEN)]

    async def rollouts() -> list[float]:
        # the workflow awaits self.async_reward_fn(...) (rlvr.py l.101-107) and logs reward (l.135)
        out = []
        for reply, inst in rows:
            reward = await reward_fn("prompt", reply, PROMPT_IDS, COMPLETION_IDS, **_row(inst))
            tracker.scalar(reward=reward)
            out.append(reward)
        return out

    rewards = asyncio.run(rollouts())
    expected = [reference(r, i, format_weight=0.1) for r, i in rows[:2]]
    assert rewards == [e["overall"] for e in expected] + [0.0]
    for key in CHARTED_KEYS:
        assert tracker.stats[f"trace/{key}"] == [e[key] for e in expected] + [0.0]
    assert tracker.stats[f"trace/{REFUSED_KEY}"] == [0.0, 0.0, 1.0]
    assert tracker.stats["reward"] == rewards
