"""``score --workers N`` when a worker dies, and SIGTERM handled as Ctrl-C (exit 143).

A pool worker killed with SIGKILL (as the out-of-memory killer does) costs
time, never output: its chunk is scored in the command's process, a fresh pool
takes the chunks in flight, order is kept. The in-process tests drive the
pool logic of :mod:`trace_tasks.runs._engine` with a stand-in executor that
breaks on cue; the slow ones kill real workers and send a real SIGTERM.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing.context
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tests.batch.test_score_trace_batch import make_items
from tests.cli.helpers import COMBINED, ROOT, read_jsonl, write_lines
from tests.support.pools import FakeExecutor
from tests.support.processes import alive, forked_from, pool_children
from trace_tasks import cli
from trace_tasks.cli import main
from trace_tasks.data import _batch as batch_module
from trace_tasks.data import compile_instance, score_trace_batch
from trace_tasks.plugins import reset_registry
from trace_tasks.runs import _engine
from trace_tasks.runs._durable import lock_output
from trace_tasks.runs._errors import EXIT_TERMINATED

MODULE = [sys.executable, "-m", "trace_tasks.cli"]
TIMEOUT_S = 120.0

# --- the pool's bookkeeping, with a stand-in executor ------------------------------------------------


def _pooled(chunks: Any, options: dict[str, Any], workers: int) -> list[Any]:
    """Every chunk through the run's pool, as ``trace-tasks score`` drives it."""
    with _engine.worker_pool(options, workers) as pool:
        assert pool is not None
        return list(_engine._pooled(((context, chunk, None) for context, chunk in chunks), pool))  # results as dicts


def _items(count: int) -> list[dict[str, Any]]:
    """Distinct items with the run's options only (a run has one set: the per-item mode is left out)."""
    return [{k: v for k, v in item.items() if k != "trace_reward_mode"} for item in make_items(count)]


def _payload(items: list[dict[str, Any]]) -> _engine.Payload:
    """A chunk as ``trace-tasks score`` hands it to its pool: each instance handed over once, and (instance, response) rows."""
    instances = [compile_instance({k: v for k, v in item.items() if k != "response"}).handover() for item in items]
    return instances, [(n, item["response"]) for n, item in enumerate(items)]


def _chunks(count: int, size: int) -> Iterator[tuple[int, _engine.Payload]]:
    items = _items(count * size)
    for n in range(count):
        yield n, _payload(items[n * size : (n + 1) * size])


def _expected(count: int, size: int) -> list[tuple[int, list[Any]]]:
    items = _items(count * size)
    return [(n, score_trace_batch(items[n * size : (n + 1) * size])) for n in range(count)]


@pytest.mark.parametrize(
    ("breaks", "broken_submits"),
    [
        ({0}, set()),  # the first chunk's worker dies
        ({2, 3}, set()),  # two chunks in flight lost at once
        (set(), {4}),  # the pool broke between two results: the next submission notices
        ({0, 5, 9}, {12}),  # again and again
    ],
)
def test_a_dead_worker_loses_no_chunk_and_keeps_the_order(
    fake_pool: type[FakeExecutor], breaks: set[int], broken_submits: set[int]
) -> None:
    fake_pool.breaks, fake_pool.broken_submits = breaks, broken_submits
    assert _pooled(_chunks(10, 3), {}, 2) == _expected(10, 3)
    assert fake_pool.started > 1  # the broken pool was replaced


def test_rows_sent_back_as_lines_survive_a_dead_worker(fake_pool: type[FakeExecutor]) -> None:
    """A chunk whose rows come back as output lines (``AsText``) is handed to the fresh pool, or scored here, as text."""
    fake_pool.breaks, fake_pool.broken_submits = {1, 4}, {6}
    chunks = list(_chunks(8, 3))
    texts = [_engine.AsText([(f"row-{n}-{k}", 3 * n + k + 1, None) for k in range(3)], stable=n % 2 == 1) for n in range(8)]
    with _engine.worker_pool({}, 2) as pool:
        assert pool is not None
        got = list(_engine._pooled(((n, chunk, text) for (n, chunk), text in zip(chunks, texts, strict=True)), pool))
    assert got == [(n, _engine.score_payload(chunk, {}, text=text)) for (n, chunk), text in zip(chunks, texts, strict=True)]
    assert all(isinstance(row, tuple) for _, rows in got for row in rows)
    assert fake_pool.started > 1


def test_past_the_restarts_the_rest_is_scored_in_this_process(fake_pool: type[FakeExecutor]) -> None:
    fake_pool.breaks = set(range(1000))  # every pool dies at once
    assert _pooled(_chunks(12, 2), {}, 2) == _expected(12, 2)
    assert fake_pool.started == 1 + _engine.POOL_RESTARTS


