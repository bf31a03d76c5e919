"""Real rollout files: a trainer's Parquet dump with extra columns scores into Parquet; a refused run leaves nothing.

A trainer dump always has columns that are no instance field (``step``,
``uid``, ``data_source``): they are ignored with one warning, or kept with
``--keep`` (in a Parquet output as the typed struct column ``extra``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, run_cli
from trace_tasks.runs import RunSettings, UsageError, score_files


def _pa() -> Any:
    return pytest.importorskip("pyarrow", reason="the Parquet layer needs pyarrow (the parquet extra)")


def _dump(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The example combined rows as a trainer's dump: instance fields as JSON text, plus step, uid and data_source."""
    pa = _pa()
    import pyarrow.parquet as pq

    rows = []
    for n, line in enumerate(COMBINED.read_text().splitlines()):
        row = json.loads(line)
        rows.append({
            "id": row["id"], "response": row["response"],
            "answer_gt": json.dumps(row["answer_gt"]), "annotation_gt": json.dumps(row["annotation_gt"]),
            "reward_contract": json.dumps(row["reward_contract"]),
            "step": 100 + n // 20, "uid": f"u{n}", "data_source": ["gui", "chart"][n % 2],
        })  # fmt: skip
    path = tmp_path / "dump.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path, rows


def test_a_trainer_dump_scores_into_parquet_with_typed_kept_columns(tmp_path: Path) -> None:
    pa = _pa()
    import pyarrow.parquet as pq

    dump, rows = _dump(tmp_path)
    out = tmp_path / "scores.parquet"
    result = run_cli("score", str(dump), "-q", "-o", str(out), "--keep", "step,uid", "--group-by", "data_source")
    assert result.returncode == 0, result.stderr.decode()
    table = pq.read_table(out)
    assert table.schema.field("extra").type == pa.struct(
        [pa.field("step", pa.int64()), pa.field("uid", pa.string()), pa.field("data_source", pa.string())]
    )
    extra = table.column("extra").to_pylist()
    assert extra == [{"step": r["step"], "uid": r["uid"], "data_source": r["data_source"]} for r in rows]
    # the scores are those of the JSON Lines output of the same rows
    jsonl = run_cli("score", str(dump), "-q", "--keep", "step,uid", "--group-by", "data_source")
    expected = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert table.column("overall").to_pylist() == [row["overall"] for row in expected]
    assert [row["extra"] for row in expected] == extra


def test_extra_columns_without_keep_are_ignored_with_one_warning(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    dump, rows = _dump(tmp_path)
    out = tmp_path / "scores.parquet"
    result = run_cli("score", str(dump), "-o", str(out))
    assert result.returncode == 0, result.stderr.decode()
    stderr = result.stderr.decode()
    assert stderr.count("warning: ignored") == 1
    assert "ignored 3 input columns that are no instance field: data_source, step, uid" in stderr
    table = pq.read_table(out)
    assert "extra" not in table.schema.names and table.num_rows == len(rows)
    assert table.column("error").null_count == len(rows)  # every row scored


def test_a_kept_column_of_mixed_types_is_json_text(tmp_path: Path) -> None:
    pa = _pa()
    import pyarrow.parquet as pq

    lines = [json.loads(line) for line in COMBINED.read_text().splitlines()]
    rows = [{**lines[n % len(lines)], "tag": (n if n % 2 else f"t{n}"), "step": n} for n in range(6)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o.parquet"
    assert run_cli("score", str(path), "-q", "-o", str(out), "--keep", "tag,step").returncode == 0
    table = pq.read_table(out)
    assert table.schema.field("extra").type == pa.struct([pa.field("tag", pa.string()), pa.field("step", pa.int64())])
    assert [e["tag"] for e in table.column("extra").to_pylist()] == [json.dumps(r["tag"]) for r in rows]


def test_a_refused_sharded_run_leaves_no_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_tasks.runs import _local

    shards = tmp_path / "in"
    shards.mkdir()
    (shards / "a.jsonl").write_text(COMBINED.read_text())

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UsageError("refused after planning")

    monkeypatch.setattr(_local, "run", refuse)
    target = tmp_path / "new" / "scores"
    with pytest.raises(UsageError, match="refused after planning"):
        score_files(RunSettings(input=str(shards), output=f"{target}/", quiet=True))
    assert not target.exists() and not (tmp_path / "new").exists()
    # a directory that was there before stays
    target.mkdir(parents=True)
    with pytest.raises(UsageError):
        score_files(RunSettings(input=str(shards), output=f"{target}/", quiet=True))
    assert target.is_dir()


def test_a_value_that_does_not_fit_a_later_batch_is_null_and_counted() -> None:
    pa = _pa()
    from trace_tasks.runs._parquet_extra import ExtraColumns

    extra = ExtraColumns(pa, ("step",))
    first = extra.array([{"step": 1}, {"step": 2}, None])
    assert first.type == pa.struct([pa.field("step", pa.int64())]) and first.to_pylist()[:2] == [{"step": 1}, {"step": 2}]
    later = extra.array([{"step": "late"}, {"step": 3}])
    assert later.to_pylist() == [{"step": None}, {"step": 3}]
    assert extra.misfits == {"step": 1}
    assert extra.warnings() == [
        "warning: 1 value(s) of the kept column step did not fit its Parquet type int64 "
        "(set by the output's first batch of rows): written as null"
    ]
