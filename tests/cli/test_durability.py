"""Outputs that survive a crash and a second run (issue 37, items 1 and 5).

* Every output, Parquet included, is synced to disk before its name points at
  it, and ``--resume`` skips an existing output only when it reads to its end
  with one row per input row: a short or unreadable one is scored again, with
  a line saying so.
* A run holds a lock on its outputs: a second ``score`` on the same ``-o`` is
  refused with one line and exit 75, and the first run finishes untouched.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, ROOT, read_jsonl, run_cli, write_lines
from trace_tasks.runs._durable import DIRECTORY_LOCK, lock_output, lock_path
from trace_tasks.runs._errors import EXIT_LOCKED

ROWS: list[dict[str, Any]] = read_jsonl(COMBINED)


def _ok(proc: subprocess.CompletedProcess[bytes], code: int = 0) -> None:
    assert proc.returncode == code, proc.stderr.decode()


def _shards(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    write_lines(folder / "a.jsonl", ROWS[:30])
    write_lines(folder / "b.jsonl.gz", ROWS[30:70])
    return folder


# --- item 1: synced before the rename -------------------------------------------------------------


def _record_syncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record ("fsync", path) and ("replace", source) in order, passing each call on."""
    events: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def recording_replace(source: Any, target: Any) -> None:
        events.append(("replace", os.path.realpath(source)))
        replace(source, target)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    return events


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names a descriptor's file through /proc")
@pytest.mark.parametrize("name", ["out.parquet", "out.jsonl", "out.jsonl.gz"])
def test_every_output_is_synced_before_it_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    events = _record_syncs(monkeypatch)
    _ok(run_cli("score", str(COMBINED), "-o", str(tmp_path / name), "-q"))
    replaced = [path for kind, path in events if kind == "replace"]
    assert len(replaced) == 1 and os.path.basename(replaced[0]).startswith(f".{name}.")
    assert ("fsync", replaced[0]) in events[: events.index(("replace", replaced[0]))]


# --- item 1: --resume checks what it skips ------------------------------------------------------


def _cut_jsonl(path: Path) -> None:
    """Drop the last lines of an output, and end it mid-line (as a crash of the file system could)."""
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])


def test_resume_redoes_a_short_output_and_says_so(tmp_path: Path) -> None:
    folder, out = _shards(tmp_path), tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    whole = {name: (out / name).read_bytes() for name in ("a.jsonl", "b.jsonl.gz")}
    _cut_jsonl(out / "a.jsonl")
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")
    _ok(proc)
    err = proc.stderr.decode()
    assert f"resume: {out}/a.jsonl unreadable" in err and "scored again" in err, err
    assert "resume: 1 of 2 output(s) already complete, skipped" in err
    assert (out / "a.jsonl").read_bytes() == whole["a.jsonl"]


def test_resume_redoes_an_output_with_fewer_rows_than_its_input(tmp_path: Path) -> None:
    folder, out = _shards(tmp_path), tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    whole = gzip.decompress((out / "b.jsonl.gz").read_bytes())
    (out / "b.jsonl.gz").write_bytes(gzip.compress(b"".join(whole.splitlines(keepends=True)[:7])))
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")
    _ok(proc)
    assert f"resume: {out}/b.jsonl.gz holds 7 of the 40 rows of {folder}/b.jsonl.gz: scored again" in proc.stderr.decode()
    assert gzip.decompress((out / "b.jsonl.gz").read_bytes()) == whole


def test_resume_redoes_a_truncated_gzip_output(tmp_path: Path) -> None:
    folder, out = _shards(tmp_path), tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    data = (out / "b.jsonl.gz").read_bytes()
    (out / "b.jsonl.gz").write_bytes(data[: len(data) - 12])  # the gzip trailer and some data lost
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")
    _ok(proc)
    assert "b.jsonl.gz unreadable" in proc.stderr.decode()
    assert (out / "b.jsonl.gz").read_bytes() != data[: len(data) - 12]
    assert len(gzip.decompress((out / "b.jsonl.gz").read_bytes()).splitlines()) == 40