class UnpicklableExecutor(FakeExecutor):
    """A pool whose queue cannot pickle what it is handed (a family's own target type): the future holds the error."""

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(pickle.PicklingError("Can't pickle <class 'Target'>: it's not the same object"))
        return future


def test_a_chunk_that_does_not_pickle_is_scored_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_engine._Pool, "_start", lambda self: UnpicklableExecutor())
    assert _pooled(_chunks(4, 3), {}, 2) == _expected(4, 3)


def test_empty_chunks_need_no_worker(fake_pool: type[FakeExecutor]) -> None:
    fake_pool.breaks = {0}
    chunks: list[tuple[int, list[dict[str, Any]]]] = [(0, []), (1, _items(2)), (2, []), (3, _items(3))]
    payloads = [(n, _payload(items)) for n, items in chunks]
    assert _pooled(iter(payloads), {}, 2) == [(n, score_trace_batch(items)) for n, items in chunks]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """``(target, args, daemon)`` of every thread the code under test starts (none really starts)."""
    seen: list[tuple[Any, ...]] = []

    class Thread:
        def __init__(self, target: Any, args: tuple[Any, ...], name: str, daemon: bool) -> None:
            seen.append((target, args, daemon))

        def start(self) -> None:
            pass

    monkeypatch.setattr(threading, "Thread", Thread)
    return seen


def test_pool_workers_watch_their_parent(started: list[tuple[Any, ...]]) -> None:
    before = signal.getsignal(signal.SIGINT)
    try:
        _engine.ignore_interrupts(1234)
    finally:
        signal.signal(signal.SIGINT, before)
    assert started == [(batch_module._exit_with, (1234,), True)]


@pytest.mark.parametrize(("parent", "watch"), [(1234, batch_module._exit_with), (4321, _engine._exit_after)])
def test_a_worker_watches_the_command_and_freezes_its_start_up(
    monkeypatch: pytest.MonkeyPatch, started: list[tuple[Any, ...]], parent: int, watch: Any
) -> None:
    """A child of the command (1234: spawned, or forked from it) watches its parent; forked by the fork server: the
    command's process. SIGTERM's default is back (a worker forked from the command inherited its handler)."""
    before, before_term = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: None)  # the command's handler, as a forked worker inherits it
    monkeypatch.setattr(_engine.os, "getppid", lambda: parent)
    monkeypatch.setenv("TRACE_TASKS_REWARD_IDS", "")  # put back (unset) after the test, whatever start_worker does
    monkeypatch.delenv("TRACE_TASKS_REWARD_IDS")
    command = {**os.environ, "TRACE_TASKS_REWARD_IDS": "number=answer_relaxed_match_v0"}  # pinned after the server started
    try:
        _engine.start_worker(1234, command)
        assert gc.get_freeze_count() > 0
        assert dict(os.environ) == command
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        gc.unfreeze()
        signal.signal(signal.SIGINT, before)
        signal.signal(signal.SIGTERM, before_term)
        reset_registry()
    assert started == [(watch, (1234,), True)]


@pytest.mark.slow  # starts processes
def test_a_watched_process_ending_ends_the_watcher() -> None:
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    code = "import sys, time\nfrom trace_tasks.runs import _engine\n_engine.watch_process(int(sys.argv[1]))\ntime.sleep(60)"
    watcher = subprocess.run([sys.executable, "-c", code, str(target.pid)], timeout=TIMEOUT_S, cwd=ROOT)
    target.wait()
    assert watcher.returncode == 1  # os._exit(1) once the watched process was gone, long before its own minute


@pytest.mark.parametrize(
    ("methods", "platform", "threads", "method"),
    [
        (["fork", "spawn", "forkserver"], "linux", 1, "fork"),  # a command's process: its workers forked from it
        (["fork", "spawn", "forkserver"], "linux", 2, "forkserver"),  # another thread could hold a lock the child needs
        (["fork", "spawn", "forkserver"], "darwin", 1, "forkserver"),  # macOS's own libraries are not fork-safe
        (["spawn"], "win32", 1, "spawn"),
    ],
)
def test_workers_are_forked_from_the_command_while_it_runs_one_thread(
    monkeypatch: pytest.MonkeyPatch, methods: list[str], platform: str, threads: int, method: str
) -> None:
    preloads: list[list[str]] = []
    imported: list[str] = []
    monkeypatch.setattr(_engine.multiprocessing, "get_all_start_methods", lambda: methods)
    monkeypatch.setattr(_engine.sys, "platform", platform)
    monkeypatch.setattr(_engine.threading, "active_count", lambda: threads)
    monkeypatch.setattr(_engine.importlib, "import_module", imported.append)
    monkeypatch.setattr(
        multiprocessing.context.ForkServerContext, "set_forkserver_preload", lambda self, names: preloads.append(names)
    )
    assert _engine.pool_context().get_start_method() == method
    # What the workers need imported before they are forked: here (fork), or in the fork server.
    assert imported == (_engine.preload() if method == "fork" else [])
    assert preloads == ([_engine.preload()] if method == "forkserver" else [])


