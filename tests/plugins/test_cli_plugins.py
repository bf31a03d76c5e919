"""``trace-tasks plugins``: the command in-process, plus the console script once for start-up selection.

A broken or conflicting plugin is simulated the way a real one arrives: a
``*.dist-info`` folder with an ``entry_points.txt`` first on the path, which
``importlib.metadata`` finds like any installed distribution. The
``TRACE_TASKS_PLUGINS`` filters are checked through the real console script
started with them in its environment. Any plugin error, in any subcommand, is
one line ``trace-tasks: error: <ErrorClass>: <message>`` and exit code 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trace_tasks import __version__
from trace_tasks._build import build_to_json, describe_build
from trace_tasks.cli import main

from ..cli.helpers import run_cli as run_in_process
from ..support.resolver_table import FAMILY, RESOLVER_TABLE
from .interval_family import V0, V1, IntervalFamily
from .test_family_kit import GIOU_SRC, Toy

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
    """``trace-tasks ARGS`` in-process (text out), with no ``TRACE_TASKS_*`` variable but ``env``, ``pythonpath`` first on the path."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("TRACE_TASKS_")}
    done = run_in_process(*args, pythonpath=pythonpath, env={**unset, **env})
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def run_console_script(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``trace-tasks`` started with ``env`` (and no other ``TRACE_TASKS_*`` or ``PYTHONPATH``)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_TASKS_") and k != "PYTHONPATH"}
    full_env.update(env)
    return subprocess.run([_console_script(), *args], capture_output=True, text=True, timeout=120, env=full_env)


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


HOOKS = {
    "trace_annotation_types", "trace_parse_annotation", "trace_resolve_reward_id", "trace_score_annotation",
    "trace_explain_annotation", "trace_draw_annotation", "trace_native_annotation", "trace_scale_annotation",
    "trace_frame_annotation", "trace_reread_annotation",
}  # fmt: skip
#: The box family also declares its click versions of ``bbox`` (issue 39): their own prediction form needs a RewardIdSpec.
CLICK_IDS = ["bbox_click_hit_v0", "bbox_click_soft_v0"]


def _one_error_line(proc: subprocess.CompletedProcess[str], error: str) -> str:
    """The single stderr line of a plugin error (no traceback), after checking exit 1 and empty stdout."""
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"trace-tasks: error: {error}: "), line
    return line


#: The official families offer one more version for their sequence types, pinnable only (issue 37, item 19).
OFFERED = {
    "bbox": CLICK_IDS,
    "bbox_sequence": ["bbox_sequence_aligned_iou_v0"],
    "point_sequence": ["point_sequence_aligned_distance_v0"],
}


def test_json_lists_the_installed_families() -> None:
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    assert set(listing) == {
        "trace_core", "plugins", "annotation_types", "pins", "added_reward_ids", "orphan_reward_ids", "problems",
        "answer_types",
    }  # fmt: skip
    assert listing["trace_core"] == {"version": __version__, **build_to_json()}
    by_name = {p["name"]: p for p in listing["plugins"]}
    assert by_name["trace_tasks.builtin"]["answer_types"] == [
        "integer",
        "number",
        "string",
        "boolean",
        "option_letter",
        "pi_expression",
        "index_list",
        "matrix",
    ]
    assert sorted(p["distribution"] for p in listing["plugins"] if p["distribution"]) == OFFICIAL
    for info in listing["plugins"]:
        assert set(info) == {
            "name",
            "distribution",
            "version",
            "entry_point",
            "annotation_types",
            "reward_ids",
            "answer_types",
            "hooks",
            "current_reward_ids",
        }
        if info["distribution"]:
            assert info["entry_point"].startswith(f"{info['name']} = ")
            extra = {"trace_reward_ids"} if info["distribution"] == "trace-plugins-bbox" else set()
            assert set(info["hooks"]) == HOOKS | extra
            assert sorted(info["annotation_types"]) == sorted(t for t in RESOLVER_TABLE if FAMILY[t] == info["distribution"])
    assert listing["annotation_types"] == {
        t: {"plugin": FAMILY[t].rsplit("-", 1)[-1], "reward_ids": [rid, *OFFERED.get(t, [])], "default_reward_id": rid,
            "current_reward_id": rid, "pinned_by": None}
        for t, rid in RESOLVER_TABLE.items()
    }  # fmt: skip
    assert listing["pins"] == {} and listing["added_reward_ids"] == {}
    assert listing["orphan_reward_ids"] == {} and listing["problems"] == []


