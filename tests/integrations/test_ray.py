"""Ray Data scoring and the ``--engine ray`` backend, on the session's local Ray (``ray_session`` in tests/conftest.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import ModuleType

import pytest

from trace_tasks import score_trace_batch
from trace_tasks.integrations._common import stable_keys, to_plain
from trace_tasks.integrations.ray import score_dataset, score_rows_with_ray  # imports Ray only when called

from .helpers import INSTANCES, RESPONSES, pairs

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.usefixtures("ray_session")]


@pytest.fixture
def ray(ray_session: ModuleType) -> ModuleType:
    """The ``ray`` module, running; imported by the fixture, so collecting this file (or deselecting it) stays cheap."""
    return ray_session


REPEAT = 60  # 55 (response, instance) pairs x 60 = 3,300 rows


def _rows() -> list[tuple[str, dict]]:
    return pairs() * REPEAT


def _batch_items(rows: list[tuple[str, dict]]) -> list[dict]:
    fields = ("answer_gt", "annotation_gt", "reward_contract", "image_size")
    return [{"response": r, **{k: i.get(k) for k in fields}} for r, i in rows]


def test_score_dataset_equals_score_trace_batch(ray: ModuleType) -> None:
    rows = _rows()
    records = [
        {
            "id": n,
            "response": r,
            "answer_gt": json.dumps(i["answer_gt"]),
            "annotation_gt": json.dumps(i["annotation_gt"]),
            "reward_contract": json.dumps(i["reward_contract"]),
            "image_size": json.dumps(i.get("image_size")),
        }
        for n, (r, i) in enumerate(rows)
    ]
    ds = ray.data.from_items(records, override_num_blocks=2)
    scored = score_dataset(
        ds, instance_columns=("answer_gt", "annotation_gt", "reward_contract", "image_size"), format_weight=0.1
    )
    out = sorted(scored.take_all(), key=lambda row: row["id"])
    expected = score_trace_batch(_batch_items(rows), format_weight=0.1)
    assert len(out) == len(rows)
    for got, want in zip(out, expected, strict=True):
        assert got["error"] is None
        assert {k: got[k] for k in stable_keys()} == {k: want[k] for k in stable_keys()}
    assert sum(row["overall"] > 0 for row in out) >= REPEAT * 4  # real rewards, not a column of zeros


def test_whole_instance_column_with_native_nesting_and_a_bad_row(ray: ModuleType) -> None:
    # One column holding instance structs (nested Arrow structs and lists).
    inst = INSTANCES[0]
    records = [{"response": RESPONSES[0], "instance": inst} for _ in range(50)]
    ds = ray.data.from_items(records)
    out = score_dataset(ds, instance_columns="instance", prefix="trace_").take_all()
    want = score_trace_batch([{"response": RESPONSES[0], **inst}])[0]
    assert all(row["trace_overall"] == want["overall"] and row["trace_error"] is None for row in out)

    bad = ray.data.from_items([{"response": "7", "instance": json.dumps({"answer_gt": {"type": "integer", "value": 7}})}])
    (row,) = score_dataset(bad, instance_columns="instance").take_all()
    assert row["overall"] == 0.0 and "lacks" in row["error"]


def test_score_rows_with_ray_equals_score_trace_batch(ray: ModuleType) -> None:
    items = _batch_items(_rows())
    items[7] = {**items[7], "answer_weight": -1}  # one caller mistake: isolated as an error entry
    got = score_rows_with_ray(items, chunksize=700, trace_reward_mode="answer_and_annotation")
    assert got == score_trace_batch(items, trace_reward_mode="answer_and_annotation")
    assert "error" in got[7] and "answer_weight" in got[7]["error"]
    assert ray.is_initialized()  # a Ray it did not start is left running


def test_invalid_options_raise_before_scoring(ray: ModuleType) -> None:
    with pytest.raises(ValueError, match="format_weight"):
        score_rows_with_ray([], format_weight=5)
    with pytest.raises(ValueError, match="unknown scorer option"):
        score_dataset(ray.data.from_items([{"response": ""}]), mode="answer")


MODES = ("answer", "answer_and_annotation", "answer_only", "annotation")


def test_score_dataset_honours_each_rows_own_options(ray: ModuleType) -> None:
    # A mixed-mode dataset: each row's trace_reward_mode (and a few format weights) win over the call's
    # options, row by row exactly as score_trace_batch's items do; a null cell means "not set".
    rows = _rows()[:1100]
    items = []
    for n, (r, i) in enumerate(rows):
        item = {"response": r, **{k: i.get(k) for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size")}}
        item["trace_reward_mode"] = MODES[n % 4]
        if n % 3 == 0:
            item["format_weight"] = 0.25
        items.append(item)
    records = [
        {
            "id": n,
            "response": item["response"],
            **{k: json.dumps(item[k]) for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size")},
            "trace_reward_mode": item["trace_reward_mode"],
            "format_weight": item.get("format_weight"),  # None where the item has no key
        }
        for n, item in enumerate(items)
    ]
    ds = ray.data.from_items(records, override_num_blocks=3)
    out = sorted(
        score_dataset(
            ds, instance_columns=("answer_gt", "annotation_gt", "reward_contract", "image_size"), format_weight=0.1
        ).take_all(),
        key=lambda row: row["id"],
    )
    expected = score_trace_batch(items, format_weight=0.1)
    keys = stable_keys()
    differ = sum({k: got[k] for k in keys} != {k: want[k] for k in keys} for got, want in zip(out, expected, strict=True))
    assert differ == 0
    assert {row["trace_reward_mode_answer"] for row in out} == {0.0, 1.0}  # both modes were really used
    assert {row["format_weight"] for row in out} == {0.1, 0.25}


def test_error_column_has_one_null_kind(ray: ModuleType) -> None:
    # Blocks where every row scored (all null) next to blocks with an error: one string column, None for "no error".
    good = {"response": RESPONSES[0], "instance": json.dumps(INSTANCES[0])}
    bad = {"response": "7", "instance": json.dumps({"answer_gt": {"type": "integer", "value": 7}})}
    records = [{"id": n, **(bad if n == 130 else good)} for n in range(200)]
    scored = score_dataset(ray.data.from_items(records, override_num_blocks=4), instance_columns="instance", batch_size=50)
    rows = scored.take_all()
    assert {type(row["error"]) for row in rows} == {type(None), str}
    assert sum(row["error"] is not None for row in rows) == 1
    import pyarrow

    schema = scored.schema()
    assert dict(zip(schema.names, schema.types, strict=True))["error"] == pyarrow.string()
    frame = scored.to_pandas()  # a string dtype: its one null kind on every row that scored
    nulls = frame["error"][frame["error"].isna()]
    assert len(nulls) == 199 and len({type(v) for v in nulls}) == 1
    assert frame["error"].notna().sum() == 1


def test_scored_dataset_keeps_the_input_order(ray: ModuleType, tmp_path: Path) -> None:
    # One block is slow, so a run in completion order (Ray's default) would hand the blocks after it on first.
    import pandas
    import pyarrow.parquet

    def slow_third_block(batch: dict) -> dict:
        if 1000 in batch["id"]:
            time.sleep(2)
        return batch

    records = [
        {"id": n, "response": RESPONSES[n % len(RESPONSES)], "instance": json.dumps(INSTANCES[n % len(INSTANCES)])}
        for n in range(5000)
    ]
    context = ray.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = False  # the dataset is created under Ray's default
    try:
        ds = ray.data.from_items(records, override_num_blocks=10).map_batches(slow_third_block, batch_size=None)
    finally:
        context.execution_options.preserve_order = before
    scored = score_dataset(ds, instance_columns="instance")
    ids = list(range(5000))
    assert [row["id"] for row in scored.take_all()] == ids
    scored.write_parquet(str(tmp_path))
    assert pyarrow.parquet.read_table(tmp_path).column("id").to_pylist() == ids
    assert pandas.read_parquet(tmp_path)["id"].tolist() == ids
    assert ds.context.execution_options.preserve_order is False  # the flag is on the result's own context
    assert score_dataset(ds, instance_columns="instance", preserve_order=False).context is ds.context


def test_parquet_reads_back_in_pandas_and_pyarrow(ray: ModuleType, tmp_path: Path) -> None:
    # A struct instance column and a list column, one row that cannot be scored: both readers get every row back.
    import pandas
    import pyarrow.parquet

    inst = INSTANCES[0]
    broken = {**inst, "answer_gt": {"type": "option_letter", "value": 7}}  # same Arrow type, a contract that disagrees
    records = [
        {"id": n, "response": RESPONSES[n % 3], "instance": broken if n == 150 else inst, "tags": [n, n + 1]} for n in range(300)
    ]
    scored = score_dataset(ray.data.from_items(records, override_num_blocks=3), instance_columns="instance")
    rows = scored.take_all()
    assert [row["id"] for row in rows] == list(range(300))
    assert [row["error"] is None for row in rows] == [n != 150 for n in range(300)]
    assert "option_letter" in rows[150]["error"]
    scored.write_parquet(str(tmp_path))

    assert pyarrow.parquet.read_table(tmp_path).to_pylist() == rows  # None where a row scored

    frame = pandas.read_parquet(tmp_path)
    assert len(frame) == 300
    assert frame["id"].tolist() == [row["id"] for row in rows]
    assert [to_plain(value) for value in frame["instance"]] == [row["instance"] for row in rows]
    assert [to_plain(value) for value in frame["tags"]] == [row["tags"] for row in rows]
    for key in stable_keys():
        assert frame[key].tolist() == [row[key] for row in rows], key
    for errors in (frame["error"], scored.to_pandas()["error"]):  # pandas' own missing value where a row scored
        assert errors.isna().tolist() == [row["error"] is None for row in rows]
        assert errors[150] == rows[150]["error"]