@pytest.mark.parametrize("native_solves", [True, False])
def test_the_fork_server_preloads_the_solver_only_where_scoring_needs_it(
    monkeypatch: pytest.MonkeyPatch, native_solves: bool
) -> None:
    monkeypatch.setattr(_engine, "native_solves_assignments", lambda: native_solves)
    assert _engine.preload()[0] == "trace_tasks.runs._engine"
    assert ("scipy.optimize" in _engine.preload()) is not native_solves


# --- SIGTERM, in-process: the handler main() installs ------------------------------------------------


def test_sigterm_is_answered_like_ctrl_c(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[Any] = []

    def terminate(args: Any) -> None:  # what the signal would do in the middle of the run
        handler = signal.getsignal(signal.SIGTERM)
        seen.append(handler)
        assert callable(handler)
        handler(signal.SIGTERM, None)

    monkeypatch.setattr(cli, "check_file_arguments", terminate)
    assert main(["plugins"]) == 143 == EXIT_TERMINATED
    assert capsys.readouterr().err == "trace-tasks plugins: terminated\n"
    assert seen and seen[0] is not before
    assert signal.getsignal(signal.SIGTERM) is before  # put back after the run


# --- real processes ------------------------------------------------------------------------------------


def _wait_for(condition: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert proc.poll() is None, f"the command ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {TIMEOUT_S} s"
        time.sleep(0.05)


def _ended(proc: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    """The exit status and what the command wrote on stderr, read without waiting for an orphaned worker to close it."""
    code = proc.wait(timeout=TIMEOUT_S)
    assert proc.stderr is not None
    os.set_blocking(proc.stderr.fileno(), False)
    return code, proc.stderr.read() or b""


def _send(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write to the command's stdin; a command that died already (the failure under test) is reported by its status."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
    except BrokenPipeError:
        pass


def _lines(path: Path, copies: int) -> list[bytes]:
    rows = read_jsonl(COMBINED)
    many = [dict(row, id=f"{row['id']}#{k}") for k in range(copies) for row in rows]
    return write_lines(path, many).read_bytes().splitlines(keepends=True)


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the pool's workers through /proc")


@pytest.mark.slow  # starts the command and its pool, kills workers
@needs_proc
def test_score_survives_killed_workers_and_writes_every_line_in_order(tmp_path: Path) -> None:
    lines = _lines(tmp_path / "in.jsonl", 40)  # 4,320 lines: three pool chunks of 2,048
    reference = subprocess.run(
        [*MODULE, "score", str(tmp_path / "in.jsonl"), "-q", "--workers", "1"], capture_output=True, cwd=ROOT, timeout=TIMEOUT_S
    )
    assert reference.returncode == 0, reference.stderr.decode()
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [*MODULE, "score", "-", "-q", "--workers", "2", "-o", str(out)], stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    assert proc.stdin is not None and proc.stderr is not None
    try:
        # Standard input stays open between the phases: the command waits for more lines while its workers are killed.
        _send(proc, b"".join(lines[:3000]))  # the first chunk goes to the pool, the second waits for lines
        # The pool starts a worker per chunk handed out, up to two: one chunk so far, one worker.
        _wait_for(lambda: bool(pool_children(proc.pid)), proc, "pool worker")
        first = pool_children(proc.pid)
        os.kill(first[0], signal.SIGKILL)  # while the first chunk is scored (or about to be)
        # Reaped by the pool's manager thread once it has marked the pool broken.
        _wait_for(lambda: not Path(f"/proc/{first[0]}").exists(), proc, "reaped worker")
        _send(proc, b"".join(lines[3000:4200]))  # completes the second chunk: its submission meets the broken pool
        _wait_for(lambda: any(pid not in first for pid in pool_children(proc.pid)), proc, "fresh pool")
        os.kill(next(pid for pid in pool_children(proc.pid) if pid not in first), signal.SIGKILL)  # the fresh pool too
        _send(proc, b"".join(lines[4200:]))
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        code, err = _ended(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (code, err) == (0, b"")
    assert out.read_bytes() == reference.stdout  # every line, in order, the same scores as one worker's
    assert len(out.read_bytes().splitlines()) == len(lines)


@pytest.mark.slow  # starts the command and its pool, kills the command
@needs_proc
def test_the_workers_exit_when_the_command_is_killed(tmp_path: Path) -> None:
    lines = _lines(tmp_path / "in.jsonl", 40)  # 4,320 lines
    proc = subprocess.Popen(
        [*MODULE, "score", "-", "-q", "--workers", "2", "-o", str(tmp_path / "out.jsonl")], stdin=subprocess.PIPE, cwd=ROOT
    )
    pool: list[int] = []
    try:
        _send(proc, b"".join(lines[:4200]))  # two chunks: two workers; stdin stays open, the command waits for more
        _wait_for(lambda: len(pool_children(proc.pid)) == 2, proc, "two pool workers")
        pool = pool_children(proc.pid)
        # The command runs one Python thread when its pool starts: the workers are forked from it, no fork server.
        forked = [forked_from(proc.pid, pid) for pid in pool]
        os.kill(proc.pid, signal.SIGKILL)  # it cannot stop its pool: the workers must notice
        proc.wait(timeout=TIMEOUT_S)
        # A run started again at once is not refused: the workers, alive for up to a second more, closed their
        # copies of the killed run's lock when they started (a forked worker inherits the command's descriptors).
        with lock_output(str(tmp_path / "out.jsonl")):
            relocked = [alive(pid) for pid in pool]
        deadline = time.monotonic() + TIMEOUT_S
        while any(alive(pid) for pid in pool) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in pool if alive(pid)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pool:  # leave no process behind, whatever the outcome
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(BrokenPipeError):
            assert proc.stdin is not None
            proc.stdin.close()
    assert forked == [True, True]
    assert relocked == [True, True]  # locked while both workers still ran
    assert not left, "a pool worker outlived the command"


@pytest.mark.slow  # starts the command and its pool, sends SIGTERM
@needs_proc
@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_during_score_is_one_line_and_143(tmp_path: Path, workers: str) -> None:
    lines = _lines(tmp_path / "in.jsonl", 30)
    out = tmp_path / "scores.jsonl"
    out.write_text("old\n")
    proc = subprocess.Popen(
        [*MODULE, "score", "-", "-o", str(out), "--workers", workers], stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    assert proc.stdin is not None and proc.stderr is not None
    pool: list[int] = []
    try:
        _send(proc, b"".join(lines[:3000]))  # stdin stays open: the command is waiting for more lines when the signal comes
        _wait_for(lambda: any(p.name.endswith(".tmp") for p in tmp_path.iterdir()), proc, "temporary output file")
        if workers == "2":
            _wait_for(lambda: bool(pool_children(proc.pid)), proc, "pool worker")
        pool = pool_children(proc.pid)
        os.kill(proc.pid, signal.SIGTERM)  # the command only, as kill(1) and job schedulers send it
        code, err = _ended(proc)
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + TIMEOUT_S
        while any(alive(pid) for pid in pool) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in pool if alive(pid)]
        for pid in left:  # leave no process behind, whatever the outcome
            os.kill(pid, signal.SIGKILL)
    # On a busy machine --workers 2 first notes it in one line (docs/cli.md, --workers): not what this test is about.
    err = b"".join(line for line in err.splitlines(keepends=True) if not line.startswith(b"note: --workers"))
    assert (code, err) == (143, b"trace-tasks score: terminated\n")
    assert out.read_text() == "old\n"
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert not left, "a pool worker outlived the command"


@pytest.mark.slow
def test_a_worker_killed_while_sending_its_results_does_not_hang_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker killed part-way through sending a chunk's results left half a message in the result pipe:
    # CPython's pool waited for the rest for ever (1 run in 10 under `kill -9`), and SIGTERM could not stop
    # it. Here the half message is written into the pipe by hand, and a worker killed: no timing to hit.
    import struct

    monkeypatch.setattr(_engine, "UNNOTICED_DEATH_SECONDS", 1.0)
    got: list[Any] = []
    with _engine.worker_pool({}, 2) as pool:
        assert pool is not None
        chunks = list(_chunks(6, 3))
        pool.submit(*chunks[0])
        got.append(pool.finish())  # the pool is running, its workers warm
        executor = pool.executor
        assert executor is not None
        writer = executor._result_queue._writer  # type: ignore[attr-defined]
        os.write(writer.fileno(), struct.pack("!i", 1 << 20) + b"half a message")  # the reader now waits for the rest
        victim = next(iter(executor._processes.values()))  # type: ignore[attr-defined]
        victim.kill()
        victim.join(TIMEOUT_S)
        for chunk in chunks[1:]:
            pool.submit(*chunk)
        done = threading.Event()

        def drain() -> None:
            while pool.pending:
                got.append(pool.finish())
            done.set()

        waiter = threading.Thread(target=drain, daemon=True)
        waiter.start()
        assert done.wait(TIMEOUT_S), "the run hung on the half-sent result"
        assert pool.restarts >= 1
    assert got == _expected(6, 3)
