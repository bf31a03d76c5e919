"""EasyR1 batch reward function, called the way EasyR1 calls it.

Shapes follow EasyR1 (hiyouga/EasyR1) ``verl/workers/reward/function.py``
(``BatchFunctionRewardManager.compute_reward``): the module is loaded from
``worker.reward.reward_function`` and called as ``reward_fn(reward_inputs)``
after ``functools.partial(reward_fn, **reward_function_kwargs)``; each input is
``{"response": str, "response_length": int, "ground_truth": data.non_tensor_batch["ground_truth"][i]}``;
``score["overall"]`` goes into the reward tensor and every key into the metrics.
"""

from __future__ import annotations

import functools

import pytest

from trace_tasks.integrations import easyr1
from trace_tasks.integrations._common import stable_keys

from .helpers import as_json, pairs, reference


def test_batch_equals_scorer_with_kwargs() -> None:
    rows = pairs()
    reward_fn = functools.partial(easyr1.compute_score, format_weight=0.1)
    inputs = [{"response": r, "response_length": len(r), "ground_truth": as_json(i)} for r, i in rows]
    scores = reward_fn(inputs)
    assert easyr1.REWARD_TYPE == "batch"
    assert len(scores) == len(rows)
    for got, (response, inst) in zip(scores, rows, strict=False):
        assert tuple(got) == stable_keys()
        expected = reference(response, inst, format_weight=0.1)
        assert got == {key: expected[key] for key in got}


def test_mapping_ground_truth_and_errors() -> None:
    (response, inst) = pairs()[0]
    assert (
        easyr1.compute_score([{"response": response, "response_length": 1, "ground_truth": inst}])[0]["overall"]
        == reference(response, inst)["overall"]
    )
    with pytest.raises(ValueError, match=r"reward_inputs\[0\].ground_truth"):
        easyr1.compute_score([{"response": response, "response_length": 1, "ground_truth": "7"}])
    with pytest.raises(ValueError, match="unknown scorer option"):
        easyr1.compute_score([], bogus=1)
