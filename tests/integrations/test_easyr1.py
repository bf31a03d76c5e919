"""EasyR1 reward function, driven the way EasyR1 calls it (copied from hiyouga/EasyR1, without torch or Ray).

* EasyR1 at HEAD (b44b311, 2026-07-30; since #558, November 2025):
  ``verl/workers/reward/function.py`` ``AutoRewardManager`` loads the file,
  reads ``REWARD_NAME``/``REWARD_TYPE`` from it (l.117-134), wraps the function
  in ``functools.partial(reward_fn, **reward_function_kwargs)`` (l.133) and,
  for ``batch``, calls it with the list of reward inputs (l.77-104), each
  response decoded with ``skip_special_tokens=config.skip_special_tokens``
  (l.84-86); every key of every score goes to ``reward_metrics[key]`` and is
  logged as its mean (``verl/trainer/ray_trainer.py`` l.629-632).
* EasyR1 v0.3.x (before #558): ``worker.reward.reward_type`` picks
  ``BatchFunctionRewardManager`` (the same batch call, l.108-138 of
  ``function.py`` at b637de8^) or ``SequentialFunctionRewardManager``, which calls
  the function with one input at a time (l.80-105).
"""

from __future__ import annotations

import functools
import types
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from trace_tasks.integrations import easyr1
from trace_tasks.integrations._common import CHARTED_KEYS, stable_keys

from .helpers import INSTANCES, as_json, pairs, reference


def reward_file() -> types.ModuleType:
    """The one-line reward file a user writes, as a module object."""
    module = types.ModuleType("custom_reward_fn")
    exec(  # the text of the reward file, exactly as documented
        "from trace_tasks.integrations.easyr1 import REWARD_NAME, REWARD_TYPE, make_compute_score  # noqa: F401\n"
        "compute_score = make_compute_score(format_weight=0.1)\n",
        module.__dict__,
    )
    return module


def auto_reward_manager(module: types.ModuleType, name: str, reward_function_kwargs: dict[str, Any]) -> tuple[Any, str]:
    # EasyR1 HEAD verl/workers/reward/function.py l.128-134
    reward_fn = getattr(module, name)
    reward_type = getattr(module, "REWARD_TYPE", "batch")
    return functools.partial(reward_fn, **reward_function_kwargs), reward_type


def compute_reward_batch(
    reward_fn: Any, responses: list[str], ground_truths: list[Any]
) -> tuple[list[float], dict[str, list[float]]]:
    # EasyR1 HEAD verl/workers/reward/function.py l.77-104 (the reward tensor's last-token entry is score["overall"])
    reward_inputs = [
        {"response": r, "response_length": len(r), "ground_truth": gt} for r, gt in zip(responses, ground_truths, strict=True)
    ]
    scores = reward_fn(reward_inputs)
    rewards, reward_metrics = [], defaultdict(list)
    for score in scores:
        rewards.append(score["overall"])
        for key, value in score.items():
            reward_metrics[key].append(value)
    return rewards, reward_metrics


def compute_reward_sequential(
    reward_fn: Any, responses: list[str], ground_truths: list[Any]
) -> tuple[list[float], dict[str, list[float]]]:
    # EasyR1 v0.3.2 (b637de8^) verl/workers/reward/function.py l.80-105: one input per call
    rewards, reward_metrics = [], defaultdict(list)
    for r, gt in zip(responses, ground_truths, strict=True):
        score = reward_fn({"response": r, "response_length": len(r), "ground_truth": gt})
        rewards.append(score["overall"])
        for key, value in score.items():
            reward_metrics[key].append(value)
    return rewards, reward_metrics


def reduce_metrics(metrics: dict[str, list[float]]) -> dict[str, float]:
    # EasyR1 HEAD verl/trainer/metrics.py l.23-24: the mean of each key's list (ragged keys are fine)
    return {key: float(np.mean(values)) for key, values in metrics.items()}


def test_current_easyr1_reads_reward_type_from_the_file() -> None:
    rows = pairs()
    reward_fn, reward_type = auto_reward_manager(reward_file(), "compute_score", {})
    assert reward_type == "batch"
    rewards, metrics = compute_reward_batch(reward_fn, [r for r, _ in rows], [as_json(i) for _, i in rows])
    expected = [reference(r, i, format_weight=0.1) for r, i in rows]
    assert rewards == [e["overall"] for e in expected]
    for key in ("accuracy", *CHARTED_KEYS):
        assert metrics[key] == [e[key] for e in expected], key
    # Per-type diagnostics, present on the rows whose annotation was scored: a mean over those rows.
    iou = [e["annotation_assigned_iou_mean"] for e in expected if "annotation_assigned_iou_mean" in e]
    assert metrics["annotation_assigned_iou_mean"] == iou and 0 < len(iou) < len(rows)
    logged = reduce_metrics(metrics)
    assert not any(k.startswith(("annotation_type_", "trace_reward_mode")) for k in logged)


def test_older_easyr1_sequential_and_reward_function_kwargs() -> None:
    rows = pairs()
    reward_fn, _ = auto_reward_manager(reward_file(), "compute_score", {"format_weight": 0.2})  # kwargs override the file
    rewards, metrics = compute_reward_sequential(reward_fn, [r for r, _ in rows], [i for _, i in rows])
    assert rewards == [reference(r, i, format_weight=0.2)["overall"] for r, i in rows]
    batch_rewards, batch_metrics = compute_reward_batch(reward_fn, [r for r, _ in rows], [i for _, i in rows])
    assert batch_rewards == rewards and batch_metrics == metrics


def test_skip_special_tokens_false_keeps_the_format_credit() -> None:
    # With skip_special_tokens: false (function.py l.84-86) the decoded response ends with the end-of-turn token.
    (response, inst) = pairs()[0]
    want = reference(response, inst)
    for suffix in ("<|im_end|>", "<|im_end|><|endoftext|><|endoftext|>", "</s>", "</s><pad><pad>", "[SEP][PAD][PAD]", "<eos>"):
        (got,) = easyr1.compute_score([{"response": response + suffix, "response_length": 9, "ground_truth": inst}])
        assert got["format"] == want["format"] == 1.0 and got["overall"] == want["overall"], suffix


def test_log_keys_all_and_no_diagnostics() -> None:
    (response, inst) = pairs()[0]
    func = easyr1.make_compute_score(log_keys="all", diagnostics=False)
    (got,) = func([{"response": response, "response_length": 1, "ground_truth": as_json(inst)}])
    assert tuple(got) == tuple(dict.fromkeys(("overall", "accuracy", *stable_keys())))
    want = reference(response, inst)
    assert got == {key: want[key] for key in got}


def test_errors_name_the_input() -> None:
    (response, _inst) = pairs()[0]
    with pytest.raises(ValueError, match=r"reward_inputs\[0\].ground_truth"):
        easyr1.compute_score([{"response": response, "response_length": 1, "ground_truth": "7"}])
    with pytest.raises(ValueError, match=r"reward_input.ground_truth"):
        easyr1.compute_score({"response": response, "response_length": 1, "ground_truth": "7"})
    with pytest.raises(ValueError, match="unknown scorer option"):
        easyr1.compute_score([], bogus=1)
    with pytest.raises(ValueError, match="diagnostics"):
        easyr1.make_compute_score(diagnostics="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"reward_inputs\[0\] must be a mapping"):
        easyr1.compute_score(["x"])
    with pytest.raises(TypeError, match=r"reward_input.response: the response must be"):  # issue 37 item 18: never a silent 0
        easyr1.compute_score({"response": None, "response_length": 0, "ground_truth": INSTANCES[0]})
