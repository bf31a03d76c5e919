"""Ordinary events end in one line on stderr and the documented exit code, never a traceback.

In-process (``run_cli``): closed pipes and full disks are stand-in streams
whose writes fail as the real ones do. The same events through real pipes,
signals and devices are in ``test_subprocess_events.py``.
"""

from __future__ import annotations

import errno
import gzip
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, FailingSink, run_cli, write_lines
from trace_tasks.runs import _engine, _jsonl


def _one_line(stderr: bytes) -> str:
    lines = stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


def _full() -> FailingSink:
    return FailingSink(OSError(errno.ENOSPC, "No space left on device"))


def _closed() -> FailingSink:
    return FailingSink(BrokenPipeError(errno.EPIPE, "Broken pipe"))


# --- closed pipes: quiet, exit 141 ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(INSTANCES), str(COMBINED)],
        ["score", str(COMBINED), "-q"],
        ["plugins"],
        ["plugins", "--json"],
        ["explain", "--instance", str(INSTANCES), "--line", "1", "--response", "2"],
    ],
    ids=["validate", "score", "plugins", "plugins-json", "explain"],
)
def test_a_closed_pipe_ends_quietly_with_141(args: list[str]) -> None:
    proc = run_cli(*args, stdout=_closed())
    assert proc.returncode == 141
    assert proc.stderr == b""


# --- full disks: "writing output failed", exit 74 --------------------------------------------------


@pytest.mark.parametrize(
    "args", [["plugins", "--json"], ["plugins"], ["validate", str(INSTANCES)], ["score", str(COMBINED), "-q"]]
)
def test_a_full_disk_on_standard_output_says_writing_failed(args: list[str]) -> None:
    proc = run_cli(*args, stdout=_full())
    assert proc.returncode == 74
    line = _one_line(proc.stderr)
    assert line == f"trace-tasks {args[0]}: error: writing output failed: standard output: No space left on device"


def test_a_full_disk_on_an_output_file_says_writing_failed(tmp_path: Path) -> None:
    proc = run_cli("score", str(COMBINED), "-o", "/dev/full", "-q")
    assert proc.returncode == 74
    assert _one_line(proc.stderr) == "trace-tasks score: error: writing output failed: /dev/full: No space left on device"
    proc = run_cli("score", str(COMBINED), "-o", str(tmp_path / "s.jsonl"), "--summary-json", "/dev/full", "-q")
    assert proc.returncode == 74 and "writing output failed: /dev/full" in _one_line(proc.stderr)


def test_a_truncated_gzip_input_says_reading_failed_and_keeps_the_output(tmp_path: Path) -> None:
    whole = gzip.compress(COMBINED.read_bytes() * 5)
    broken = tmp_path / "in.jsonl.gz"
    broken.write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    proc = run_cli("score", str(broken), "-o", str(out), "-q")
    assert proc.returncode == 74
    line = _one_line(proc.stderr)
    assert line.startswith(f"trace-tasks score: error: reading input failed: {broken}: Compressed file ended")
    assert out.read_text() == "old\n"


# --- inputs and outputs that cannot be opened: exit 2 ----------------------------------------------


def test_an_empty_directory_as_input_is_a_usage_error_like_a_missing_file_for_validate(tmp_path: Path) -> None:
    # validate takes what score takes: a directory of shards; one holding none is a usage error
    proc = run_cli("validate", str(tmp_path))
    assert proc.returncode == 2
    assert _one_line(proc.stderr).startswith(f"trace-tasks validate: error: directory {tmp_path} holds no input files")
    missing = tmp_path / "missing.jsonl"
    proc = run_cli("validate", str(missing))
    assert proc.returncode == 2
    assert _one_line(proc.stderr) == f"trace-tasks validate: error: cannot open {missing}: No such file or directory"


