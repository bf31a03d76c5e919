"""Ray Data's batch function and the ``uv run`` check, without starting Ray (the fast layer).

``score_dataset`` hands ``_score_arrow_batch`` to ``map_batches(batch_format="pyarrow")``;
here it is called the way Ray calls it, on an Arrow batch. ``tests/integrations/test_ray.py``
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
    pa = pytest.importorskip("pyarrow")
    from trace_tasks.integrations.ray import _score_arrow_batch

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
                "format_weight": item.get("format_weight"),  # Arrow's null where the item has no key
                "extra_info": item.get("extra_info"),
            }
        )
    out = _score_arrow_batch(
        pa.Table.from_pylist(records),
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
    pa = pytest.importorskip("pyarrow")
    from trace_tasks.integrations.ray import _score_arrow_batch

    (response, inst) = pairs()[0]
    batch = pa.Table.from_pylist(
        [{"response": response, "instance": json.dumps(inst), "trace_reward_mode": mode} for mode in ("answer", "bogus")]
    )
    out = _score_arrow_batch(
        batch, response_column="response", instance_columns="instance", options={}, prefix="", error_column="error"
    ).to_pylist()
    assert out[0]["error"] is None and "'bogus'" in out[1]["error"] and out[1]["overall"] == 0.0
    assert out[1]["error"] == score_trace_batch([{"response": response, **inst, "trace_reward_mode": "bogus"}])[0]["error"]


def test_the_batch_keeps_its_columns_and_rows_and_drops_pandas_metadata() -> None:
    # A batch converted from pandas carries pandas metadata naming its dtypes; pandas.read_parquet cannot
    # parse the "struct<...>[pyarrow]" named for an Arrow-backed struct column, so the output drops that key.
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    from trace_tasks.integrations.ray import _score_arrow_batch

    (response, inst) = pairs()[0]
    rows = [{"id": n, "response": "" if n == 1 else response, "instance": inst} for n in (3, 1, 2)]
    arrow_backed = pa.Table.from_pylist(rows).to_pandas(types_mapper=pd.ArrowDtype)  # as a pandas stage holds it
    batch = pa.Table.from_pandas(arrow_backed, preserve_index=False)
    batch = batch.replace_schema_metadata({**batch.schema.metadata, b"origin": b"kept"})
    assert b"struct<" in batch.schema.metadata[b"pandas"]
    out = _score_arrow_batch(
        batch, response_column="response", instance_columns="instance", options={}, prefix="t_", error_column="error"
    )
    assert out.schema.metadata == {b"origin": b"kept"}
    assert out.select(batch.column_names).equals(batch)  # the same columns, rows and order
    assert out.column("t_error").to_pylist() == [None, None, None] and out.schema.field("t_error").type == pa.string()


def test_uv_run_is_refused_in_one_line() -> None:
    problem = uv_run_problem(environ={}, cmdline=["/usr/bin/uv", "run", "python", "train.py"])
    assert problem is not None and "\n" not in problem and f"{UV_RUN_ENV}=0" in problem and f"{UV_RUN_ENV}=1" in problem
    assert uv_run_problem(environ={UV_RUN_ENV: "1"}, cmdline=["uv", "run", "x"]) is None  # the user decided
    assert uv_run_problem(environ={UV_RUN_ENV: "0"}, cmdline=["uv", "run", "x"]) is None
    assert uv_run_problem(environ={}, cmdline=["python", "train.py"]) is None
    assert uv_run_problem(environ={}, cmdline=["uvx", "run"]) is None
