"""``trace-tasks validate`` refuses every kind of broken ground truth (in-process, ``trace_tasks.cli.main``).

The cases are the table of ``tests/core/test_instances.py``: each line of the
file breaks one thing, a good instance sits next to them and has no problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.cli import main

from ..core.test_instances import BROKEN, Case, good_instance


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", BROKEN, ids=lambda case: case.name)
def test_each_broken_instance_is_flagged_and_the_good_one_is_not(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "instances.jsonl", [good_instance("before"), case.instance(), good_instance("after")])
    assert main(["validate", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"{path}:2: {case.path}: " in "\n".join(lines)
    assert any(line.startswith(f"{path}:2: {case.path}: ") and case.message in line for line in lines), lines
    assert not any(line.startswith((f"{path}:1:", f"{path}:3:")) for line in lines)
    assert lines[-1].endswith("on 1 line in 1 file")


def test_the_whole_table_in_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [case.instance() for case in BROKEN] + [good_instance()]
    path = _write(tmp_path / "instances.jsonl", rows)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    flagged = {int(line.split(":")[1]) for line in out[:-1] if line.startswith(str(path))}
    assert flagged == set(range(1, len(BROKEN) + 1))
    assert out[-1].endswith(f"on {len(BROKEN)} lines in 1 file")
    assert main(["validate", "-q", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [out[-1]]


def test_a_combined_score_input_is_validated_as_its_instance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{**case.instance(), "response": "2"} for case in BROKEN[:3]] + [{**good_instance(), "response": "2"}] * 2
    path = _write(tmp_path / "combined.jsonl", rows)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "$.response" not in out and "duplicate id" not in out
    assert out.splitlines()[-1].endswith("on 3 lines in 1 file")


def test_frame_check_still_runs_and_an_unchecked_family_is_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = good_instance("outside")
    outside["annotation_gt"]["value"] = [600, 0, 700, 10]
    path = _write(tmp_path / "instances.jsonl", [outside])
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:1: $.annotation_gt.value: x=700 is outside the image frame [0, 640]" in out
    assert "note:" not in out