def test_score_reads_a_directory_and_refuses_an_empty_one_or_a_missing_file(tmp_path: Path) -> None:
    # score takes a directory of shards (tests/cli/test_shards.py); one holding none is a usage error.
    (tmp_path / "notes.txt").write_text("not a shard\n")
    proc = run_cli("score", str(tmp_path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert _one_line(proc.stderr).startswith(f"trace-tasks score: error: directory {tmp_path} holds no input files (looked for ")
    missing = tmp_path / "missing.jsonl"
    proc = run_cli("score", str(missing))
    assert (proc.returncode, _one_line(proc.stderr)) == (
        2,
        f"trace-tasks score: error: cannot open {missing}: No such file or directory",
    )


def test_a_directory_as_output_names_the_output(tmp_path: Path) -> None:
    # `score -o DIR` writes one output per shard there (tests/cli/test_shards.py); other outputs must be files.
    proc = run_cli("score", str(COMBINED), "-o", str(tmp_path), "-q")
    assert proc.returncode == 0 and (tmp_path / "combined.jsonl").is_file()
    proc = run_cli("score", str(COMBINED), "--summary-json", str(tmp_path), "-q")
    assert proc.returncode == 2 and f"cannot write {tmp_path}" in _one_line(proc.stderr)
    proc = run_cli("score", str(COMBINED), "-o", str(tmp_path / "missing" / "out.jsonl"), "-q")
    assert proc.returncode == 2 and "No such file or directory" in _one_line(proc.stderr)


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A file whose opening fails with EACCES (as root, a mode of 000 would not stop the test's reads)."""
    path = write_lines(tmp_path / "locked.jsonl", ["{}"])

    def fake_open(name: str, mode: str = "r", *args: object, **kwargs: object) -> object:
        if str(name) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(name))
        return open(name, mode, *args, **kwargs)

    monkeypatch.setattr(_jsonl, "open", fake_open, raising=False)
    yield path


@pytest.mark.parametrize("command", ["score", "validate"])
def test_an_unreadable_input_is_a_usage_error(command: str, unreadable: Path) -> None:
    proc = run_cli(command, str(unreadable))
    assert proc.returncode == 2
    assert _one_line(proc.stderr) == f"trace-tasks {command}: error: cannot open {unreadable}: Permission denied"


# --- ports in use: exit 2 -------------------------------------------------------------------------


def test_serve_on_a_port_in_use_is_one_line_and_exit_2() -> None:
    pytest.importorskip("uvicorn", reason="trace-tasks serve needs the server extra: uv sync --all-extras")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run_cli("serve", "--port", str(port))
    assert proc.returncode == 2
    assert _one_line(proc.stderr) == f"trace-tasks serve: error: cannot listen on 127.0.0.1:{port}: Address already in use"


# --- interrupts -----------------------------------------------------------------------------------


def test_pool_workers_leave_ctrl_c_to_the_parent() -> None:
    before = signal.getsignal(signal.SIGINT)
    try:
        _engine.ignore_interrupts()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_validate_reports_a_truncated_gzip_as_a_problem_and_goes_on(tmp_path: Path) -> None:
    whole = gzip.compress(INSTANCES.read_bytes())
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(whole[: len(whole) // 2])
    proc = run_cli("validate", str(broken), str(INSTANCES))
    assert proc.returncode == 1 and proc.stderr == b""
    out = proc.stdout.decode().splitlines()
    assert any(line.startswith(f"reading input failed: {broken}: Compressed file ended") for line in out)
    assert " checked in 2 files: 1 problem on 1 line, " in out[-1]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["score", str(COMBINED), "--workers", "0"], "trace-tasks score: error: argument --workers: expected a positive integer"),
        (["score", str(COMBINED), "--engine", "spark"], "trace-tasks score: error: argument --engine: invalid choice"),
        (["score", str(COMBINED), "--format-weight", "abc"], "trace-tasks score: error: argument --format-weight"),
        (["score"], "trace-tasks score: error: the following arguments are required: INPUT"),
        (["bogus"], "trace-tasks: error: argument COMMAND: invalid choice: 'bogus'"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(args: list[str], said: str) -> None:
    # argparse printed its usage block first (13 lines for score).
    done = run_cli(*args)
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert line.startswith(said) and line.endswith("--help)"), line


@pytest.mark.parametrize(
    ("args", "label"),
    [
        (["score", str(COMBINED), "-o", ""], "--output"),  # wrote to standard output
        (["score", str(COMBINED), "-o", "-", "--summary-json", ""], "--summary-json"),  # said "it is a directory"
        (["score", ""], "INPUT"),
    ],
)
def test_an_empty_file_name_is_refused(args: list[str], label: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 2 and done.stdout == b""
    assert (
        _one_line(done.stderr)
        == f"trace-tasks score: error: {label} is an empty name: give a file name, or - for standard input or output"
    )
