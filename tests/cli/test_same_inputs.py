"""``validate`` and ``explain`` accept what ``score`` accepts: combined files with the user's columns, ``--keep``, Parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, run_cli, write_lines


def _tagged(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    rows = []
    for n, line in enumerate(COMBINED.read_text().splitlines()):
        row = json.loads(line)
        rows.append({**row, "step": n // 10, "uid": f"u{n}"})
    return write_lines(tmp_path / "tagged.jsonl", rows), rows


def test_validate_accepts_a_combined_file_score_accepts(tmp_path: Path) -> None:
    path, rows = _tagged(tmp_path)
    assert run_cli("score", str(path), "-q", "-o", str(tmp_path / "o.jsonl")).returncode == 0
    checked = run_cli("validate", str(path))
    out = checked.stdout.decode()
    assert checked.returncode == 0, out
    assert "step, uid" in out and "were not checked" in out  # named once, in a note
    assert out.splitlines()[-1].startswith(f"{len(rows)} lines checked in 1 file: 0 problems")


def test_validate_keep_leaves_the_users_columns_of_an_instances_file_alone(tmp_path: Path) -> None:
    rows = [{**json.loads(line), "kind": "ocr"} for line in INSTANCES.read_text().splitlines()]
    path = write_lines(tmp_path / "i.jsonl", rows)
    strict = run_cli("validate", str(path))
    assert strict.returncode == 1 and b"extra fields found (kind)" in strict.stdout  # an instances file stays strict
    kept = run_cli("validate", str(path), "--keep", "kind")
    assert kept.returncode == 0, kept.stdout.decode()


def test_validate_group_by_a_path_found_nowhere_is_a_problem(tmp_path: Path) -> None:
    result = run_cli("validate", str(INSTANCES), "--group-by", "metadata.task")
    assert result.returncode == 1
    assert b"--group-by metadata.task: found on no line" in result.stdout
    assert run_cli("validate", str(INSTANCES), "--group-by", "metadata.question").returncode == 0


def test_validate_and_explain_read_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow", reason="the Parquet layer needs pyarrow (the parquet extra)")
    import pyarrow.parquet as pq

    rows = [
        {
            "id": r["id"], "response": r["response"], "answer_gt": json.dumps(r["answer_gt"]),
            "annotation_gt": json.dumps(r["annotation_gt"]), "reward_contract": json.dumps(r["reward_contract"]), "step": 7,
        }
        for r in map(json.loads, COMBINED.read_text().splitlines())
    ]  # fmt: skip
    path = tmp_path / "dump.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    checked = run_cli("validate", str(path))
    assert checked.returncode == 0, checked.stdout.decode()
    explained = run_cli("explain", "--instance", str(path), "--line", "2", "--json")
    assert explained.returncode == 0, explained.stderr.decode()
    scored = run_cli("score", str(path), "-q")
    assert json.loads(explained.stdout)["result"] == {
        k: v for k, v in json.loads(scored.stdout.splitlines()[1]).items() if k not in ("id", "line")
    }


def test_explain_a_combined_line_with_the_users_columns(tmp_path: Path) -> None:
    path, _ = _tagged(tmp_path)
    explained = run_cli("explain", "--instance", str(path), "--line", "3", "--json")
    assert explained.returncode == 0, explained.stderr.decode()
    scored = run_cli("score", str(path), "-q")
    expected = {k: v for k, v in json.loads(scored.stdout.splitlines()[2]).items() if k not in ("id", "line")}
    assert json.loads(explained.stdout)["result"] == expected
    # an instances line with a user's column: --keep leaves it out, as score --keep does
    rows = [{**json.loads(line), "kind": "ocr"} for line in INSTANCES.read_text().splitlines()]
    instances = write_lines(tmp_path / "i.jsonl", rows)
    refused = run_cli("explain", "--instance", str(instances), "--line", "1", "--response", '{"answer": "C"}')
    assert refused.returncode != 0 and b"kind" in refused.stderr
    kept = run_cli("explain", "--instance", str(instances), "--line", "1", "--response", '{"answer": "C"}', "--keep", "kind")
    assert kept.returncode == 0, kept.stderr.decode()
