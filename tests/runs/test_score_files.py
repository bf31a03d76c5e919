"""``trace_tasks.runs.score_files``: scoring files from Python, without the command line.

Each test builds a :class:`RunSettings` and reads the :class:`RunResult` and
the files written; the scores are held to :func:`trace_tasks.score_trace_response`
on the same rows, and the summary to what ``trace-tasks score --summary-json``
writes for the same run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest

from trace_tasks import score_trace_response
from trace_tasks.cli import main
from trace_tasks.errors import OptionError
from trace_tasks.runs import EXIT_FAILED, EXIT_OK, STDIO, RunResult, RunSettings, UsageError, score_files
from trace_tasks.scoring import OPTION_DEFAULTS

from ..cli.helpers import COMBINED, INSTANCES, RESPONSES, two_pool_chunks


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _expected(path: Path = COMBINED) -> list[dict[str, float]]:
    """What score_trace_response gives each row of a combined file (the error rows: None)."""
    found = []
    for row in _rows(path):
        fields = {k: row[k] for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata") if k in row}
        try:
            found.append(score_trace_response(response=row["response"], **fields))
        except Exception:  # the run writes an error row for it
            found.append(None)
    return found


def test_an_in_process_run_writes_the_scores_and_returns_the_summary(tmp_path: Path) -> None:
    out, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    result = score_files(RunSettings(input=str(COMBINED), output=str(out), summary=str(summary), quiet=True))
    assert isinstance(result, RunResult)
    rows = _rows(out)
    assert result.lines == len(rows) == len(_rows(COMBINED))
    assert result.errors == sum("error" in row for row in rows)
    assert result.exit_status == (EXIT_FAILED if result.errors else EXIT_OK)
    assert result.outputs == (str(out),) and result.skipped == ()
    written = json.loads(summary.read_text(encoding="utf-8"))
    assert written["overall"] == result.summary["overall"] and written["lines"] == result.lines
    assert written["warnings"] == result.warnings
    assert written["options"] == json.loads(
        json.dumps(OPTION_DEFAULTS)
    )  # the defaults, echoed as the command echoes them (JSON values)
    for row, expected in zip(rows, _expected(), strict=True):
        if "error" not in row:
            assert expected is not None and {key: row[key] for key in expected} == expected


def test_the_result_is_what_the_command_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_cli = tmp_path / "cli.json"
    code = main(["score", str(COMBINED), "-q", "-o", str(tmp_path / "cli.jsonl"), "--summary-json", str(by_cli)])
    capsys.readouterr()
    result = score_files(
        RunSettings(input=str(COMBINED), output=str(tmp_path / "py.jsonl"), summary=str(tmp_path / "py.json"), quiet=True)
    )
    assert code == result.exit_status
    assert (tmp_path / "cli.jsonl").read_bytes() == (tmp_path / "py.jsonl").read_bytes()
    assert by_cli.read_bytes().replace(b"cli.jsonl", b"py.jsonl") == (tmp_path / "py.json").read_bytes()


@pytest.mark.slow  # starts two worker processes
def test_a_pool_of_two_workers_gives_the_in_process_scores(tmp_path: Path) -> None:
    alone, pooled = tmp_path / "alone.jsonl", tmp_path / "pooled.jsonl"
    source = two_pool_chunks(tmp_path / "many.jsonl", _rows(COMBINED))
    first = score_files(RunSettings(input=str(source), output=str(alone), quiet=True, metrics=False))
    second = score_files(RunSettings(input=str(source), output=str(pooled), workers=2, quiet=True, metrics=False))
    assert alone.read_bytes() == pooled.read_bytes()
    assert attrs.evolve(first, outputs=()) == attrs.evolve(second, outputs=())


def test_the_joined_layout_reports_the_instances_problems(tmp_path: Path) -> None:
    instances = tmp_path / "instances.jsonl"
    lines = INSTANCES.read_text(encoding="utf-8").splitlines()
    instances.write_text("\n".join([*lines, '{"id": "broken"}']) + "\n", encoding="utf-8")
    result = score_files(
        RunSettings(input=str(instances), responses=str(RESPONSES), output=str(tmp_path / "o.jsonl"), quiet=True)
    )
    assert result.instance_problems and all("line 37" in problem for problem in result.instance_problems)
    assert result.exit_status == EXIT_FAILED
    assert result.lines == len(RESPONSES.read_text(encoding="utf-8").splitlines())


def test_resume_skips_complete_outputs_and_scores_the_rest(tmp_path: Path) -> None:
    shards = tmp_path / "in"
    shards.mkdir()
    lines = COMBINED.read_text(encoding="utf-8").splitlines(keepends=True)
    (shards / "a.jsonl").write_text("".join(lines[:40]), encoding="utf-8")
    (shards / "b.jsonl").write_text("".join(lines[40:]), encoding="utf-8")
    out = tmp_path / "out"
    settings = RunSettings(input=str(shards), output=f"{out}/", quiet=True)
    whole = score_files(settings)
    assert whole.outputs == (str(out / "a.jsonl"), str(out / "b.jsonl"))
    kept = (out / "a.jsonl").read_bytes()
    (out / "b.jsonl").unlink()  # as a run stopped before its second shard leaves it
    resumed = score_files(attrs.evolve(settings, resume=True))
    assert resumed.skipped == (str(out / "a.jsonl"),) and resumed.outputs == (str(out / "b.jsonl"),)
    assert resumed.lines == len(lines) - 40
    assert (out / "a.jsonl").read_bytes() == kept
    assert _rows(out / "a.jsonl") + _rows(out / "b.jsonl") == _rows_of_whole(tmp_path, shards)


def _rows_of_whole(tmp_path: Path, shards: Path) -> list[dict[str, Any]]:
    again = tmp_path / "again"
    score_files(RunSettings(input=str(shards), output=f"{again}/", quiet=True))
    return _rows(again / "a.jsonl") + _rows(again / "b.jsonl")


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        (RunSettings(input=STDIO, responses=STDIO), "only one of INPUT and --responses"),
        (RunSettings(input=str(COMBINED), summary=STDIO), "would both go to standard output"),
        (RunSettings(input=str(COMBINED), address="ray://x:1"), "add --engine ray"),
        (RunSettings(input=str(COMBINED), keep=("kind",), engine="ray"), "not supported by --engine ray"),
    ],
)
def test_settings_no_engine_can_run_are_refused_before_anything_is_read(settings: RunSettings, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        score_files(settings)


def test_a_bad_scorer_option_raises_before_any_input_is_read(tmp_path: Path) -> None:
    with pytest.raises(OptionError):
        score_files(RunSettings(input=str(tmp_path / "missing.jsonl"), options={"answer_weight": -1}))
    with pytest.raises(ValueError, match="engine must be one of"):
        RunSettings(input="x", engine="spark")


def test_keep_and_group_by_name_the_columns_once() -> None:
    settings = RunSettings(input="x", keep=("kind,sample", "kind"), group_by="sample")
    assert settings.columns == ("kind", "sample")
    assert RunSettings(input="x", keep="kind").keep == ("kind",)
    assert not RunSettings(input="x").wants_metrics and RunSettings(input="x", summary="s.json").wants_metrics


@pytest.mark.ray
def test_the_ray_engine_gives_the_local_scores(ray_session: object, tmp_path: Path) -> None:
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    shutil.copy(COMBINED, tmp_path / "in.jsonl")
    first = score_files(RunSettings(input=str(tmp_path / "in.jsonl"), output=str(local), quiet=True))
    second = score_files(RunSettings(input=str(tmp_path / "in.jsonl"), output=str(on_ray), engine="ray", quiet=True))
    assert local.read_bytes() == on_ray.read_bytes()
    assert (first.exit_status, first.lines, first.errors) == (second.exit_status, second.lines, second.errors)
    assert second.warnings is None  # the Ray engine does not count data warnings