def test_human_tables_list_plugins_types_and_current_ids() -> None:
    proc = run_cli("plugins")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"trace-core {__version__}, {describe_build()}\n4 plugins, 12 annotation types, 8 answer types\n")
    assert "PLUGIN" in out and "ANNOTATION TYPE" in out and "ANSWER TYPE" in out
    assert "ADDED REWARD ID" not in out and "PROBLEMS" not in out
    (header,) = [line for line in out.splitlines() if line.startswith("ANNOTATION TYPE")]
    assert re.split(r"\s{2,}", header) == [
        "ANNOTATION TYPE",
        "OWNER",
        "DEFAULT ID",
        "CURRENT ID",
        "PINNED BY",
        "REWARD IDS (* = current)",
    ]
    type_rows = {row.split()[0]: row.split() for row in table_rows(out, "ANNOTATION TYPE")}
    assert set(type_rows) == set(RESOLVER_TABLE)
    for annotation_type, reward_id in RESOLVER_TABLE.items():
        owner = FAMILY[annotation_type].rsplit("-", 1)[-1]
        # owner, default id, current id, pinned by, every registered id (* = current)
        ids = [f"{reward_id}*", *OFFERED.get(annotation_type, [])]
        assert type_rows[annotation_type][1:] == [owner, reward_id, reward_id, "-", *", ".join(ids).split()]
    plugin_rows = {row.split()[0]: row for row in table_rows(out, "PLUGIN")}
    assert set(plugin_rows) == {"trace_tasks.builtin", "bbox", "point", "segment"}
    assert plugin_rows["point"].split()[1:5] == ["trace-plugins-point", "0.1.0", "point", "="]


def test_pins_are_shown_with_what_set_them() -> None:
    proc = run_cli("plugins", TRACE_TASKS_REWARD_IDS="bbox=bbox_soft_iou_v0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == "4 plugins, 12 annotation types, 8 answer types, 1 pinned"
    (row,) = [r.split() for r in table_rows(proc.stdout, "ANNOTATION TYPE") if r.startswith("bbox ")]
    assert row == [
        "bbox", "bbox", "bbox_soft_iou_v0", "bbox_soft_iou_v0", "TRACE_TASKS_REWARD_IDS", "bbox_soft_iou_v0*,",
        "bbox_click_hit_v0,", "bbox_click_soft_v0",
    ]  # fmt: skip
    listing = json.loads(run_cli("plugins", "--json", TRACE_TASKS_REWARD_IDS="bbox=bbox_soft_iou_v0").stdout)
    assert listing["pins"] == {"bbox": {"reward_id": "bbox_soft_iou_v0", "pinned_by": "TRACE_TASKS_REWARD_IDS"}}
    assert listing["annotation_types"]["bbox"]["pinned_by"] == "TRACE_TASKS_REWARD_IDS"
    assert listing["annotation_types"]["point"]["pinned_by"] is None


def test_help_lists_the_plugins_subcommand() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "plugins" in proc.stdout
    proc = run_cli("plugins", "--help")
    assert proc.returncode == 0 and "--check" in proc.stdout


@pytest.mark.slow  # three processes: the filters are set before the command starts
def test_allow_list_environment_variable_is_honoured() -> None:
    listing = json.loads(run_console_script("plugins", "--json", TRACE_TASKS_PLUGINS="bbox").stdout)
    assert [p["name"] for p in listing["plugins"]] == ["trace_tasks.builtin", "bbox"]
    listing = json.loads(
        run_console_script("plugins", "--json", TRACE_TASKS_DISABLE_PLUGINS="trace-plugins-point,segment").stdout
    )
    assert [p["name"] for p in listing["plugins"]] == ["trace_tasks.builtin", "bbox"]
    listing = json.loads(run_console_script("plugins", "--json", TRACE_TASKS_PLUGINS="").stdout)
    assert listing["annotation_types"] == {}


@pytest.mark.parametrize("args", [["plugins"], ["plugins", "--json"], ["plugins", "--check"]], ids=" ".join)
def test_a_plugin_that_fails_to_import_exits_1_with_a_clear_message(tmp_path: Path, args: list[str]) -> None:
    site = fake_distribution(
        tmp_path,
        "trace-plugins-broken",
        "broken",
        "trace_plugins_broken",
        "raise ImportError('needs libfoo, which is not installed')\n",
    )
    line = _one_error_line(run_cli(*args, pythonpath=site), "PluginLoadError")
    assert "'broken'" in line and "trace-plugins-broken" in line
    assert "needs libfoo" in line and "TRACE_TASKS_DISABLE_PLUGINS=broken" in line


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "examples/data/instances.jsonl"],
        ["score", "examples/data/combined.jsonl", "-q"],
        ["explain", "--instance", "examples/data/combined.jsonl", "--line", "1"],
    ],
    ids=lambda args: args[0],
)
def test_a_plugin_error_is_one_line_in_every_subcommand(args: list[str]) -> None:
    line = _one_error_line(run_cli(*args, TRACE_TASKS_REWARD_IDS="bbox=bbox_giou_v1"), "RewardPinError")
    assert "TRACE_TASKS_REWARD_IDS pins bbox=bbox_giou_v1, but no installed plugin declares it" in line


