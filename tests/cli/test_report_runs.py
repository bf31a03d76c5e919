"""``trace-tasks report`` over several runs: checkpoint files side by side, or one file split by ``--step COLUMN``.

Every number on the page is checked against an independent computation from
the scores rows (``statistics.mean`` and ``statistics.stdev`` over the values
read straight from the JSON), and the curves against a planted trend.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import INSTANCES, RESPONSES, run_cli
from trace_tasks.cli.report._runs import Moments, labels_for

#: Each checkpoint raises every overall by this much over the one before.
TREND = 0.1


@pytest.fixture(scope="module")
def base_rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("runs") / "scores.jsonl"
    proc = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-o", str(out), "--quiet")
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return [json.loads(line) for line in out.read_text().splitlines()]


def _checkpoint(rows: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        row = dict(row)
        if "overall" in row:
            row["overall"] = min(max(row["overall"] - 0.3 + TREND * step, 0.0), 1.0)
        out.append(row)
    return out


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _expected(rows: list[dict[str, Any]], key: str, kind: str | None = None) -> tuple[float, float]:
    """Mean and standard error (sample sd / sqrt n) of a key over the scored rows (of one annotation type)."""
    values = [float(r[key]) for r in rows if "overall" in r and (kind is None or r.get(f"annotation_type_{kind}") == 1.0)]
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


def _runs_table(html: str) -> list[tuple[str, list[tuple[float, float]]]]:
    table = html.split('<table class="runs sortable">', 1)[1].split("</table>", 1)[0]
    out = []
    for label, cells in re.findall(r'<tr data-run="([^"]+)">(.*?)</tr>', table):
        found = re.findall(r'data-mean="([-\d.]+)" data-stderr="([\d.]*)"', cells)
        out.append((label, [(float(m), float(s)) for m, s in found]))
    return out


def test_moments_give_the_sample_standard_error() -> None:
    values = [0.0, 1.0, 1.0, 0.25, 0.5, 0.75, 1.0]
    moments = Moments()
    for v in values:
        moments.add(v)
    found = moments.estimate()
    assert found.mean == pytest.approx(statistics.mean(values))
    assert found.stderr == pytest.approx(statistics.stdev(values) / math.sqrt(len(values)))
    assert found.low == pytest.approx(found.mean - 1.96 * found.stderr)
    assert found.high == pytest.approx(found.mean + 1.96 * found.stderr)
    one = Moments()
    one.add(0.5)
    assert one.estimate().stderr is None  # no spread from one value


def test_labels_default_to_file_names_and_paths_when_names_clash() -> None:
    assert labels_for(["a/x.jsonl", "b/y.jsonl"], None) == ["x.jsonl", "y.jsonl"]
    assert labels_for(["a/x.jsonl", "b/x.jsonl"], None) == ["a/x.jsonl", "b/x.jsonl"]
    assert labels_for(["a/x.jsonl"], ["step 1"]) == ["step 1"]


def test_several_files_are_tabulated_with_their_means_and_standard_errors(
    base_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    checkpoints = [_checkpoint(base_rows, k) for k in range(4)]
    files = [str(_write(tmp_path / f"ckpt{k}.jsonl", rows)) for k, rows in enumerate(checkpoints)]
    out = tmp_path / "report.html"
    proc = run_cli("report", *files, "--label", "s0", "--label", "s1", "--label", "s2", "--label", "s3", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().endswith(", 4 runs\n")
    html = out.read_text(encoding="utf-8")
    table = _runs_table(html)
    assert [label for label, _ in table] == ["s0", "s1", "s2", "s3"]
    for (_, cells), rows in zip(table, checkpoints, strict=True):
        # columns: overall, answer, annotation, format, then the failure shares (wrong answer last)
        for (mean, stderr), key in zip(cells[:4], ("overall", "answer_reward", "annotation_reward", "format"), strict=True):
            want_mean, want_se = _expected(rows, key)
            assert mean == pytest.approx(want_mean, abs=1e-6) and stderr == pytest.approx(want_se, abs=1e-6)
        wrong = [1.0 if r["answer_reward"] == 0 else 0.0 for r in rows if "overall" in r]
        assert cells[-1][0] == pytest.approx(statistics.mean(wrong), abs=1e-6)
        assert cells[-1][1] == pytest.approx(statistics.stdev(wrong) / math.sqrt(len(wrong)), abs=1e-6)
    overall = [cells[0][0] for _, cells in table]
    assert overall == sorted(overall) and overall[-1] - overall[0] > 0.2  # the planted trend
    # the curves: per type and series, one dot a run, with the interval of the table
    bbox = html.split('<div class="curves" data-type="bbox">', 1)[1].split('<div class="curves"', 1)[0]
    curve = bbox.split('data-series="overall"', 1)[1].split("</figure>", 1)[0]
    dots = [(float(m), float(lo), float(hi)) for m, lo, hi in re.findall(
        r'data-mean="([-\d.]+)" data-low="([-\d.]+)" data-high="([-\d.]+)"', curve)]  # fmt: skip
    assert len(dots) == 4
    for (mean, low, high), rows in zip(dots, checkpoints, strict=True):
        want_mean, want_se = _expected(rows, "overall", "bbox")
        assert mean == pytest.approx(want_mean, abs=1e-6)
        assert (low, high) == (
            pytest.approx(want_mean - 1.96 * want_se, abs=1e-6),
            pytest.approx(want_mean + 1.96 * want_se, abs=1e-6),
        )
    assert [d[0] for d in dots] == sorted(d[0] for d in dots)
    # the other sections show the last run
    assert "ckpt3.jsonl" in html.split("</h1>", 1)[0]


def test_one_file_split_by_a_step_column(base_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    rows = []
    for step in (100, 20, 3):  # the order of the file is not the order of the steps
        rows += [{**r, "extra": {"step": step}} for r in _checkpoint(base_rows, {3: 0, 20: 1, 100: 2}[step])]
    scores = _write(tmp_path / "steps.jsonl", rows)
    out = tmp_path / "report.html"
    proc = run_cli("report", str(scores), "--step", "step", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    table = _runs_table(out.read_text(encoding="utf-8"))
    assert [label for label, _ in table] == ["step 3", "step 20", "step 100"]  # numbers in numeric order
    for k, (_, cells) in enumerate(table):
        want = [r for r in rows if r["extra"]["step"] == (3, 20, 100)[k]]
        assert cells[0] == (
            pytest.approx(_expected(want, "overall")[0], abs=1e-6),
            pytest.approx(_expected(want, "overall")[1], abs=1e-6),
        )


def test_mistakes_exit_2_with_one_line(base_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    a = str(_write(tmp_path / "a.jsonl", base_rows))
    b = str(_write(tmp_path / "b.jsonl", base_rows))
    proc = run_cli("report", a, b, "--label", "only one", "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 2 and "--label is given 1 time(s) for 2 SCORES file(s)" in proc.stderr.decode()
    proc = run_cli("report", a, b, "--step", "step", "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 2 and "--step splits one SCORES file" in proc.stderr.decode()
    proc = run_cli("report", a, "--step", "step", "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 2 and "no row of" in proc.stderr.decode() and "--keep step" in proc.stderr.decode()
    assert not (tmp_path / "r.html").exists()
