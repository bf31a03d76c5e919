"""``--keep`` and ``--group-by`` with dotted paths, read from the response line or its instance; dead ends named.

Grouping by an instance field must give the numbers of filtering by hand: the
expected totals are computed here from the written rows and the instances file.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, run_cli, write_lines
from trace_tasks.runs import RunSettings, score_files


def _tasked_instances(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The example instances with ``metadata.task`` set (two tasks that share types), and each id's task."""
    rows, tasks = [], {}
    for n, line in enumerate(INSTANCES.read_text().splitlines()):
        row = json.loads(line)
        tasks[row["id"]] = row.setdefault("metadata", {})["task"] = ["gui", "chart"][n % 2]
        rows.append(row)
    return write_lines(tmp_path / "instances.jsonl", rows), tasks


def test_group_by_an_instance_field_equals_filtering_by_hand(tmp_path: Path) -> None:
    instances, tasks = _tasked_instances(tmp_path)
    out, summary_path = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    result = run_cli(
        "score", str(instances), "--responses", str(RESPONSES), "-q", "-o", str(out),
        "--group-by", "metadata.task", "--summary-json", str(summary_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    summary = json.loads(summary_path.read_text())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(row["extra"] == {"metadata.task": tasks[row["id"]]} for row in rows)
    assert set(summary["by_group"]) == {"gui", "chart"}  # never a null group
    for task in ("gui", "chart"):
        members = [float(row["overall"]) for row in rows if tasks[row["id"]] == task]
        got = summary["by_group"][task]
        assert got["count"] == len(members)
        assert got["mean_overall"] == pytest.approx(statistics.fmean(members), abs=1e-12)
        assert got["mean_overall_stderr"] == pytest.approx(statistics.stdev(members) / math.sqrt(len(members)), abs=1e-12)


def test_the_response_line_comes_before_the_instance(tmp_path: Path) -> None:
    instances, _ = _tasked_instances(tmp_path)
    responses = []
    for n, line in enumerate(RESPONSES.read_text().splitlines()):
        row = json.loads(line)
        if n % 3 == 0:
            row["metadata"] = {"task": "override"}
        responses.append(row)
    path = write_lines(tmp_path / "responses.jsonl", responses)
    result = run_cli("score", str(instances), "--responses", str(path), "-q", "--keep", "metadata.task,quality")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["extra"]["metadata.task"] == "override" for row in rows] == [n % 3 == 0 for n in range(len(rows))]
    assert all(row["extra"]["quality"] == responses[n]["quality"] for n, row in enumerate(rows))


def test_a_dotted_path_in_the_combined_layout(tmp_path: Path) -> None:
    rows = []
    for n, line in enumerate(COMBINED.read_text().splitlines()):
        row = json.loads(line)
        row.setdefault("metadata", {})["task"] = f"t{n % 3}"
        rows.append(row)
    result = run_cli("score", str(write_lines(tmp_path / "c.jsonl", rows)), "-q", "--keep", "metadata.task")
    assert result.returncode == 0, result.stderr.decode()
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["extra"]["metadata.task"] for row in out] == [f"t{n % 3}" for n in range(len(rows))]


def test_a_path_found_on_no_line_is_an_error_naming_it(tmp_path: Path) -> None:
    result = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q", "--group-by", "metadata.task")
    assert result.returncode == 1
    assert "error: --group-by metadata.task: found on no line nor its instance" in result.stderr.decode()
    settings = RunSettings(
        input=str(INSTANCES), responses=str(RESPONSES), output=str(tmp_path / "o.jsonl"), keep="nope", quiet=True
    )
    done = score_files(settings)
    assert done.exit_status == 1 and done.errors == 0


def _most_common(stderr: bytes) -> str:
    text = stderr.decode()
    assert "most lines failed" in text, text
    return text[text.index("most lines failed") :]


def test_instances_without_responses_name_the_missing_flag(tmp_path: Path) -> None:
    result = run_cli("score", str(INSTANCES), "-o", str(tmp_path / "o.jsonl"))
    note = _most_common(result.stderr)
    lines = len(INSTANCES.read_text().splitlines())
    assert (
        f"most lines failed ({lines} of {lines}); the most common error ({lines} lines): $.response: required field missing"
        in note
    )
    assert "--responses FILE" in note


def test_swapped_files_are_named(tmp_path: Path) -> None:
    result = run_cli("score", str(RESPONSES), "--responses", str(INSTANCES), "-o", str(tmp_path / "o.jsonl"))
    note = _most_common(result.stderr)
    assert "are INPUT and --responses swapped?" in note


def test_responses_as_input_are_named(tmp_path: Path) -> None:
    result = run_cli("score", str(RESPONSES), "-o", str(tmp_path / "o.jsonl"))
    note = _most_common(result.stderr)
    assert "if INPUT is the responses file" in note


def test_no_note_when_most_lines_score(tmp_path: Path) -> None:
    rows: list[Any] = [json.loads(line) for line in COMBINED.read_text().splitlines()]
    rows[0] = "not an object"
    result = run_cli("score", str(write_lines(tmp_path / "c.jsonl", rows)), "-o", str(tmp_path / "o.jsonl"))
    assert result.returncode == 1 and b"most lines failed" not in result.stderr