def test_a_plugin_reusing_an_entry_point_name_exits_1(tmp_path: Path) -> None:
    # A real plugin (one hook), so the name clash, not an empty module, is what fails.
    source = "from trace_tasks import hookimpl\n\n@hookimpl\ndef trace_answer_types():\n    return []\n"
    site = fake_distribution(tmp_path, "trace-plugins-impostor", "bbox", "impostor_bbox", source)
    line = _one_error_line(run_cli("plugins", pythonpath=site), "PluginConflictError")
    assert "two plugins use the entry-point name 'bbox'" in line
    assert "trace-plugins-impostor" in line and "trace-plugins-bbox" in line
    assert "TRACE_TASKS_DISABLE_PLUGINS=bbox" in line


def test_a_misspelled_hook_exits_1(tmp_path: Path) -> None:
    source = (
        "from trace_tasks import hookimpl\n\n@hookimpl\ndef trace_parse_anotation(annotation_type, value):\n    return value\n"
    )
    site = fake_distribution(tmp_path, "trace-plugins-typo", "typo", "typo_family", source)
    line = _one_error_line(run_cli("plugins", pythonpath=site), "PluginValidationError")
    assert "trace_parse_anotation" in line and "did you mean 'trace_parse_annotation'" in line


def test_in_process_listing_marks_only_the_current_version(register: Any, capsys: pytest.CaptureFixture[str]) -> None:
    register(IntervalFamily(current=V1), "interval")
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    (row,) = [r for r in table_rows(out, "ANNOTATION TYPE") if r.startswith("interval ")]
    assert row.split(None, 5)[1:] == ["interval", V1, V1, "-", f"{V0}, {V1}*"]
    assert "(in-process)" in out and "hex_color" in out

    assert main(["plugins", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    (info,) = [p for p in listing["plugins"] if p["name"] == "interval"]
    assert info["reward_ids"] == [V0, V1] and info["current_reward_ids"] == [V1]
    assert info["distribution"] is None and info["answer_types"] == ["hex_color"]
    assert listing["annotation_types"]["interval"] == {
        "plugin": "interval", "reward_ids": [V0, V1], "default_reward_id": V1, "current_reward_id": V1, "pinned_by": None,
    }  # fmt: skip


def test_reward_ids_added_by_another_plugin_are_listed(
    register: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(GIOU_SRC))
    import trace_plugins_bbox_giou.plugin as giou

    register(giou.rewards, "bbox_giou")
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert table_rows(out, "ADDED REWARD ID") == ["bbox_giou_v1     bbox             bbox_giou    bbox   no"]
    (row,) = [r for r in table_rows(out, "ANNOTATION TYPE") if r.startswith("bbox ")]
    assert row.split(None, 5)[1:] == [
        "bbox",
        "bbox_soft_iou_v0",
        "bbox_soft_iou_v0",
        "-",
        "bbox_soft_iou_v0*, bbox_click_hit_v0, bbox_click_soft_v0, bbox_giou_v1",
    ]

    assert main(["plugins", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    added = listing["added_reward_ids"]
    assert list(added) == ["bbox_giou_v1"]
    assert {k: added["bbox_giou_v1"][k] for k in ("annotation_type", "plugin", "owner", "current")} == {
        "annotation_type": "bbox", "plugin": "bbox_giou", "owner": "bbox", "current": False,
    }  # fmt: skip
    (info,) = [p for p in listing["plugins"] if p["name"] == "bbox_giou"]
    assert info["reward_ids"] == ["bbox_giou_v1"] and info["annotation_types"] == [] and info["current_reward_ids"] == []

    monkeypatch.setenv("TRACE_TASKS_REWARD_IDS", "bbox=bbox_giou_v1")
    from trace_tasks.plugins import reset_registry

    reset_registry()
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert table_rows(out, "ADDED REWARD ID")[0].split()[-1] == "yes"
    (row,) = [r for r in table_rows(out, "ANNOTATION TYPE") if r.startswith("bbox ")]
    assert row.split(None, 5)[1:] == [
        "bbox", "bbox_soft_iou_v0", "bbox_giou_v1", "TRACE_TASKS_REWARD_IDS", "bbox_soft_iou_v0, bbox_click_hit_v0, bbox_click_soft_v0, bbox_giou_v1*",
    ]  # fmt: skip


def test_check_passes_on_the_installed_families() -> None:
    proc = run_cli("plugins", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        proc.stdout
        == "OK: 12 annotation types, 16 reward ids, 4 plugins checked by the family test kit (trace_tasks.family.check_family), no problems\n"
    )
    report = json.loads(run_cli("plugins", "--check", "--json").stdout)
    assert report == {"ok": True, "checked": {"annotation_types": 12, "reward_ids": 16, "plugins": 4}, "problems": []}


def test_check_prints_each_problem_on_one_line_and_exits_1(register: Any, capsys: pytest.CaptureFixture[str]) -> None:
    register(Toy("half"), "toy")
    assert main(["plugins", "--check"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "toy toy_v0: self-score: example #0 scores 0.5 against itself, expected 1.0",
        "toy toy_v0: self-score: example #1 scores 0.5 against itself, expected 1.0",
        "toy_set toy_set_v0: self-score: example #0 scores 0.5 against itself, expected 1.0",
        "toy_seq toy_seq_v0: self-score: example #0 scores 0.5 against itself, expected 1.0",
    ]
    assert err.startswith("trace-tasks plugins --check: 4 problems")
    assert main(["plugins", "--check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["checked"]["annotation_types"] == 15
    assert report["problems"][0] == {
        "annotation_type": "toy", "reward_id": "toy_v0", "check": "self-score",
        "message": "example #0 scores 0.5 against itself, expected 1.0",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("def trace_annotation_types():\n    raise RuntimeError('boom at load')\n", "raised RuntimeError: boom at load"),
        ("def trace_annotation_types():\n    return next(iter([]))\n", "raised StopIteration"),
        (
            "def trace_annotation_types():\n    from trace_tasks.plugins import AnnotationTypeSpec\n"
            "    return AnnotationTypeSpec('x', ('x_v0',))\n",
            "expected a list of AnnotationTypeSpec",
        ),
        ("def trace_answer_types():\n    yield 1 / 0\n", "raised ZeroDivisionError"),
        ("def trace_resolve_reward_id(annotation_type):\n    raise KeyError(annotation_type)\n", "raised KeyError"),
    ],
    ids=["raises", "stop_iteration", "one_record", "generator_raises", "resolve_raises"],
)
def test_a_hook_failing_while_the_plugins_load_is_one_line_naming_the_plugin(tmp_path: Path, body: str, said: str) -> None:
    # A plugin's exception at load time stopped every command with a traceback naming neither it nor the fix.
    source = "from trace_tasks import hookimpl\n\n@hookimpl\n" + body
    site = fake_distribution(tmp_path, "trace-plugins-broken", "broken", "broken_family", source)
    for args in (["plugins"], ["validate", "examples/data/instances.jsonl"]):
        line = _one_error_line(run_cli(*args, pythonpath=site), "PluginValidationError")
        assert "plugin 'broken'" in line and said in line and "TRACE_TASKS_DISABLE_PLUGINS=broken" in line
    assert (
        run_cli("validate", "examples/data/instances.jsonl", pythonpath=site, TRACE_TASKS_DISABLE_PLUGINS="broken").returncode
        == 0
    )
