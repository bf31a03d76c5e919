"""``audit --group-by``: per value of a column, the very audit of that value's instances filtered by hand."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import INSTANCES, run_cli, write_lines


def test_audit_group_by_equals_auditing_each_value_alone(tmp_path: Path) -> None:
    rows = []
    for n, line in enumerate(INSTANCES.read_text().splitlines()):
        row = json.loads(line)
        row.setdefault("metadata", {})["task"] = ["gui", "chart"][n % 2]
        rows.append(row)
    whole = write_lines(tmp_path / "all.jsonl", rows)
    grouped_json = tmp_path / "grouped.json"
    grouped = run_cli("audit", str(whole), "--group-by", "metadata.task", "--json", str(grouped_json))
    assert grouped.returncode in (0, 1), grouped.stderr.decode()
    entries = json.loads(grouped_json.read_text())["policies"]
    assert {entry["group"] for entry in entries} == {"gui", "chart"}
    for task in ("gui", "chart"):
        alone = write_lines(tmp_path / f"{task}.jsonl", [r for r in rows if r["metadata"]["task"] == task])
        alone_json = tmp_path / f"{task}.json"
        run_cli("audit", str(alone), "--json", str(alone_json))
        expected = json.loads(alone_json.read_text())["policies"]
        got = [{k: v for k, v in e.items() if k != "group"} for e in entries if e["group"] == task]
        assert got == expected


def test_audit_group_by_a_path_found_nowhere_is_an_error() -> None:
    result = run_cli("audit", str(INSTANCES), "--group-by", "metadata.task")
    assert result.returncode == 2
    assert b"--group-by metadata.task: found on no line" in result.stderr
