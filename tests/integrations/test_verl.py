"""verl adapter, called the way verl calls a custom reward function.

Shapes follow verl (volcengine/verl, 2025-2026 main):
``verl/workers/reward_manager/naive.py`` calls ``compute_score(data_source=...,
solution_str=..., ground_truth=..., extra_info=...)`` with keywords, the ground
truth from ``non_tensor_batch["reward_model"]["ground_truth"]`` and
``extra_info`` a dict to which it adds ``num_turns``; it reads ``score["score"]``
and appends every key to ``reward_extra_info``.
``verl/workers/reward_manager/batch.py`` calls ``compute_score(data_sources=<numpy
object array>, solution_strs=<list>, ground_truths=<list>, extra_infos=<numpy
object array>, **reward_kwargs)``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from trace_tasks.integrations import verl

from .helpers import INSTANCES, RESPONSES, as_json, pairs, reference


def _check(result: dict[str, float], expected: dict[str, float]) -> None:
    assert result["score"] == expected["overall"]
    for key, value in result.items():
        if key != "score":
            assert value == expected[key], key


@pytest.mark.parametrize("response,inst", pairs())
def test_naive_manager_call_equals_scorer(response: str, inst: dict) -> None:
    extra_info = {"index": 3, "split": "train", "num_turns": None}
    result = verl.compute_score(
        data_source="trace_tasks", solution_str=response, ground_truth=as_json(inst), extra_info=extra_info
    )
    _check(result, reference(response, inst))


def test_every_row_has_the_same_keys() -> None:
    # verl stacks reward_extra_info per key: a key missing from one row breaks the batch.
    keysets = {tuple(verl.compute_score("d", r, as_json(i))) for r, i in pairs()}
    assert len(keysets) == 1
    (keys,) = keysets
    assert keys[0] == "score" and "overall" in keys and "annotation_parse_ok" in keys
    assert not any(k.startswith("annotation_assigned") for k in keys)


def test_batch_manager_call_with_reward_kwargs() -> None:
    rows = pairs()
    result = verl.compute_score_batch(
        data_sources=np.array(["trace_tasks"] * len(rows), dtype=object),
        solution_strs=[r for r, _ in rows],
        ground_truths=[as_json(i) for _, i in rows],
        extra_infos=np.array([{"index": n} for n in range(len(rows))], dtype=object),
        format_weight=0.2,
        trace_annotation_reward_formula="additive",
    )
    assert len(result) == len(rows)
    for got, (response, inst) in zip(result, rows, strict=False):
        _check(got, reference(response, inst, format_weight=0.2, trace_annotation_reward_formula="additive"))


def test_extra_info_sets_row_options_and_image_size() -> None:
    inst = {k: v for k, v in INSTANCES[2].items() if k != "image_size"}  # a point task
    response = RESPONSES[2]
    extra = {"image_size": [64, 48], "trace_reward_mode": "answer"}
    got = verl.compute_score("d", response, inst, extra_info=extra, trace_reward_mode="answer_and_annotation")
    _check(got, reference(response, inst, trace_reward_mode="answer", extra_info=extra))
    assert got["trace_reward_mode_answer"] == 1.0
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
    _check(got, reference(RESPONSES[0], inst))
    assert got["annotation_reward"] > 0.9


def test_unknown_verl_kwargs_are_ignored() -> None:
    got = verl.compute_score("d", RESPONSES[0], INSTANCES[0], reward_router_address=None, reward_model_tokenizer=None)
    _check(got, reference(RESPONSES[0], INSTANCES[0]))


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
def test_malformed_ground_truth_raises_value_error(ground_truth, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        verl.compute_score("d", RESPONSES[0], ground_truth)


def test_invalid_option_raises_and_non_string_response_scores_zero() -> None:
    with pytest.raises(ValueError, match="format_weight"):
        verl.compute_score("d", RESPONSES[0], INSTANCES[0], format_weight=2.0)
    assert verl.compute_score("d", None, INSTANCES[0])["score"] == 0.0


def test_batch_length_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="ground_truths"):
        verl.compute_score_batch(["d"], ["a", "b"], [INSTANCES[0]], None)
