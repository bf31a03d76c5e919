"""``--engine ray`` reads as the local engine does (issue 37, items 2 and 3): the pieces that need no running Ray.

A line past ``MAX_LINE_BYTES`` travels as its error, read past in bounded
memory, and a Parquet row refused when read (a cell JSON cannot spell) keeps
its error on the way to the scoring actors.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from trace_tasks import limits
from trace_tasks.runs._ray_engine import decoded_lines, read_shard

pa = pytest.importorskip("pyarrow", reason="the [ray] extra is part of the dev environment; skipped only without it")
pq = pytest.importorskip("pyarrow.parquet")


def test_a_line_past_the_bound_travels_as_its_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 16)
    shard = tmp_path / "a.jsonl"
    shard.write_bytes(b'{"n": 1}\n{"long": "' + b"x" * 100 + b'"}\n{"n": 3}\n')
    (block,) = read_shard(0, str(shard), "jsonl", None)
    assert max(len(cell) for cell in block.column("data").to_pylist()) < 120  # not the line: its error
    lines = list(decoded_lines(block, ["jsonl"]))
    assert [line.value for line in lines] == [{"n": 1}, None, {"n": 3}]
    assert lines[1].error == "line 2: the line is 112 bytes long, past MAX_LINE_BYTES = 16 (docs/limits.md): skipped unread"


def test_parquet_cells_of_any_type_travel_as_json_values(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    when = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
    pq.write_table(pa.table({"id": pa.array([when], type=pa.timestamp("s", tz="UTC")), "b": pa.array([b"\x01"])}), path)
    (block,) = read_shard(0, str(path), "parquet", None)
    (line,) = decoded_lines(block, ["parquet"])
    assert line.number == 1 and line.value == {"id": "2024-05-01T00:00:00+00:00", "b": "AQ=="} and line.error is None
