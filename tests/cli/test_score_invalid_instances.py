"""``trace-tasks score`` on broken ground truth (in-process, ``trace_tasks.cli.main``).

Every case of the table in ``tests/core/test_instances.py`` becomes an error line
naming its problem (one-file layout), or a problem of the instances file reported
before scoring with exit code 1 (two-file layout); the good instance next to it
scores exactly as ``score_trace_response`` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trace_tasks import score_trace_response
from trace_tasks.cli import main

from ..core.test_instances import BROKEN, GOOD_RESPONSE, Case, good_instance

FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def _reference(instance: dict[str, Any], response: str, **options: Any) -> dict[str, float]:
    return score_trace_response(response=response, **{k: instance[k] for k in FIELDS if k in instance}, **options)


#: A combined line's column that is no instance field is no part of the instance: ignored, named in a warning.
IGNORED_IN_COMBINED = "unknown-field"


@pytest.mark.parametrize("case", [c for c in BROKEN if c.name != IGNORED_IN_COMBINED], ids=lambda case: case.name)
def test_one_file_layout_error_line_names_the_problem(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = good_instance()
    path = _write(
        tmp_path / "combined.jsonl",
        [{**good, "response": GOOD_RESPONSE}, {**case.instance(), "response": GOOD_RESPONSE}, {**good, "response": "2"}],
    )
    assert main(["score", str(path), "-q"]) == 1
    rows = _rows(capsys.readouterr().out)
    assert [row["line"] for row in rows] == [1, 2, 3]
    error = rows[1]["error"]
    assert error.startswith("line 2: invalid instance: ")
    assert f"{case.path}: " in error and case.message in error, error
    assert "overall" not in rows[1]
    assert {k: v for k, v in rows[0].items() if k not in ("id", "line")} == _reference(good, GOOD_RESPONSE)
    assert {k: v for k, v in rows[2].items() if k not in ("id", "line")} == _reference(good, "2")


def test_one_file_layout_ignores_a_column_that_is_no_instance_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = next(c for c in BROKEN if c.name == IGNORED_IN_COMBINED)
    path = _write(tmp_path / "combined.jsonl", [{**case.instance(), "response": GOOD_RESPONSE}] * 2)
    assert main(["score", str(path), "-q"]) == 0
    captured = capsys.readouterr()
    rows = _rows(captured.out)
    assert [{k: v for k, v in row.items() if k not in ("id", "line")} for row in rows] == [
        _reference(good_instance(), GOOD_RESPONSE)
    ] * 2
    assert captured.err.count("warning: ignored 1 input column") == 1 and "extra_field" in captured.err  # once per run


@pytest.mark.parametrize("case", BROKEN, ids=lambda case: case.name)
def test_two_file_layout_reports_problems_up_front_and_exits_1(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instances = _write(tmp_path / "instances.jsonl", [good_instance(), case.instance("broken")])
    responses = _write(
        tmp_path / "responses.jsonl", [{"id": "good", "response": GOOD_RESPONSE}, {"id": "broken", "response": GOOD_RESPONSE}]
    )
    summary = tmp_path / "summary.json"
    code = main(["score", str(instances), "--responses", str(responses), "-q", "--summary-json", str(summary)])
    captured = capsys.readouterr()
    assert code == 1
    rows = _rows(captured.out)
    assert {k: v for k, v in rows[0].items() if k not in ("id", "line")} == _reference(good_instance(), GOOD_RESPONSE)
    assert rows[1]["error"].startswith(f"line 2: instance 'broken' ({instances} line 2) is invalid: ")
    assert case.message in rows[1]["error"]
    problems = json.loads(summary.read_text())["instance_problems"]
    assert any(p.startswith(f"{instances} line 2: {case.path}: ") and case.message in p for p in problems), problems
    assert f"trace-tasks score: instances: {instances} line 2: {case.path}: " in captured.err


def test_instance_problems_come_before_any_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instances = _write(tmp_path / "instances.jsonl", [case.instance() for case in BROKEN] + [good_instance()])
    responses = _write(tmp_path / "responses.jsonl", [{"id": "good", "response": GOOD_RESPONSE}])
    summary = tmp_path / "summary.json"
    code = main(["score", str(instances), "--responses", str(responses), "--summary-json", str(summary)])
    captured = capsys.readouterr()
    assert code == 1  # every response scored, but the instances file has problems (docs/cli.md)
    assert "error" not in _rows(captured.out)[0]
    err = captured.err
    assert err.index("trace-tasks score: instances:") < err.index("annotation type")  # before the summary table
    assert f"problems in {instances}" in err
    data = json.loads(summary.read_text())
    assert data["errors"] == 0 and data["scored"] == 1
    assert len({p.split(": ")[0] for p in data["instance_problems"]}) == len(BROKEN)


def test_a_good_instances_file_still_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instances = _write(tmp_path / "instances.jsonl", [good_instance()])
    responses = _write(tmp_path / "responses.jsonl", [{"id": "good", "response": r} for r in (GOOD_RESPONSE, "2", "")])
    summary = tmp_path / "summary.json"
    assert main(["score", str(instances), "--responses", str(responses), "-q", "--summary-json", str(summary)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert [row["overall"] for row in rows] == [1.0, 0.5, 0.0]
    assert json.loads(summary.read_text())["instance_problems"] == []


def test_repeated_instances_compile_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trace_tasks.data import _cache as module

    calls = []
    real = module.compile_instance
    monkeypatch.setattr(module, "compile_instance", lambda data, **kw: calls.append(1) or real(data, **kw))
    path = _write(tmp_path / "combined.jsonl", [{**good_instance(), "response": r} for r in (GOOD_RESPONSE, "2", "", "x") * 4])
    assert main(["score", str(path), "-q"]) == 0
    assert len(_rows(capsys.readouterr().out)) == 16
    assert len(calls) == 1
