"""``trace-tasks schema`` and the opt-in response policies on the command line (``--recovery``,
``--format-accept-answer-tag``) through ``score``, ``explain`` and ``report``'s re-scoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trace_tasks import format_instructions, response_json_schema, score_trace_response
from trace_tasks.cli.report._data import Row, run_options
from trace_tasks.scoring import OPT_IN_KEYS, options_from

from .helpers import instance as make_instance
from .helpers import run_cli

DRAFT = '<think>Candidate: {"answer": 2, "annotation": [0, 0, 10, 10]}</think>I cannot tell.'
R1 = '<think>the box</think><answer>{"answer": 2, "annotation": [0, 0, 10, 10]}</answer>'


def test_schema_prints_the_json_schema() -> None:
    proc = run_cli("schema", "--answer-type", "integer", "--annotation-type", "bbox_set")
    assert proc.returncode == 0 and proc.stderr == b""
    assert json.loads(proc.stdout) == response_json_schema(answer_type="integer", annotation_type="bbox_set")
    proc = run_cli("schema", "--answer-type", "string", "--mode", "answer")
    assert proc.returncode == 0 and list(json.loads(proc.stdout)["properties"]) == ["answer"]


def test_schema_instructions() -> None:
    proc = run_cli("schema", "--answer-type", "integer", "--annotation-type", "point", "--instructions")
    assert proc.returncode == 0
    assert proc.stdout.decode() == format_instructions(answer_type="integer", annotation_type="point") + "\n"
    proc = run_cli(
        "schema", "--answer-type", "integer", "--annotation-type", "point", "--instructions", "--format-accept-answer-tag"
    )
    assert "<answer>OBJECT</answer>" in proc.stdout.decode()


def test_schema_mistakes_are_one_line_and_exit_2() -> None:
    for args, text in (
        (("--answer-type", "intger", "--annotation-type", "bbox"), "did you mean 'integer'"),
        (("--answer-type", "integer"), "annotation_type must be a non-empty string"),
        (("--answer-type", "integer", "--annotation-type", "bbox", "--mode", "nope"), "output mode"),
    ):
        proc = run_cli("schema", *args)
        assert proc.returncode == 2 and proc.stdout == b"", args
        (line,) = proc.stderr.decode().splitlines()
        assert line.startswith("trace-tasks schema: error: ") and text in line


def test_schema_is_listed_in_help() -> None:
    proc = run_cli("--help")
    assert b"schema" in proc.stdout


def _combined(tmp_path: Path, responses: list[str]) -> Path:
    rows = [{**make_instance(f"r{i}"), "response": response} for i, response in enumerate(responses)]
    path = tmp_path / "combined.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _fields(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata") if k in row}


def test_score_takes_the_policies_and_reports_their_indicators(tmp_path: Path) -> None:
    combined = _combined(tmp_path, [DRAFT, R1])
    rows = [json.loads(line) for line in combined.read_text().splitlines()]
    out = tmp_path / "scores.jsonl"
    for args, options in (
        ((), {}),
        (("--recovery", "outside_think"), {"trace_recovery": "outside_think"}),
        (
            ("--format-accept-answer-tag", "--recovery", "final_only"),
            {"trace_recovery": "final_only", "format_accept_answer_tag": True},
        ),
    ):
        proc = run_cli("score", str(combined), "-o", str(out), "-q", "--format-weight", "0.1", *args)
        assert proc.returncode == 0, proc.stderr
        scored = [json.loads(line) for line in out.read_text().splitlines()]
        for row, got in zip(rows, scored, strict=True):
            expected = score_trace_response(response=row["response"], **_fields(row), format_weight=0.1, **options)
            assert {k: got[k] for k in expected} == expected
            assert (set(OPT_IN_KEYS) <= set(got)) is bool(options)
            # report re-scores a row with the options its indicators name.
            assert options_from(run_options(Row(1, got["id"], 1, "bbox", got))) == options_from({"format_weight": 0.1, **options})


def test_a_bad_recovery_is_refused_before_any_input_is_read(tmp_path: Path) -> None:
    proc = run_cli("score", str(tmp_path / "missing.jsonl"), "--recovery", "strict")
    assert proc.returncode == 2
    assert b"trace_recovery must be one of ['lenient', 'outside_think', 'final_only']" in proc.stderr


def test_explain_shows_the_policy_and_scores_with_it(tmp_path: Path) -> None:
    combined = _combined(tmp_path, [DRAFT])
    proc = run_cli("explain", "--instance", str(combined), "--line", "1", "--recovery", "outside_think", "--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    row = json.loads(combined.read_text())
    assert shown["result"] == score_trace_response(response=DRAFT, **_fields(row), trace_recovery="outside_think")
    text = run_cli("explain", "--instance", str(combined), "--line", "1", "--recovery", "outside_think").stdout.decode()
    assert "policy: trace_recovery outside_think (recovery and atomic answers ignore text inside <think>...</think>)" in text
    text = run_cli("explain", "--instance", str(combined), "--line", "1", "--format-accept-answer-tag").stdout.decode()
    assert "policy: format_accept_answer_tag" in text
    assert "policy:" not in run_cli("explain", "--instance", str(combined), "--line", "1").stdout.decode()
