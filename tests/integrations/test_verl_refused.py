"""verl's ``rate_limited`` reward-loop manager and a broken dataset row (issue 29).

The manager catches a reward function's exception, logs it and returns
``{"error", "acc"}`` for that row; verl's ``RewardLoopManager.compute_rm_score``
then stacks every row's ``reward_extra_info`` by the *first* row's keys. The
helpers copy both from the released wheel (``pip download verl==0.9.1``):

* ``rate_limited_run_single``: ``verl/experimental/reward_loop/reward_manager/limited.py``
  l.428-469 (the ``try`` around ``_compute_reward``, without the rate limiters);
* ``compute_rm_score_stack``: ``verl/experimental/reward_loop/reward_loop.py`` l.364-369.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from trace_tasks.integrations import verl
from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, stable_keys

from .helpers import INSTANCES, RESPONSES, as_json, reference

logger = logging.getLogger("verl.rate_limited.copy")

BROKEN = {**INSTANCES[1], "annotation_gt": {"type": "bbox", "value": [10, 10, 10, 50]}}  # zero-area target box


def rate_limited_run_single(compute_score: Any, response_str: str, ground_truth: Any, extra_info: Any) -> dict:
    # verl 0.9.1 verl/experimental/reward_loop/reward_manager/limited.py l.428-469
    data_source = "trace"
    reward_extra_info: dict[str, Any] = {}
    try:
        result = compute_score(
            data_source=data_source, solution_str=response_str, ground_truth=ground_truth, extra_info=extra_info
        )
        if isinstance(result, dict):
            score = result["score"]
            for key, value in result.items():
                reward_extra_info[key] = value
        else:
            score = result
            reward_extra_info["acc"] = score
        reward = score
    except Exception as e:
        logger.error(f"Reward computation failed for data_source={data_source}: {e}. Response preview: {response_str[:100]}...")
        reward = 0.0
        reward_extra_info["error"] = str(e)
        reward_extra_info["acc"] = 0.0
    return {"reward_score": reward, "reward_extra_info": reward_extra_info}


def compute_rm_score_stack(outputs_flat: list[dict]) -> dict[str, np.ndarray]:
    # verl 0.9.1 verl/experimental/reward_loop/reward_loop.py l.364-369
    reward_extra_infos = [output.get("reward_extra_info", {}) for output in outputs_flat]
    reward_extra_keys = list(reward_extra_infos[0].keys())
    non_tensor_batch = {}
    for key in reward_extra_keys:
        non_tensor_batch[key] = np.array([info[key] for info in reward_extra_infos])
    return non_tensor_batch


def _rows(compute_score: Any, truths: list[Any]) -> list[dict]:
    return [
        rate_limited_run_single(compute_score, RESPONSES[1], truth, {"index": i, "split": "train"})
        for i, truth in enumerate(truths)
    ]


def test_the_default_raise_breaks_verls_stacking_which_is_why_on_invalid_zero_exists() -> None:
    outputs = _rows(verl.make_compute_score(), [as_json(INSTANCES[1]), as_json(BROKEN)])
    assert set(outputs[1]["reward_extra_info"]) == {"error", "acc"}
    assert "dataset row extra_info['index']=1" in outputs[1]["reward_extra_info"]["error"]
    with pytest.raises(KeyError):
        compute_rm_score_stack(outputs)


@pytest.mark.parametrize("log_keys", ["charted", "all"])
@pytest.mark.parametrize("broken_first", [False, True])
def test_on_invalid_zero_gives_every_row_the_same_keys(
    log_keys: str, broken_first: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fn = verl.make_compute_score(on_invalid="zero", log_keys=log_keys)
    truths = [as_json(BROKEN), as_json(INSTANCES[1]), INSTANCES[1]]
    if not broken_first:
        truths[:2] = truths[1::-1]
    with caplog.at_level(logging.ERROR):
        stacked = compute_rm_score_stack(_rows(fn, truths))
    logged = CHARTED_KEYS if log_keys == "charted" else stable_keys()
    assert list(stacked) == list(dict.fromkeys(["score", "acc", *logged, REFUSED_KEY]))
    broken = 0 if broken_first else 1
    assert stacked[REFUSED_KEY].tolist() == [1.0 if i == broken else 0.0 for i in range(3)]
    assert stacked["score"][broken] == 0.0 and all(stacked[key][broken] == 0.0 for key in logged)
    good = 2
    assert stacked["score"][good] == reference(RESPONSES[1], INSTANCES[1])["overall"]
    errors = [r for r in caplog.records if r.name == "trace_tasks.integrations.verl" and r.levelno == logging.ERROR]
    assert len(errors) == 1 and f"extra_info['index']={broken}" in errors[0].getMessage()
    assert "invalid instance" in errors[0].getMessage() and REFUSED_KEY in errors[0].getMessage()


def test_on_invalid_zero_batch_and_float_forms() -> None:
    batch = verl.make_compute_score_batch(on_invalid="zero")
    rows = batch(["trace"] * 2, [RESPONSES[1]] * 2, [as_json(BROKEN), as_json(INSTANCES[1])], [None, None])
    assert [list(row) for row in rows] == [list(rows[1])] * 2 and rows[0][REFUSED_KEY] == 1.0
    assert verl.make_compute_score(returns="float", on_invalid="zero")("trace", RESPONSES[1], BROKEN) == 0.0


def test_without_an_index_the_error_names_the_position_in_the_batch_call() -> None:
    with pytest.raises(ValueError, match=r"^ground_truths\[1\] \(position 1 in this call\): invalid instance"):
        verl.make_compute_score_batch()(["t"] * 2, [""] * 2, [INSTANCES[1], BROKEN])
    with pytest.raises(ValueError, match="on_invalid"):
        verl.make_compute_score(on_invalid="skip")
