"""Ray Data's batch function and the ``uv run`` check, without starting Ray (the fast layer).

``score_dataset`` hands ``_score_pandas_batch`` to ``map_batches(batch_format="pandas")``;
here it is called the way Ray calls it, on a pandas batch. ``tests/integrations/test_ray.py``
runs the same through a real local Ray (the ``ray`` layer).
"""

from __future__ import annotations

import json

import pytest

from trace_tasks import score_trace_batch
from trace_tasks.integrations._common import stable_keys
from trace_tasks.integrations.ray import UV_RUN_ENV, uv_run_problem

from .helpers import pairs

FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size")
MODES = ("answer", "answer_and_annotation", "answer_only", "annotation")


def test_each_rows_own_options_win_as_in_score_trace_batch() -> None:
    pd = pytest.importorskip("pandas")
    from trace_tasks.integrations.ray import _score_pandas_batch

    items, records = [], []
    for n, (response, inst) in enumerate(pairs()):
        item = {"response": response, **{k: inst.get(k) for k in FIELDS}, "trace_reward_mode": MODES[n % 4]}
        if n % 3 == 0:
            item["format_weight"] = 0.25
        if n % 5 == 0:
            item["extra_info"] = {"image_size": [64, 48]}
        items.append(item)
        records.append(
            {
                "response": response,
                **{k: json.dumps(inst.get(k)) for k in FIELDS},
                "trace_reward_mode": item["trace_reward_mode"],
                "format_weight": item.get("format_weight", float("nan")),  # pandas' null for a float column
                "extra_info": item.get("extra_info"),
            }
        )
    out = _score_pandas_batch(
        pd.DataFrame(records),
        response_column="response",
        instance_columns=FIELDS,
        options={"format_weight": 0.1},
        prefix="",
        error_column="error",
    ).to_pylist()
    expected = score_trace_batch(items, format_weight=0.1)
    keys = stable_keys()
    assert [{k: row[k] for k in keys} for row in out] == [{k: want[k] for k in keys} for want in expected]
    assert all(row["error"] is None for row in out)
    assert {row["trace_reward_mode_answer"] for row in out} == {0.0, 1.0}


def test_a_rows_invalid_option_is_its_error() -> None:
    pd = pytest.importorskip("pandas")
    from trace_tasks.integrations.ray import _score_pandas_batch

    (response, inst) = pairs()[0]
    batch = pd.DataFrame(
        [{"response": response, "instance": json.dumps(inst), "trace_reward_mode": mode} for mode in ("answer", "bogus")]
    )
    out = _score_pandas_batch(
        batch, response_column="response", instance_columns="instance", options={}, prefix="", error_column="error"
    ).to_pylist()
    assert out[0]["error"] is None and "'bogus'" in out[1]["error"] and out[1]["overall"] == 0.0
    assert out[1]["error"] == score_trace_batch([{"response": response, **inst, "trace_reward_mode": "bogus"}])[0]["error"]


def test_uv_run_is_refused_in_one_line() -> None:
    problem = uv_run_problem(environ={}, cmdline=["/usr/bin/uv", "run", "python", "train.py"])
    assert problem is not None and "\n" not in problem and f"{UV_RUN_ENV}=0" in problem and f"{UV_RUN_ENV}=1" in problem
    assert uv_run_problem(environ={UV_RUN_ENV: "1"}, cmdline=["uv", "run", "x"]) is None  # the user decided
    assert uv_run_problem(environ={UV_RUN_ENV: "0"}, cmdline=["uv", "run", "x"]) is None
    assert uv_run_problem(environ={}, cmdline=["python", "train.py"]) is None
    assert uv_run_problem(environ={}, cmdline=["uvx", "run"]) is None
