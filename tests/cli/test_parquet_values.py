"""Every Parquet type reaches a JSON output faithfully, or is an error row naming its column (issue 37, item 3).

A Parquet ``id``, ``--keep`` or ``--group-by`` column of timestamps, dates,
durations, decimals or bytes used to end the run in ``TypeError: Object of
type datetime is not JSON serializable`` (exit 1, no output). The spellings
are those of ``docs/cli.md`` ("Parquet values").
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, read_jsonl, run_cli
from trace_tasks.runs._parquet_values import UnsupportedCell, json_cells, json_value
from trace_tasks.runs._shards import JSON_FIELDS, parquet_line

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS: list[dict[str, Any]] = read_jsonl(COMBINED)[:3]
WHEN = datetime.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc)
KEY = uuid.UUID("12345678-1234-5678-1234-567812345678")

#: column -> (Arrow type, the three cells, their JSON spellings)
COLUMNS: dict[str, tuple[Any, list[Any], list[Any]]] = {
    "ts": (pa.timestamp("us", tz="UTC"), [WHEN] * 3, ["2024-05-01T12:30:15.250000+00:00"] * 3),
    "ts_ns": (pa.timestamp("ns"), [1_000_000_001] * 3, ["1970-01-01T00:00:01.000000001"] * 3),
    "day": (pa.date32(), [datetime.date(2024, 5, 1), datetime.date(2024, 5, 2), None], ["2024-05-01", "2024-05-02", None]),
    "clock": (pa.time64("us"), [datetime.time(1, 2, 3, 500000)] * 3, ["01:02:03.500000"] * 3),
    "took": (pa.duration("ms"), [datetime.timedelta(seconds=1.5)] * 3, [1.5] * 3),
    "price": (pa.decimal128(6, 3), [decimal.Decimal("12.340")] * 3, ["12.340"] * 3),
    "blob": (pa.binary(), [b"\x00\xff", b"", b"hi"], ["AP8=", "", "aGk="]),
    "key": (pa.uuid(), [KEY.bytes] * 3, [str(KEY)] * 3),
    "pairs": (pa.map_(pa.string(), pa.int64()), [[("a", 1)]] * 3, [[["a", 1]]] * 3),
    "nested": (
        pa.struct([("at", pa.date32()), ("raw", pa.list_(pa.binary()))]),
        [{"at": datetime.date(2024, 1, 2), "raw": [b"x"]}] * 3,
        [{"at": "2024-01-02", "raw": ["eA=="]}] * 3,
    ),
}


def _parquet(path: Path, id_type: Any = None, ids: list[Any] | None = None) -> Path:
    columns: dict[str, Any] = {
        key: pa.array([json.dumps(row[key]) if key in JSON_FIELDS else row[key] for row in ROWS])
        for key in ROWS[0]
        if key != "id"
    }
    columns["id"] = pa.array(ids or [row["id"] for row in ROWS], type=id_type)
    for name, (kind, cells, _) in COLUMNS.items():
        columns[name] = pa.array(cells, type=kind)
    pq.write_table(pa.table(columns), path)
    return path


def test_kept_columns_of_every_type_are_written_as_documented(tmp_path: Path) -> None:
    path, out = _parquet(tmp_path / "in.parquet"), tmp_path / "out.jsonl"
    proc = run_cli("score", str(path), "-o", str(out), "-q", "--keep", ",".join(COLUMNS))
    assert proc.returncode == 0, proc.stderr.decode()
    rows = read_jsonl(out)
    for name, (_, _, spelled) in COLUMNS.items():
        assert [row["extra"][name] for row in rows] == spelled, name


@pytest.mark.parametrize("column", ["ts", "day", "took", "price", "blob"])
def test_group_by_a_column_of_any_type(tmp_path: Path, column: str) -> None:
    path, out, summary = _parquet(tmp_path / "in.parquet"), tmp_path / "out.jsonl", tmp_path / "summary.json"
    others = ",".join(name for name in COLUMNS if name != column)  # kept, so not taken for unknown instance fields
    proc = run_cli(
        "score", str(path), "-o", str(out), "-q", "--keep", others, "--group-by", column, "--summary-json", str(summary)
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode()
    by_group = json.loads(summary.read_text())["by_group"]
    names = {value if isinstance(value, str) else json.dumps(value) for value in COLUMNS[column][2]}
    assert set(by_group) == names, by_group  # the documented spellings, as --keep writes them


@pytest.mark.parametrize(
    ("kind", "ids", "written"),
    [
        (pa.timestamp("us", tz="UTC"), [WHEN, WHEN, None], ["2024-05-01T12:30:15.250000+00:00"] * 2 + [None]),
        (pa.decimal128(4, 1), [decimal.Decimal("1.5"), decimal.Decimal("2.0"), decimal.Decimal("-3.0")], ["1.5", "2.0", "-3.0"]),
        (pa.binary(), [b"a", b"b", b"c"], ["YQ==", "Yg==", "Yw=="]),
        (pa.duration("s"), [datetime.timedelta(seconds=n) for n in (1, 2, 3)], [1.0, 2.0, 3.0]),
    ],
)
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_an_id_of_any_type_reaches_both_output_formats(
    tmp_path: Path, kind: Any, ids: list[Any], written: list[Any], suffix: str
) -> None:
    path, out = _parquet(tmp_path / "in.parquet", kind, ids), tmp_path / f"out{suffix}"
    table = pq.read_table(path).drop_columns(list(COLUMNS))  # the instance and its id only
    pq.write_table(table, path)
    proc = run_cli("score", str(path), "-o", str(out), "-q")
    # A number is no instance id (validation says so on each row, exit 1): written all the same, never a crash.
    assert proc.returncode == (1 if isinstance(written[0], float) else 0), proc.stderr.decode()
    if suffix == ".jsonl":
        assert [row["id"] for row in read_jsonl(out)] == written
    else:  # a Parquet output's id column is text: a non-string id as its JSON
        assert pq.read_table(out).column("id").to_pylist() == [
            None if value is None else value if isinstance(value, str) else json.dumps(value) for value in written
        ]


class _Opaque:
    """A cell Python holds that JSON has no spelling for (an extension type's own scalar)."""


def test_a_cell_json_cannot_spell_is_an_error_row_naming_its_column() -> None:
    line = parquet_line(7, {"id": "a", "response": "x", "odd": [1, {"deep": _Opaque()}]})
    assert line.value is None
    assert line.error == (
        "line 7: column 'odd' holds a value of type _Opaque that a JSON line cannot hold (see 'Parquet values' in docs/cli.md)"
    )
    with pytest.raises(UnsupportedCell):
        json_value(object())
    assert json_cells({"a": 1, "b": [b"\x01"]}) == {"a": 1, "b": ["AQ=="]}


def _parquet_of(rows: list[dict[str, Any]], path: Path) -> Path:
    columns = {key: [json.dumps(row[key]) if key in JSON_FIELDS else row[key] for row in rows] for key in rows[0]}
    pq.write_table(pa.table(columns), path, compression="zstd")
    return path


def test_a_row_past_max_line_bytes_is_an_error_row_as_a_json_line_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A 100 MB cell was read and scored (a JSON line of it is an error row), and 4,096 rows were read at once.
    from trace_tasks import limits
    from trace_tasks.runs._shards import ParquetLines

    rows = [dict(row) for row in ROWS]
    rows[1]["response"] = "y" * 5000
    path = _parquet_of(rows, tmp_path / "rows.parquet")
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 4096)
    lines = list(ParquetLines(str(path)))
    assert [line.number for line in lines] == [1, 2, 3]
    assert lines[0].error is None and lines[2].error is None
    assert lines[1].error is not None and "past MAX_LINE_BYTES = 4,096" in lines[1].error


def test_rows_are_read_a_few_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_tasks.runs import _shards

    path = _parquet_of([dict(ROWS[n % 3]) for n in range(300)], tmp_path / "rows.parquet")
    asked: list[int] = []
    original = pq.ParquetFile.iter_batches

    def recorded(self: Any, batch_size: int = 65536, **kwargs: Any) -> Any:
        asked.append(batch_size)
        return original(self, batch_size=batch_size, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recorded)
    lines = list(_shards.ParquetLines(str(path)))
    assert len(lines) == 300 and all(line.error is None for line in lines)
    assert asked == [_shards.PARQUET_READ_ROWS]
