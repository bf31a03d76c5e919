"""The ordinary events through real processes: a real Ctrl-C, real pipes closed early, a real full device.

``test_events.py`` covers each event in-process; these prove what only a
process shows: no traceback from Python's own flush at exit, no
``Exception ignored`` message, the exit status a shell sees.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, ROOT, instance, write_lines

pytestmark = pytest.mark.slow

MODULE = [sys.executable, "-m", "trace_tasks.cli"]
TIMEOUT_S = 120


def _read_one_line_and_close(args: list[str]) -> tuple[int, bytes]:
    """``trace-tasks ARGS | head -1``: read one line, close the pipe, return the exit status and stderr."""
    proc = subprocess.Popen([*MODULE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=TIMEOUT_S), err


def test_validate_into_a_closed_pipe(tmp_path: Path) -> None:
    # Far more output than a pipe holds (64 KiB), so the writes meet the closed pipe.
    bad = write_lines(tmp_path / "bad.jsonl", [instance(f"z{i}", value=(5, 0, 5, 10)) for i in range(3000)])
    code, err = _read_one_line_and_close(["validate", str(bad)])
    assert (code, err) == (141, b"")


def test_score_into_a_closed_pipe(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(COMBINED.read_bytes() * 10)
    code, err = _read_one_line_and_close(["score", str(big), "-q"])
    assert (code, err) == (141, b"")


def test_plugins_json_into_a_full_device() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([*MODULE, "plugins", "--json"], stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=TIMEOUT_S)
    assert done.returncode == 74
    assert done.stderr.decode() == "trace-tasks plugins: error: writing output failed: standard output: No space left on device\n"


def test_validate_into_its_own_input_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(INSTANCES.read_bytes())
    with open(path, "a") as same:  # '>>': the file is not emptied, so its bytes show nothing was written
        done = subprocess.run([*MODULE, "validate", str(path)], stdout=same, stderr=subprocess.PIPE, cwd=ROOT, timeout=TIMEOUT_S)
    assert done.returncode == 2
    assert b"standard output is the same file as the input FILE" in done.stderr
    assert path.read_bytes() == INSTANCES.read_bytes()


def _answer_sigint() -> None:
    """In the child before it runs: SIGINT's default action, whatever the suite's process inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_score_is_one_line_and_130(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    out.write_text("old\n")
    # Its own process group, signalled as a terminal's Ctrl-C is: every process in the group gets SIGINT. A terminal's
    # command answers SIGINT; one started by a suite running in the background of a non-interactive shell (nohup,
    # `cmd &`) would inherit SIGINT ignored, so the child gets it back (and a hang fails after TIMEOUT_S, not never).
    proc = subprocess.Popen(
        [*MODULE, "score", "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
        preexec_fn=_answer_sigint,
    )
    assert proc.stdin is not None and proc.stderr is not None
    try:
        proc.stdin.write(COMBINED.read_bytes() * 20)
        proc.stdin.flush()  # stdin stays open: the command is waiting for more lines when the signal comes
        deadline = time.monotonic() + 60
        while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):  # it has started writing its output
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=TIMEOUT_S)  # its one line fits in the pipe: read once it has exited
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    assert (code, err) == (130, b"trace-tasks score: interrupted\n")
    assert out.read_text() == "old\n"
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_output_to_dev_stdout_redirected_to_a_file_is_written_in_place(tmp_path: Path) -> None:
    # /dev/stdout names the redirected file: not "the same file as standard output", and not renamed over.
    target = tmp_path / "scores.jsonl"
    with open(target, "w") as fh:
        done = subprocess.run(
            [*MODULE, "score", str(COMBINED), "-o", "/dev/stdout", "-q"],
            stdout=fh,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=TIMEOUT_S,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert len(target.read_bytes().splitlines()) == 108
