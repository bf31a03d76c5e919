"""What a ``score_trace_batch`` caller killed with SIGKILL leaves behind: no child, and chunk files for a while only.

The caller cannot clean up after SIGKILL (the out-of-memory killer sends it),
so the pool's child notices that its parent is gone and exits, and the next
pool start anywhere removes the dead caller's chunk files once they are a
minute old (:func:`trace_tasks.data._batch.remove_stale_files`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.support.processes import alive, pool_children
from trace_tasks import score_trace_batch
from trace_tasks.data import _batch as batch_module

from .test_score_trace_batch import make_items

#: Bounded waits (seconds): the child must be gone well within this of its parent's death.
CHILD_EXIT_WAIT_S = 30.0
START_WAIT_S = 120.0


@pytest.fixture
def no_pools() -> Iterator[None]:
    batch_module.shutdown_batch_pools()
    yield
    batch_module.shutdown_batch_pools()


def _chunk_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(batch_module.CHUNK_PREFIX))


def _backdate(paths: list[Path], seconds: float) -> None:
    past = time.time() - seconds
    for path in paths:
        os.utime(path, (past, past))


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(done.stdout)


# --- the stale-file sweep, in-process -----------------------------------------------------------


def test_the_chunk_files_name_their_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    class Pool:
        def submit(self, *args: object) -> Future[None]:
            return Future()

    handout = batch_module._hand_out(Pool(), 1, make_items(2), {})  # type: ignore[arg-type]
    assert handout is not None
    assert Path(handout.path).name.startswith(f"{batch_module.CHUNK_PREFIX}{os.getpid()}_")
    handout.remove_files()


def test_only_old_files_of_dead_callers_are_removed(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getppid()
    prefix = batch_module.CHUNK_PREFIX
    names = {
        "dead_old": f"{prefix}{dead}_abc.pickle",
        "dead_old_out": f"{prefix}{dead}_abc.pickle.out",
        "dead_new": f"{prefix}{dead}_new.pickle",
        "alive_old": f"{prefix}{alive}_abc.pickle",
        "mine_old": f"{prefix}{os.getpid()}_abc.pickle",
        "unnamed_old": f"{prefix}abc.pickle",  # the previous release's names carry no pid: left alone
        "other_old": f"other_{dead}_abc.pickle",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    _backdate([tmp_path / n for k, n in names.items() if k != "dead_new"], 2 * batch_module.STALE_AFTER_SECONDS)
    removed = batch_module.remove_stale_files(str(tmp_path))
    assert sorted(Path(p).name for p in removed) == sorted([names["dead_old"], names["dead_old_out"]])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n for k, n in names.items() if not k.startswith("dead_old"))


def test_the_sweep_never_raises_on_a_missing_directory(tmp_path: Path) -> None:
    assert batch_module.remove_stale_files(str(tmp_path / "missing")) == []


# --- a real caller killed with SIGKILL ------------------------------------------------------------

CALLER = textwrap.dedent(
    """
    import sys

    from trace_tasks import score_trace_batch
    from tests.batch.test_score_trace_batch import make_items

    items = make_items(int(sys.argv[1]))
    print("scoring", flush=True)
    score_trace_batch(items, workers=2, timeout=float("inf"))
    print("finished", flush=True)  # never: the test kills this process while it scores its own share
    """
)


@pytest.mark.slow  # starts an interpreter and a pool, kills them
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the pool's child through /proc")
def test_a_killed_callers_child_exits_and_its_files_are_swept_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pools: None
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = tmp_path / "caller.py"
    script.write_text(CALLER)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    # Big enough that the caller is still scoring its own half when the chunk files exist.
    caller = subprocess.Popen([sys.executable, str(script), "40000"], env=env, cwd=root, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_WAIT_S
        while not (_chunk_files(temp) and pool_children(caller.pid)):
            assert caller.poll() is None, "the caller ended before it was killed"
            assert time.monotonic() < deadline, "the caller never handed out its chunks"
            time.sleep(0.05)
        (child,) = pool_children(caller.pid)
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait()
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
    assert caller.stdout is not None and caller.stdout.read() == b"scoring\n"

    deadline = time.monotonic() + CHILD_EXIT_WAIT_S
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail(f"the pool's child {child} outlived its killed caller by {CHILD_EXIT_WAIT_S} s")

    stale = _chunk_files(temp)
    assert stale, "the killed caller left no chunk file (nothing to sweep)"
    assert all(p.name.startswith(f"{batch_module.CHUNK_PREFIX}{caller.pid}_") for p in stale)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    items = make_items(2 * batch_module.MIN_ITEMS_PER_WORKER + 40)
    score_trace_batch(items, workers=2)  # a fresh pool: the files are still under a minute old
    assert _chunk_files(temp) == stale
    _backdate(stale, 2 * batch_module.STALE_AFTER_SECONDS)
    batch_module.shutdown_batch_pools()
    score_trace_batch(items, workers=2)  # the next pool start sweeps them
    assert _chunk_files(temp) == []
