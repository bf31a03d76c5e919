"""``trace-tasks plugins``: the real console script in a subprocess, plus in-process formatting.

A broken or conflicting plugin is simulated the way a real one arrives: a
``*.dist-info`` folder with an ``entry_points.txt`` on ``PYTHONPATH``, which
``importlib.metadata`` finds like any installed distribution.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.cli import main

from ..support.seed_table import FAMILY, SEED_TABLE
from .interval_family import V0, V1, IntervalFamily

OFFICIAL = sorted(set(FAMILY.values()))


def _console_script() -> str:
    """The ``trace-tasks`` script installed beside this interpreter (the workspace venv)."""
    beside = Path(sys.executable).parent / ("trace-tasks.exe" if os.name == "nt" else "trace-tasks")
    if beside.exists():
        return str(beside)
    found = shutil.which("trace-tasks")
    assert found, "the trace-tasks console script is not installed in this environment (run `uv sync`)"
    return found


def run_cli(*args: str, pythonpath: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_TASKS_") and k != "PYTHONPATH"}
    full_env.update(env)
    if pythonpath is not None:
        full_env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [_console_script(), *args], capture_output=True, text=True, timeout=120, env=full_env
    )


def fake_distribution(root: Path, dist: str, entry_name: str, module: str, source: str) -> Path:
    """Write a minimal installed distribution (metadata + one trace_tasks entry point) under ``root``."""
    info = root / f"{dist.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[trace_tasks]\n{entry_name} = {module}\n", encoding="utf-8")
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    return root


def table_rows(out: str, header: str) -> list[str]:
    """The rows of the table whose header line starts with ``header`` (up to the blank line)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line)
    return rows


def test_json_lists_the_installed_families() -> None:
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    by_name = {p["name"]: p for p in listing["plugins"]}
    assert by_name["trace_tasks.builtin"]["answer_types"] == [
        "integer", "number", "string", "boolean", "option_letter", "pi_expression", "index_list", "matrix",
    ]
    assert sorted(p["distribution"] for p in listing["plugins"] if p["distribution"]) == OFFICIAL
    for info in listing["plugins"]:
        assert set(info) == {
            "name", "distribution", "version", "entry_point", "annotation_types", "reward_ids",
            "answer_types", "hooks", "current_reward_ids",
        }
        if info["distribution"]:
            assert info["entry_point"].startswith(f"{info['name']} = ")
            assert set(info["hooks"]) == {
                "trace_annotation_types", "trace_parse_annotation", "trace_resolve_reward_id", "trace_score_annotation",
            }
            assert sorted(info["annotation_types"]) == sorted(t for t in SEED_TABLE if FAMILY[t] == info["distribution"])
    assert {t: e["current_reward_id"] for t, e in listing["annotation_types"].items()} == SEED_TABLE


def test_human_tables_list_plugins_types_and_current_ids() -> None:
    proc = run_cli("plugins")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("4 plugins, 12 annotation types, 8 answer types\n")
    assert "PLUGIN" in out and "ANNOTATION TYPE" in out and "ANSWER TYPE" in out
    type_rows = {row.split()[0]: row.split() for row in table_rows(out, "ANNOTATION TYPE")}
    assert set(type_rows) == set(SEED_TABLE)
    for annotation_type, reward_id in SEED_TABLE.items():
        assert type_rows[annotation_type][1:] == [FAMILY[annotation_type].rsplit("-", 1)[-1], f"{reward_id}*"]
    plugin_rows = {row.split()[0]: row for row in table_rows(out, "PLUGIN")}
    assert set(plugin_rows) == {"trace_tasks.builtin", "bbox", "point", "segment"}
    assert plugin_rows["point"].split()[1:5] == ["trace-plugins-point", "0.1.0", "point", "="]


def test_help_lists_the_plugins_subcommand() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "plugins" in proc.stdout


def test_allow_list_environment_variable_is_honoured() -> None:
    listing = json.loads(run_cli("plugins", "--json", TRACE_TASKS_PLUGINS="bbox").stdout)
    assert [p["name"] for p in listing["plugins"]] == ["trace_tasks.builtin", "bbox"]
    listing = json.loads(run_cli("plugins", "--json", TRACE_TASKS_DISABLE_PLUGINS="trace-plugins-point,segment").stdout)
    assert [p["name"] for p in listing["plugins"]] == ["trace_tasks.builtin", "bbox"]
    listing = json.loads(run_cli("plugins", "--json", TRACE_TASKS_PLUGINS="").stdout)
    assert listing["annotation_types"] == {}


@pytest.mark.parametrize("as_json", [False, True])
def test_a_plugin_that_fails_to_import_exits_1_with_a_clear_message(tmp_path: Path, as_json: bool) -> None:
    site = fake_distribution(
        tmp_path, "trace-plugins-broken", "broken", "trace_plugins_broken",
        "raise ImportError('needs libfoo, which is not installed')\n",
    )
    proc = run_cli("plugins", *(["--json"] if as_json else []), pythonpath=site)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "could not load plugins" in proc.stderr and "PluginLoadError" in proc.stderr
    assert "'broken'" in proc.stderr and "trace-plugins-broken" in proc.stderr
    assert "needs libfoo" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_plugin_reusing_an_entry_point_name_exits_1(tmp_path: Path) -> None:
    site = fake_distribution(tmp_path, "trace-plugins-impostor", "bbox", "impostor_bbox", "")
    proc = run_cli("plugins", pythonpath=site)
    assert proc.returncode == 1
    assert "PluginConflictError" in proc.stderr and "'bbox'" in proc.stderr and "trace-plugins-impostor" in proc.stderr


def test_a_misspelled_hook_exits_1(tmp_path: Path) -> None:
    source = "from trace_tasks import hookimpl\n\n@hookimpl\ndef trace_parse_anotation(annotation_type, value):\n    return value\n"
    site = fake_distribution(tmp_path, "trace-plugins-typo", "typo", "typo_family", source)
    proc = run_cli("plugins", pythonpath=site)
    assert proc.returncode == 1
    assert "PluginValidationError" in proc.stderr and "trace_parse_anotation" in proc.stderr


def test_in_process_listing_marks_only_the_current_version(register: Any, capsys: pytest.CaptureFixture[str]) -> None:
    register(IntervalFamily(current=V1), "interval")
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    (row,) = [r for r in table_rows(out, "ANNOTATION TYPE") if r.startswith("interval ")]
    assert row.split(None, 2)[2] == f"{V0}, {V1}*"
    assert "(in-process)" in out and "hex_color" in out

    assert main(["plugins", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    (info,) = [p for p in listing["plugins"] if p["name"] == "interval"]
    assert info["reward_ids"] == [V0, V1] and info["current_reward_ids"] == [V1]
    assert info["distribution"] is None and info["answer_types"] == ["hex_color"]
    assert listing["annotation_types"]["interval"] == {"plugin": "interval", "reward_ids": [V0, V1], "current_reward_id": V1}
