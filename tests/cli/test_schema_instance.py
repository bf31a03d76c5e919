"""``trace-tasks schema --instance FILE --id ID`` (issue 35, item 5): the schema and the prompt text of one instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trace_tasks import format_instructions, response_json_schema

from .helpers import run_cli

ROW: dict[str, Any] = {
    "id": "cups",
    "answer_gt": {"type": "integer", "value": 2},
    "annotation_gt": {"type": "point_map", "value": {"cup": [1, 2], "plate": [3, 4]}},
    "reward_contract": {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "point_map_soft_distance_v0", "type": "point_map"},
    },
}


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    other = {**ROW, "id": "other", "annotation_gt": {"type": "point", "value": [1, 2]}}
    path.write_text(json.dumps(other) + "\n" + json.dumps(ROW) + "\n", encoding="utf-8")
    return path


def test_the_schema_of_one_instance(tmp_path: Path) -> None:
    proc = run_cli("schema", "--instance", str(_file(tmp_path)), "--id", "cups")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema == response_json_schema(instance=ROW)
    assert schema["properties"]["annotation"]["required"] == ["cup", "plate"]


def test_the_instructions_of_one_instance(tmp_path: Path) -> None:
    proc = run_cli("schema", "--instance", str(_file(tmp_path)), "--id", "cups", "--instructions")
    assert proc.returncode == 0
    assert proc.stdout.decode() == format_instructions(instance=ROW) + "\n"


def test_instance_mistakes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    path = str(_file(tmp_path))
    for args, text in (
        (("--instance", path, "--id", "nope"), "no instance with id 'nope'"),
        (("--instance", path), "--instance FILE with --id ID"),
        ((), "give --answer-type"),
        (("--instance", path, "--id", "cups", "--answer-type", "string"), "disagrees with the instance"),
        (("--instance", str(tmp_path / "missing.jsonl"), "--id", "cups"), "missing.jsonl"),
    ):
        proc = run_cli("schema", *args)
        assert proc.returncode == 2 and proc.stdout == b"", args
        (line,) = proc.stderr.decode().splitlines()
        assert line.startswith("trace-tasks schema: error: ") and text in line, line
