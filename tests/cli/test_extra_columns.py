"""``score --keep COLUMN`` and ``--group-by COLUMN``: a user's columns carried to the rows, and a summary per value.

Kept columns go under one ``"extra"`` key at the end of a row, so they never
clash with a score key and rows without ``--keep`` are byte for byte as before.
The per-group summary is checked against the output rows themselves.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, read_jsonl, run_cli, two_pool_chunks, write_lines
from trace_tasks.runs._summary import Summary


def _tagged(tmp_path: Path) -> Path:
    rows = []
    for n, line in enumerate(COMBINED.read_text().splitlines()):
        row = json.loads(line)
        row["kind"] = ["short", "long"][n % 2]
        row["sample"] = n % 3
        rows.append(row)
    return write_lines(tmp_path / "tagged.jsonl", rows)


def test_without_keep_rows_are_unchanged(tmp_path: Path) -> None:
    result = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q")
    assert result.returncode == 0
    assert all("extra" not in row for row in read_jsonl(result.stdout))  # responses.jsonl has 'quality': not kept
    tagged = run_cli("score", str(_tagged(tmp_path)), "-q")
    assert tagged.returncode == 0 and tagged.stdout == run_cli("score", str(COMBINED), "-q").stdout  # ignored ...
    assert tagged.stderr.decode().count("warning: ignored 2 input columns that are no instance field: kind, sample") == 1


def test_keep_carries_columns_under_extra_and_scores_do_not_change(tmp_path: Path) -> None:
    plain = run_cli("score", str(COMBINED), "-q").stdout.splitlines()
    result = run_cli("score", str(_tagged(tmp_path)), "-q", "--keep", "kind,sample")
    assert result.returncode == 0, result.stderr.decode()
    rows = result.stdout.splitlines()
    assert len(rows) == len(plain)
    for n, (raw, before) in enumerate(zip(rows, plain, strict=True)):
        row = json.loads(raw)
        assert list(row)[-1] == "extra" and row["extra"] == {"kind": ["short", "long"][n % 2], "sample": n % 3}
        del row["extra"]
        assert json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode() == before


def test_missing_columns_are_null_and_error_rows_keep_theirs(tmp_path: Path) -> None:
    good = json.loads(COMBINED.read_text().splitlines()[0])
    rows: list[Any] = [{**good, "kind": "x"}, good, {**good, "kind": "y", "response": 3}, "not json"]
    result = run_cli("score", str(write_lines(tmp_path / "in.jsonl", rows)), "-q", "--keep", "kind")
    out = read_jsonl(result.stdout)
    assert [row["extra"] for row in out] == [{"kind": "x"}, {"kind": None}, {"kind": "y"}, {"kind": None}]
    assert "error" in out[2] and "error" in out[3]


def test_keeping_an_instance_field_leaves_it_in_the_instance(tmp_path: Path) -> None:
    plain = read_jsonl(run_cli("score", str(COMBINED), "-q").stdout)
    kept = read_jsonl(run_cli("score", str(COMBINED), "-q", "--keep", "metadata").stdout)
    first = json.loads(COMBINED.read_text().splitlines()[0])
    assert kept[0]["extra"] == {"metadata": first["metadata"]}
    assert [{k: v for k, v in row.items() if k != "extra"} for row in kept] == plain


def test_group_by_summarizes_each_value(tmp_path: Path) -> None:
    summary_path = tmp_path / "summary.json"
    result = run_cli(
        "score", str(INSTANCES), "--responses", str(RESPONSES), "--group-by", "quality", "--summary-json", str(summary_path)
    )
    assert result.returncode == 0
    rows = read_jsonl(result.stdout)
    summary = json.loads(summary_path.read_text())
    assert summary["group_by"] == "quality"
    expected: dict[str, list[float]] = {}
    for row in rows:
        expected.setdefault(row["extra"]["quality"], []).append(row["overall"])
    assert set(summary["by_group"]) == set(expected)
    for name, values in expected.items():
        assert summary["by_group"][name]["count"] == len(values)
        assert summary["by_group"][name]["mean_overall"] == pytest.approx(sum(values) / len(values))
    table = result.stderr.decode()
    assert "\nquality " in table and all(f"\n{name} " in table for name in expected)


def test_group_by_values_that_are_not_strings(tmp_path: Path) -> None:
    summary_path = tmp_path / "s.json"
    path = _tagged(tmp_path)
    assert (
        run_cli(
            "score",
            str(path),
            "-q",
            "--keep",
            "kind",
            "--group-by",
            "sample",
            "--summary-json",
            str(summary_path),
            "-o",
            str(tmp_path / "o.jsonl"),
        ).returncode
        == 0
    )
    by_group = json.loads(summary_path.read_text())["by_group"]
    assert sorted(by_group) == ["0", "1", "2"] and sum(g["count"] for g in by_group.values()) == 108


def test_refusals(tmp_path: Path) -> None:
    # a Parquet output keeps columns too (tests/runs/test_real_files.py); a column on no line is an error naming it
    parquet = run_cli("score", str(COMBINED), "-q", "--keep", "kind", "-o", str(tmp_path / "o.parquet"))
    assert parquet.returncode == 1 and b"error: --keep kind: found on no line" in parquet.stderr
    ray = run_cli("score", str(COMBINED), "-q", "--group-by", "kind", "--engine", "ray")
    assert ray.returncode == 2 and b"--engine ray" in ray.stderr


def test_summary_groups_merge_exactly() -> None:
    whole, first, second = Summary(), Summary(), Summary()
    for summary in (whole, first, second):
        summary.group_by = "kind"
    rows = [("a", 1.0), ("b", 0.5), ("a", 0.25), (None, 0.0)]
    for n, (kind, overall) in enumerate(rows):
        for summary in (whole, first if n < 2 else second):
            summary.add_scores("bbox", {"overall": overall})
            summary.add_group(kind, {"overall": overall})
    merged = pickle.loads(pickle.dumps(first))
    merged.merge(pickle.loads(pickle.dumps(second)))
    assert merged.to_dict() == whole.to_dict()
    assert whole.to_dict()["by_group"]["a"]["mean_overall"] == pytest.approx(0.625)
    assert set(whole.to_dict()["by_group"]) == {"a", "b", "null"}


@pytest.mark.slow
def test_a_process_pool_keeps_the_same_columns(tmp_path: Path) -> None:
    path = two_pool_chunks(tmp_path / "many.jsonl", read_jsonl(_tagged(tmp_path)))
    one = run_cli("score", str(path), "-q", "--keep", "kind", "--keep", "sample")
    two = run_cli("score", str(path), "-q", "--keep", "kind", "--keep", "sample", "--workers", "2")
    assert one.returncode == two.returncode == 0 and one.stdout == two.stdout


def test_report_group_by_equals_the_score_summary(tmp_path: Path) -> None:
    import re

    scores, summary_path, html_path = tmp_path / "s.jsonl", tmp_path / "summary.json", tmp_path / "r.html"
    args = ("score", str(INSTANCES), "--responses", str(RESPONSES), "-q", "-o", str(scores))
    assert run_cli(*args, "--group-by", "quality", "--summary-json", str(summary_path)).returncode == 0
    by_group = json.loads(summary_path.read_text())["by_group"]
    assert run_cli("report", str(scores), "--group-by", "quality", "-o", str(html_path)).returncode == 0
    html = html_path.read_text(encoding="utf-8")
    section = html[html.index('id="groups"') : html.index('id="histograms"')]
    for name, totals in by_group.items():
        row = re.search(rf'<tr data-group="{name}"><td>{name}</td>(.*?)</tr>', section)
        assert row is not None
        # The means carry their standard errors (issue 38): "0.589 ± 0.041", the summary's mean_overall_stderr.
        cells = re.findall(r'<td class="n(?: est)?"[^>]*>([^<]+)</td>', row.group(1))
        mean = f"{totals['mean_overall']:.3f}"
        assert cells[:2] == [str(totals["count"]), f"{mean} ± {totals['mean_overall_stderr']:.3f}"]
    # a column the scores do not keep is said so
    assert run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q", "-o", str(scores)).returncode == 0
    assert run_cli("report", str(scores), "--group-by", "quality", "-o", str(html_path)).returncode == 0
    assert "No scored row keeps quality under 'extra'" in html_path.read_text(encoding="utf-8")
