"""verl adapter, driven the way verl's own reward managers call a custom reward function.

Each helper below copies a trainer's calling code (cited by file and line of the
released wheel), without torch or Ray:

* verl 0.9.1 (current): the reward-loop managers ``naive`` (default) and ``dapo``
  (``verl/experimental/reward_loop/reward_manager/naive.py``, ``dapo.py``) and the
  reward function loader (``verl/trainer/ppo/reward.py``);
* verl 0.8.0 (the previous release line, whose managers 0.9.1 no longer
  registers): ``naive``, ``batch`` and ``prime`` (``verl/workers/reward_manager/``).
"""

from __future__ import annotations

import json
import pickle
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest

from trace_tasks.integrations import verl
from trace_tasks.integrations._common import CHARTED_KEYS, stable_keys

from .helpers import INSTANCES, RESPONSES, as_json, pairs, reference


def _call_with_kwargs(raw_fn: Callable[..., Any], extra_kwargs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    # verl 0.9.1 verl/trainer/ppo/reward.py l.32-38: reward_kwargs of the config win over call-time keywords
    merged_kwargs = {**kwargs, **extra_kwargs}
    return raw_fn(*args, **merged_kwargs)


def load_custom_reward_fn(raw_fn: Callable[..., Any], reward_kwargs: dict[str, Any] | None = None) -> Any:
    # verl 0.9.1 verl/trainer/ppo/reward.py l.80-86 (the sync branch)
    return partial(_call_with_kwargs, raw_fn, dict(reward_kwargs or {}))


def reward_loop_run_single(compute_score: Any, response_str: str, ground_truth: Any, extra_info: Any = None) -> dict:
    """verl 0.9.1 verl/experimental/reward_loop/reward_manager/naive.py l.42-99 (sync branch, l.75-84;
    dapo.py l.60-106 is the same call and result handling)."""
    data_source = "trace_tasks"
    extra_info = {} if extra_info is None else extra_info
    extra_info["num_turns"] = None
    extra_info["rollout_reward_scores"] = {}
    result = compute_score(data_source=data_source, solution_str=response_str, ground_truth=ground_truth, extra_info=extra_info)
    reward_extra_info = {}
    if isinstance(result, dict):
        score = result["score"]
        for key, value in result.items():
            reward_extra_info[key] = value
    else:
        score = result
        reward_extra_info["acc"] = score
    return {"reward_score": score, "reward_extra_info": reward_extra_info}


def reward_loop_stack(outputs: list[dict]) -> dict[str, np.ndarray]:
    # verl 0.9.1 verl/experimental/reward_loop/reward_loop.py l.365-369: the first row's keys, every row indexed by them
    reward_extra_infos = [output.get("reward_extra_info", {}) for output in outputs]
    reward_extra_keys = list(reward_extra_infos[0].keys())
    return {key: np.array([info[key] for info in reward_extra_infos]) for key in reward_extra_keys}


def prime_verify(evaluation_func: Any, completions: list[str], references: list[Any], tasks: list[str]) -> list[float]:
    """verl 0.8.0 verl/workers/reward_manager/prime.py: the positional call of l.35 (there in a process
    pool, hence the pickling test below), a row's exception is None (l.40-42), the result
    handling of l.80-88, and the whole batch zeroed on any other exception (l.146-148)."""
    results: list[Any] = []
    for completion, reference_, task in zip(completions, references, tasks, strict=True):
        try:
            results.append(partial(evaluation_func, task, completion, reference_, None)())
        except Exception:
            results.append(None)
    try:
        scores = []
        for result in results:
            if isinstance(result, Exception) or result is None:
                scores.append(0.0)
            elif isinstance(result, int | float | bool):
                scores.append(float(result))
            else:
                scores.append(float(result[0]))
        return scores
    except Exception:
        return [0.0 for _ in range(len(completions))]


def old_naive_manager(compute_score: Any, rows: list[tuple[str, Any]]) -> tuple[list[float], dict[str, list[Any]]]:
    # verl 0.8.0 verl/workers/reward_manager/naive.py l.78-98: keywords, every key appended per row
    rewards, reward_extra_info = [], defaultdict(list)
    for response_str, ground_truth in rows:
        score = compute_score(data_source="d", solution_str=response_str, ground_truth=ground_truth, extra_info={})
        if isinstance(score, dict):
            rewards.append(score["score"])
            for key, value in score.items():
                reward_extra_info[key].append(value)
        else:
            rewards.append(score)
    return rewards, reward_extra_info


def test_reward_loop_naive_0_9_1_default_keys_and_exact_scores() -> None:
    rows = pairs()
    compute_score = load_custom_reward_fn(verl.compute_score)
    outputs = [reward_loop_run_single(compute_score, r, as_json(i), {"index": n}) for n, (r, i) in enumerate(rows)]
    stacked = reward_loop_stack(outputs)  # raises KeyError if one row lacked a key of the first
    assert list(stacked) == ["score", "acc", *CHARTED_KEYS]
    expected = [reference(r, i) for r, i in rows]
    assert [o["reward_score"] for o in outputs] == [e["overall"] for e in expected]
    for key in CHARTED_KEYS:
        assert stacked[key].tolist() == [e[key] for e in expected], key
    assert stacked["acc"].tolist() == stacked["score"].tolist()  # DAPO's filter_groups.metric=acc


def test_reward_file_factory_and_config_reward_kwargs() -> None:
    # The one-line reward file: `compute_score = make_compute_score(format_weight=0.1)`.
    (response, inst) = pairs()[1]
    from_file = load_custom_reward_fn(verl.make_compute_score(format_weight=0.1, trace_annotation_reward_formula="additive"))
    got = reward_loop_run_single(from_file, response, inst)
    assert (
        got["reward_score"] == reference(response, inst, format_weight=0.1, trace_annotation_reward_formula="additive")["overall"]
    )
    # reward_kwargs of verl's config override the file's options; verl's own keywords are ignored.
    overridden = load_custom_reward_fn(verl.make_compute_score(format_weight=0.1), {"format_weight": 0.3, "max_resp_len": 7})
    assert (
        reward_loop_run_single(overridden, response, inst)["reward_score"]
        == reference(response, inst, format_weight=0.3)["overall"]
    )


def test_log_keys_all_gives_every_always_present_key() -> None:
    (response, inst) = pairs()[0]
    got = reward_loop_run_single(load_custom_reward_fn(verl.make_compute_score(log_keys="all")), response, inst)
    assert list(got["reward_extra_info"]) == ["score", "acc", *stable_keys()]
    # charted: no constant option echo nor one-hot type flag (they made 234 val-aux metrics per data source)
    charted = reward_loop_run_single(load_custom_reward_fn(verl.compute_score), response, inst)["reward_extra_info"]
    assert not any(k.startswith(("annotation_type_", "trace_reward_mode", "trace_answer_")) for k in charted)
    assert len(charted) == 12


def test_prime_0_8_float_form_and_why_the_dict_form_fails() -> None:
    rows = pairs()
    completions = [r for r, _ in rows]
    references = [as_json(i) for _, i in rows]
    tasks = ["trace_tasks"] * len(rows)
    got = prime_verify(load_custom_reward_fn(verl.compute_score_float), completions, references, tasks)
    assert got == [reference(r, i)["overall"] for r, i in rows]
    assert any(score > 0 for score in got)
    # The dict form: prime takes result[0], a KeyError, and zeroes the whole batch.
    assert prime_verify(load_custom_reward_fn(verl.compute_score), completions, references, tasks) == [0.0] * len(rows)


def test_factory_functions_pickle_for_prime_process_pool() -> None:
    func = verl.make_compute_score(returns="float", format_weight=0.2)
    clone = pickle.loads(pickle.dumps(func))
    (response, inst) = pairs()[0]
    assert clone("d", response, inst) == func("d", response, inst) == reference(response, inst, format_weight=0.2)["overall"]
    assert "format_weight" in repr(clone)


def test_old_naive_and_dapo_0_8_keep_same_keys_per_row() -> None:
    rows = [(r, as_json(i)) for r, i in pairs()]
    rewards, extra = old_naive_manager(verl.compute_score, rows)
    assert {len(values) for values in extra.values()} == {len(rows)}  # stackable per key
    assert rewards == extra["score"] == extra["acc"]


def test_batch_manager_0_8_call_with_reward_kwargs() -> None:
    # verl 0.8.0 verl/workers/reward_manager/batch.py l.60-76: keywords, numpy arrays, **reward_kwargs;
    # l.100-107: score["score"] per row and every key appended.
    rows = pairs()
    func = verl.make_compute_score_batch(format_weight=0.2, log_keys="all")
    result = func(
        data_sources=np.array(["trace_tasks"] * len(rows), dtype=object),
        solution_strs=[r for r, _ in rows],
        ground_truths=[as_json(i) for _, i in rows],
        extra_infos=np.array([{"index": n, "rollout_reward_scores": {}} for n in range(len(rows))], dtype=object),
        trace_annotation_reward_formula="additive",
    )
    assert len(result) == len(rows)
    for got, (response, inst) in zip(result, rows, strict=True):
        assert isinstance(got, dict)
        want = reference(response, inst, format_weight=0.2, trace_annotation_reward_formula="additive")
        assert got["score"] == want["overall"]
        assert {k: got[k] for k in stable_keys()} == {k: want[k] for k in stable_keys()}
    assert verl.compute_score_batch([], [], [], None) == []


def test_extra_info_sets_row_options_and_image_size() -> None:
    inst = {k: v for k, v in INSTANCES[2].items() if k != "image_size"}  # a point task
    response = RESPONSES[2]
    extra = {"image_size": [64, 48], "trace_reward_mode": "answer"}
    got = verl.make_compute_score(log_keys="all")("d", response, inst, extra_info=extra)
    assert isinstance(got, dict)
    want = reference(response, inst, trace_reward_mode="answer", extra_info=extra)
    assert got["score"] == want["overall"] and got["trace_reward_mode_answer"] == 1.0
    # The small image shortens the half-life: the annotation reward differs from the 640x480 one.
    assert got["annotation_reward"] != reference(response, INSTANCES[2])["annotation_reward"]


def test_ground_truth_from_parquet_with_numpy_arrays(tmp_path) -> None:
    # A dict ground truth stored in parquet comes back with numpy arrays for its lists.
    import pandas as pd  # imported here: 2 s of every test run's collection otherwise

    inst = INSTANCES[0]
    pd.DataFrame([{"reward_model": {"ground_truth": inst}}]).to_parquet(tmp_path / "d.parquet")
    row = pd.read_parquet(tmp_path / "d.parquet").iloc[0]
    ground_truth = row["reward_model"]["ground_truth"]
    assert isinstance(ground_truth["annotation_gt"]["value"], np.ndarray)
    got = verl.compute_score("d", RESPONSES[0], ground_truth)
    assert isinstance(got, dict)
    assert got["score"] == reference(RESPONSES[0], inst)["overall"] and got["annotation_reward"] > 0.9


@pytest.mark.parametrize(
    "ground_truth,message",
    [
        ("not json", "not JSON"),
        ('"just a string"', "must be a trace instance"),
        (json.dumps({"answer_gt": {"type": "integer", "value": 1}}), "lacks"),
        (None, "must be a trace instance"),
        ({**INSTANCES[0], "annotation_gt": [1, 2]}, "annotation_gt must be a mapping"),
    ],
)
def test_malformed_ground_truth_raises_value_error(ground_truth: Any, message: str) -> None:
    # The reward loop awaits the function with no try (naive.py l.66-84): the step stops with this message.
    with pytest.raises(ValueError, match=message):
        reward_loop_run_single(load_custom_reward_fn(verl.compute_score), RESPONSES[0], ground_truth)


def test_caller_mistakes_and_a_non_string_response_raise() -> None:
    with pytest.raises(ValueError, match="format_weight"):
        verl.compute_score("d", RESPONSES[0], INSTANCES[0], format_weight=2.0)
    with pytest.raises(ValueError, match="format_weight"):
        verl.make_compute_score(format_weight=2.0)
    with pytest.raises(ValueError, match="unknown scorer option"):
        verl.make_compute_score(formatweight=0.1)
    with pytest.raises(ValueError, match="returns"):
        verl.make_compute_score(returns="tuple")
    with pytest.raises(ValueError, match="log_keys"):
        verl.make_compute_score(log_keys="some")
    with pytest.raises(ValueError, match="ground_truths"):
        verl.compute_score_batch(["d"], ["a", "b"], [INSTANCES[0]], None)
    with pytest.raises(TypeError, match="ground_truth: the response must be"):  # issue 37 item 18: never a silent 0
        verl.compute_score("d", None, INSTANCES[0])
