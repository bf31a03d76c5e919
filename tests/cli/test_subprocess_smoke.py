"""The installed command end to end: one real process per subcommand.

Every other CLI test runs ``trace_tasks.cli.main`` in-process (``helpers.run_cli``).
These start the ``trace-tasks`` console script, or ``python -m trace_tasks.cli``,
the way a user does, and compare with the in-process result where there is one:
the entry points, real pipes, exit statuses and encodings are the real ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, ROOT, read_jsonl, run_cli
from trace_tasks import __version__
from trace_tasks._build import describe_build

pytestmark = pytest.mark.slow

TIMEOUT_S = 120


def console_script() -> str:
    """The ``trace-tasks`` script installed beside this interpreter (the workspace venv)."""
    beside = Path(sys.executable).parent / ("trace-tasks.exe" if os.name == "nt" else "trace-tasks")
    if beside.exists():
        return str(beside)
    found = shutil.which("trace-tasks")
    assert found, "the trace-tasks console script is not installed in this environment (run `uv sync`)"
    return found


def run(command: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command, input=stdin, capture_output=True, timeout=TIMEOUT_S, cwd=ROOT, check=False)


MODULE = [sys.executable, "-m", "trace_tasks.cli"]


def test_version() -> None:
    done = run([console_script(), "--version"])
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == f"trace-tasks {__version__}, {describe_build()}"


def test_no_subcommand_prints_help_and_exits_2() -> None:
    done = run(MODULE)
    assert done.returncode == 2
    assert b"score" in done.stderr and b"plugins" in done.stderr


def test_score_file_to_stdout_matches_in_process() -> None:
    done = run([console_script(), "score", str(COMBINED), "-q"])
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == run_cli("score", str(COMBINED), "-q").stdout
    assert len(read_jsonl(done.stdout)) == 108


def test_score_streams_through_real_pipes() -> None:
    """``python -m``, stdin kept open: scores come out before the input ends."""
    rows = read_jsonl(COMBINED)
    first = b"".join(json.dumps(rows[i % len(rows)]).encode() + b"\n" for i in range(3000))
    proc = subprocess.Popen(
        [*MODULE, "score", "-", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    out_lines: list[bytes] = []
    first_line = threading.Event()

    def read_all() -> None:  # keep draining stdout so the child never blocks on a full pipe
        for line in proc.stdout:  # type: ignore[union-attr]
            out_lines.append(line)
            first_line.set()

    def write_without_closing() -> None:
        proc.stdin.write(first)  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    reader = threading.Thread(target=read_all, daemon=True)
    writer = threading.Thread(target=write_without_closing, daemon=True)
    reader.start()
    writer.start()
    try:
        # A deadlock guard, not a speed check: without streaming no line would ever come.
        assert first_line.wait(timeout=TIMEOUT_S), "no output before the end of the input"
        assert json.loads(out_lines[0])["line"] == 1
    finally:
        writer.join(timeout=TIMEOUT_S)
        proc.stdin.close()
        reader.join(timeout=TIMEOUT_S)
        proc.wait(timeout=TIMEOUT_S)
    assert proc.returncode == 0
    assert len(out_lines) == 3000


def test_validate_from_stdin() -> None:
    done = run([*MODULE, "validate", "-"], stdin=INSTANCES.read_bytes())
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert done.stdout == run_cli("validate", "-", stdin=INSTANCES.read_bytes()).stdout


def test_explain_text_report() -> None:
    done = run([console_script(), "explain", "--instance", str(COMBINED), "--line", "1"])
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout and done.stdout == run_cli("explain", "--instance", str(COMBINED), "--line", "1").stdout


def test_plugins_json() -> None:
    done = run([console_script(), "plugins", "--json"])
    assert done.returncode == 0, done.stderr.decode()
    listing = json.loads(done.stdout)
    assert {"bbox", "point", "segment"} <= {p["name"] for p in listing["plugins"]}
    assert listing == json.loads(run_cli("plugins", "--json").stdout)


def test_serve_help() -> None:
    # Serving for real (uvicorn, a port, a request) is tests/integrations/test_server.py::test_cli_serve_subprocess.
    done = run([*MODULE, "serve", "--help"])
    assert done.returncode == 0, done.stderr.decode()
    assert b"--max-request-bytes" in done.stdout