def test_resume_redoes_a_truncated_parquet_output(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist([{**row, "id": str(row.get("id"))} for row in _flat(ROWS[:20])]), folder / "p.parquet")
    out = tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    whole = pq.read_table(out / "p.parquet").to_pylist()
    data = (out / "p.parquet").read_bytes()
    (out / "p.parquet").write_bytes(data[: len(data) // 2])
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")
    _ok(proc)
    assert "p.parquet unreadable" in proc.stderr.decode() and "scored again" in proc.stderr.decode()
    assert pq.read_table(out / "p.parquet").to_pylist() == whole


def _flat(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with their instance fields as JSON text (Arrow cannot hold the mixed types of a JSON field)."""
    import json

    fields = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")
    return [{key: json.dumps(value) if key in fields else value for key, value in row.items()} for row in rows]


def test_resume_still_skips_a_whole_output(tmp_path: Path) -> None:
    folder, out = _shards(tmp_path), tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    stamp = (out / "a.jsonl").stat().st_mtime_ns, (out / "b.jsonl.gz").stat().st_mtime_ns
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")
    _ok(proc)
    assert "resume: 2 of 2 output(s) already complete, skipped" in proc.stderr.decode()
    assert "scored again" not in proc.stderr.decode()
    assert ((out / "a.jsonl").stat().st_mtime_ns, (out / "b.jsonl.gz").stat().st_mtime_ns) == stamp


# --- item 5: one run per output ------------------------------------------------------------------


#: A guard against a hang (the first run waits on its input), never a measure: it is met in well under a second.
_HANG_GUARD_SECONDS = 300


def _wait_until(done: Any, process: subprocess.Popen[bytes]) -> None:
    """Wait until ``done()`` (the first run holds its lock, has its temporary file); it exiting first is a failure."""
    deadline = time.monotonic() + _HANG_GUARD_SECONDS
    while not done():
        assert process.poll() is None, process.communicate()[1].decode()
        assert time.monotonic() < deadline, "the first run never got under way"
        time.sleep(0.02)


def test_a_second_run_on_the_same_output_file_is_refused_and_the_first_finishes(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    # The first run reads its input from a pipe this test holds open: it is mid-run, its temporary file made.
    first = subprocess.Popen(
        [sys.executable, "-m", "trace_tasks.cli", "score", "-", "-o", str(out), "-q"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        lock = Path(lock_path(str(out), directory=False))
        _wait_until(lambda: lock.exists() and any(name.endswith(".tmp") for name in os.listdir(tmp_path)), first)
        temporaries = sorted(name for name in os.listdir(tmp_path) if name.endswith(".tmp"))
        second = run_cli("score", str(COMBINED), "-o", str(out))
        err = second.stderr.decode()
        assert second.returncode == EXIT_LOCKED == 75, err
        assert err.count("\n") == 1 and err.startswith("trace-tasks score: error: another run is writing"), err
        assert sorted(name for name in os.listdir(tmp_path) if name.endswith(".tmp")) == temporaries  # untouched
        _, first_err = first.communicate(COMBINED.read_bytes())
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, first_err.decode()
    assert len(read_jsonl(out)) == len(ROWS)
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]  # no temporary, no lock file left


def test_a_second_run_on_the_same_output_directory_is_refused(tmp_path: Path) -> None:
    folder, out = _shards(tmp_path), tmp_path / "out"
    out.mkdir()
    held, release = threading.Event(), threading.Event()

    def first_run() -> None:
        with lock_output(str(out), directory=True):
            held.set()
            release.wait()

    thread = threading.Thread(target=first_run)
    thread.start()
    try:
        held.wait()
        (out / ".a.jsonl.0123abcd.tmp").write_text("the first run's shard, half written\n")
        proc = run_cli("score", str(folder), "-o", str(out), "--resume")
        assert proc.returncode == 75, proc.stderr.decode()
        assert f"another run is writing {out}" in proc.stderr.decode()
        assert (out / ".a.jsonl.0123abcd.tmp").exists()  # the first run's temporary file is left alone
        assert not (out / "a.jsonl").exists()
    finally:
        release.set()
        thread.join()
    assert not (out / DIRECTORY_LOCK).exists()
    _ok(run_cli("score", str(folder), "-o", str(out), "-q"))  # once the first is done, the next run goes on
    assert sorted(os.listdir(out)) == ["a.jsonl", "b.jsonl.gz"]


@pytest.mark.parametrize("output", ["/dev/null", "/dev/stdout"])
def test_a_device_or_stream_output_is_not_locked(output: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_lock(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a lock file beside {output} was asked for")

    monkeypatch.setattr("trace_tasks.runs._plan.lock_output", no_lock)  # nothing is made under /dev
    proc = run_cli("score", str(COMBINED), "-o", output, "-q")
    assert proc.returncode == 0, proc.stderr.decode()
