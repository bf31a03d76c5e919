"""``trace-tasks score`` and ``report`` summarise the data warnings up front, and score exactly as without them.

The instances break authoring rules (a one-key map, a count that disagrees
with its set, a point without an image size): they are valid, so every line is
scored, with the same scores ``score_trace_response`` gives; the warnings are
counted per rule on stderr (the --responses layout before scoring, the
combined layout once its lines are read) and in ``--summary-json``, and the
report shows them in its run summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.helpers import instance, run_cli, write_lines
from trace_tasks import score_trace_response

RESPONSE = '{"answer": 2, "annotation": [[0, 0, 10, 10]]}'


def _instances() -> list[dict[str, Any]]:
    counted = [
        instance(f"c{i}", answer=n, annotation_type="bbox_set", value=[[20 * k, 0, 20 * k + 10, 10] for k in range(n)])
        for i, n in enumerate((1, 2, 3, 2))
    ]
    return [
        *counted,
        instance("miscount", answer=3, annotation_type="bbox_set", value=[[0, 0, 10, 10]]),
        instance("one-key", annotation_type="bbox_map", value={"k": [0, 0, 10, 10]}),
        instance("no-size", annotation_type="point", value=[5, 5]),
    ]


def _clean() -> list[dict[str, Any]]:
    return [instance(f"ok{n}", annotation_type="bbox", value=[n, 0, n + 10, 10]) for n in range(3)]


def _expected(rows: list[dict[str, Any]]) -> list[float]:
    fields = ("answer_gt", "annotation_gt", "reward_contract")
    return [score_trace_response(response=RESPONSE, **{k: row[k] for k in fields})["overall"] for row in rows]


def _overall(path: Path) -> list[float]:
    return [json.loads(line)["overall"] for line in path.read_text().splitlines()]


WANTED = "count-mismatch 1, missing-image-size 1, single-key-map 1"


def test_the_responses_layout_counts_the_instances_warnings_before_scoring(tmp_path: Path) -> None:
    rows = _instances()
    instances = write_lines(tmp_path / "instances.jsonl", rows)
    responses = write_lines(tmp_path / "responses.jsonl", [{"id": row["id"], "response": RESPONSE} for row in rows])
    out, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    proc = run_cli("score", str(instances), "--responses", str(responses), "-o", str(out), "--summary-json", str(summary))
    assert proc.returncode == 0, proc.stderr.decode()
    err = proc.stderr.decode().splitlines()
    assert err[0] == (
        f"trace-tasks score: warnings: 3 warnings in 7 instances of {instances}: {WANTED}; the scores are as the data "
        f"says (a warning never changes one): 'trace-tasks validate {instances}' lists each"
    )
    assert err[1].startswith("annotation type")  # then the table: the warnings came first
    assert _overall(out) == _expected(rows)
    assert json.loads(summary.read_text())["warnings"] == {"count-mismatch": 1, "missing-image-size": 1, "single-key-map": 1}


def test_the_combined_layout_counts_each_line(tmp_path: Path) -> None:
    rows = _instances()
    combined = write_lines(tmp_path / "combined.jsonl", [{**row, "response": RESPONSE} for row in rows])
    out = tmp_path / "scores.jsonl"
    proc = run_cli("score", str(combined), "-o", str(out))
    assert proc.returncode == 0
    warned = [line for line in proc.stderr.decode().splitlines() if "warnings:" in line]
    assert warned == [
        f"trace-tasks score: warnings: 3 warnings in 7 lines of {combined}: {WANTED}; the scores are as the data says "
        f"(a warning never changes one): 'trace-tasks validate {combined}' lists each"
    ]
    assert _overall(out) == _expected(rows)
    assert run_cli("score", str(combined), "-q", "-o", str(out)).stderr == b""


def test_clean_data_prints_no_warning_line(tmp_path: Path) -> None:
    combined = write_lines(tmp_path / "combined.jsonl", [{**row, "response": RESPONSE} for row in _clean()])
    summary = tmp_path / "summary.json"
    proc = run_cli("score", str(combined), "-o", str(tmp_path / "s.jsonl"), "--summary-json", str(summary))
    assert proc.returncode == 0 and "warning" not in proc.stderr.decode()
    assert json.loads(summary.read_text())["warnings"] == {}


def test_the_report_shows_the_warnings_in_its_summary(tmp_path: Path) -> None:
    rows = _instances()
    combined = write_lines(tmp_path / "combined.jsonl", [{**row, "response": RESPONSE} for row in rows])
    scores, page = tmp_path / "scores.jsonl", tmp_path / "report.html"
    assert run_cli("score", str(combined), "-q", "-o", str(scores)).returncode == 0
    assert run_cli("report", str(scores), "--instances", str(combined), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert (
        '<th scope="row">data warnings</th><td>3 in 7 instance lines: count-mismatch 1, missing-image-size 1, single-key-map 1'
        in html
    )
    assert f"trace-tasks validate {combined}" in html
    clean = write_lines(tmp_path / "clean.jsonl", [{**row, "response": RESPONSE} for row in _clean()])
    assert run_cli("score", str(clean), "-q", "-o", str(scores)).returncode == 0
    assert run_cli("report", str(scores), "--instances", str(clean), "-o", str(page)).returncode == 0
    assert '<th scope="row">data warnings</th><td>none in 3 instance lines</td>' in page.read_text()
    assert run_cli("report", str(scores), "-o", str(page)).returncode == 0
    assert "data warnings" not in page.read_text()  # no instances: nothing to check
