"""A Python caller's mistakes in a run's settings are ``TraceTasksError``s saying what to fix.

``trace_tasks.runs`` raised ``AttributeError`` for a ``pathlib.Path`` input, ``TypeError`` for a number
where a path goes, accepted ``workers=0``, and raised exceptions outside ``TraceTasksError`` for an input
it cannot open or a layout it cannot run (docs/contracts.md §2: every exception raised on purpose is one).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from tests.cli.helpers import COMBINED
from trace_tasks.errors import OptionError, TraceTasksError
from trace_tasks.runs import CannotOpen, RunSettings, UsageError, score_files


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("input", None, "path setting"),
        ("input", 5, "path setting"),
        ("input", "", "path setting"),
        ("output", 5, "path setting"),
        ("summary", 5, "path setting"),
        ("engine", "spark", "engine must be one of"),
        ("workers", 0, "workers must be a positive integer"),
        ("workers", -1, "workers must be a positive integer"),
        ("workers", 2.5, "workers must be a positive integer"),
        ("workers", True, "workers must be a positive integer"),
        ("workers", "2", "workers must be a positive integer"),
        ("keep", [1], "keep must be"),
        ("keep", None, "keep must be"),
        ("group_by", 3, "group_by must be"),
        ("options", None, "options must be a mapping"),
        ("output_columns", "some", "output_columns must be 'all' or 'stable'"),
        ("resume", "yes", "resume must be True or False"),
    ],
)
def test_a_bad_setting_is_an_option_error_naming_it(field: str, value: Any, said: str) -> None:
    settings: dict[str, Any] = {"input": str(COMBINED), field: value}
    with pytest.raises(OptionError, match=said):
        RunSettings(**settings)


def test_paths_may_be_path_objects(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "scores.jsonl"
    result = score_files(RunSettings(input=COMBINED, output=out, summary=tmp_path / "summary.json", quiet=True))
    assert result.outputs == (str(out),) and out.exists()
    assert json.loads((tmp_path / "summary.json").read_text())["lines"] == result.lines > 0


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"input": "no such file.jsonl"}, CannotOpen),
        ({"input": str(COMBINED), "address": "ray://nowhere:1"}, UsageError),
    ],
)
def test_what_a_run_refuses_is_a_trace_tasks_error(settings: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        score_files(RunSettings(quiet=True, **settings))
    assert isinstance(caught.value, TraceTasksError)


def test_score_files_takes_run_settings() -> None:
    with pytest.raises(OptionError, match=r"takes a trace_tasks\.runs\.RunSettings"):
        score_files({"input": str(COMBINED)})  # type: ignore[arg-type]
