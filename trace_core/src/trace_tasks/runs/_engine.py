"""Scoring a stream of chunks in order, in-process or in a process pool (Ray: :mod:`trace_tasks.runs._ray_engine`).

Chunks are pulled from the input lazily and at most ``2 * workers`` are in
flight, so memory stays flat however long the input is. Results come back in
input order. Each response is scored by its compiled instance
(:class:`trace_tasks.CompiledInstance`: the ground truth was validated and
parsed once), with the run's options checked once: in this process, or in a
pool worker. Every row is validated once, here (the run needs the compiled
instance anyway: its errors name the line, its warnings are counted, its type
goes into the summary). A worker gets a chunk as a :data:`Payload`: each
distinct compiled instance handed over once (:meth:`CompiledInstance.handover`:
its registry entries by name, its prepared answer and target as they are, not
its record) and ``(instance, response)`` rows; it rebuilds each instance
without validating it again (:func:`trace_tasks.data.from_handover`) and
scores the rows through the very call the in-process path makes, so the
output is the same bytes whatever the worker count. For a JSON Lines output a
worker sends each row back as its output line and the scores the summary reads
(:class:`AsText`), not its result dict. Either way a failing item
becomes ``{"error": ...}`` instead of stopping the run.

A pool worker that dies (SIGKILL, the out-of-memory killer) costs time, never
output: the chunk being waited for is scored in this process (the very
:func:`score_payload` call the worker would have made, so the same results), a
fresh pool replaces the broken one and the chunks in flight are handed to it,
in order. After :data:`POOL_RESTARTS` replacements the rest of the run is
scored in this process. A chunk the pool cannot carry (a third-party family's
parsed target that does not pickle) is scored in this process too. The
workers exit when this process dies.

A worker killed while it sends a chunk's results leaves half a message in the
pool's result pipe: CPython's ``ProcessPoolExecutor`` then waits for the rest
for ever (its reader blocks, so it never sees the worker's death), and the
other workers wait for the pipe's lock the dead one held. So a wait for a
chunk looks at the workers every :data:`WATCH_SECONDS`; a worker dead for
:data:`UNNOTICED_DEATH_SECONDS` without the pool breaking makes the run stop
every worker and close its own end of the pipe, and the pool breaks as for
any dead worker (:meth:`_Pool.unstick`).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import importlib
import multiprocessing
import multiprocessing.context
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.data import CompiledInstance, Handover, InstanceError, from_handover, watch_parent
from trace_tasks.plugins import get_registry
from trace_tasks.runs._columns import STABLE_COLUMNS
from trace_tasks.runs._durable import drop_inherited_locks
from trace_tasks.runs._metrics import score_compiled_with_metrics
from trace_tasks.runs._rows import RowText, row_text
from trace_tasks.scoring import ScoringOptions, native_solves_assignments, options_from

T = TypeVar("T")
Result = dict[str, Any]
#: What a pool worker sends back for a row: its result, or its output line when the chunk asks for text (:class:`AsText`).
Returned = Result | RowText
#: A chunk as a pool worker gets it: the distinct compiled instances, handed over, and ``(instance index, response)`` rows.
Payload = tuple[list[Handover], list[tuple[int, str]]]


class Work(Protocol):
    """One response to score: ``item`` (keyword arguments of ``score_trace_response``) and its compiled instance."""

    @property
    def item(self) -> dict[str, Any] | None: ...

    @property
    def compiled(self) -> CompiledInstance | None: ...


class OutputRow(Work, Protocol):
    """A response with what its output row starts and ends with (:class:`trace_tasks.runs._rows.Slot`)."""

    @property
    def id(self) -> Any: ...

    @property
    def line(self) -> int: ...

    @property
    def extra(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class AsText:
    """A chunk whose rows a pool worker sends back as output lines (:func:`trace_tasks.runs._rows.row_text`).

    ``heads``: each row's ``(id, line, extra)``, in the payload's row order; ``stable``: ``--columns stable``.
    A JSON Lines output is text anyway, and a line and six scores cross between processes for less than the
    result dict (41 keys): about 15k instructions a row less in all (benchmarks/README.md, ``--workers``), and the
    JSON is written in the workers, not in the command that feeds them.
    """

    heads: list[tuple[Any, int, Any]]
    stable: bool


ENGINES = ("local", "ray")
#: Items per chunk in-process (the unit of progress updates and output writes).
LOCAL_CHUNK = 1024
#: Items per chunk sent to a pool worker: big enough that pickling is amortized.
POOL_CHUNK = 2048

#: How many times one run replaces a pool whose worker died; after that it scores in this process.
POOL_RESTARTS = 3
#: How often a wait for a chunk looks at the workers, and how long a dead worker may go unnoticed by the
#: pool before the run breaks it itself (:meth:`_Pool.unstick`).
WATCH_SECONDS = 1.0
UNNOTICED_DEATH_SECONDS = 5.0
#: What is imported before workers are forked, here or in the fork server (:func:`pool_context`): the worker's code,
#: and the assignment solver where scoring sets needs it (:func:`preload`).
PRELOAD = ("trace_tasks.runs._engine", "scipy.optimize")


class EngineError(RuntimeError):
    """The selected engine cannot run (for example Ray is not installed)."""


def busy_cores_note(workers: int) -> str | None:
    """One line for stderr when ``workers`` exceed the cores other processes leave idle, else ``None``.

    The idle cores are the usable ones (``os.sched_getaffinity``) minus the
    1-minute load average not counting this process (``os.getloadavg``). On a
    busy machine the workers wait for a core and the run is no faster than one
    worker (the total CPU is about the same, so nothing is wasted): the run
    goes on as asked, with this note. ``None`` where either figure is unknown.
    """
    if workers <= 1:
        return None
    try:
        cores = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not Linux, or no load average
        return None
    idle = cores - max(0.0, load - 1.0)
    if idle >= workers:
        return None
    return (
        f"note: --workers {workers} on {cores} usable core(s) with a load average of {load:.1f}: "
        f"other processes leave about {max(0.0, idle):.1f} core(s) idle, so the workers may run no faster than one"
    )


def chunk_size(workers: int) -> int:
    return POOL_CHUNK if workers > 1 else LOCAL_CHUNK


def score_compiled(work: Work, opts: ScoringOptions) -> Result:
    """One response scored by its compiled instance (options validated once per run); a caller mistake becomes ``{"error": ...}``."""
    assert work.item is not None and work.compiled is not None
    return score_response(work.compiled, work.item["response"], opts)


def score_response(instance: CompiledInstance, response: Any, opts: ScoringOptions) -> Result:
    """:func:`score_compiled` of one response given as it is (a pool worker's rows: no record per row)."""
    try:
        instance.check_mode(opts)  # an instance without an answer: annotation_only only
        instance.check_frame(opts)  # a declared frame it cannot be scored in: refused, as score_trace_response does
        return instance.run(check_response(response), opts)
    except Exception as exc:  # isolate the item, as score_trace_batch does
        return {"error": f"{type(exc).__name__}: {exc}"}


def score_chunks(
    chunks: Iterable[tuple[T, list[Work]]],
    *,
    options: Mapping[str, Any],
    workers: int = 1,
    pool: _Pool[T] | None = None,
    metrics: bool = False,
    text: str | None = None,
) -> Iterator[tuple[T, list[Returned]]]:
    """For each ``(context, works)`` yield ``(context, results)``, in input order (``pool``: the run's, from :func:`worker_pool`).

    ``metrics``: each response is scored with a trail and its result also holds its field metrics
    (:mod:`trace_tasks.runs._metrics`; the pool given must be a ``worker_pool(..., metrics=True)``).
    ``text`` (without ``metrics``; the works are then :class:`OutputRow`): the ``--columns`` of a JSON Lines
    output, and a pool worker sends each scored row back as its output line (:class:`AsText`). In this
    process results stay dicts.
    """
    if workers <= 1:
        opts = options_from(options)
        score = score_compiled_with_metrics if metrics else score_compiled
        for context, works in chunks:
            yield context, [score(work, opts) for work in works]
        return
    payloads = ((context, payload(works), as_text(works, text, metrics)) for context, works in chunks)
    if pool is not None:
        yield from _pooled(payloads, pool)
        return
    with worker_pool(options, workers, metrics) as own:
        assert own is not None
        yield from _pooled(payloads, own)


def payload(works: list[Work]) -> Payload:
    """What a worker needs to score ``works``: each distinct compiled instance handed over once, and the rows.

    The parent's cache hands out one compiled object per content, so the
    instances are told apart by identity (no hashing of their content here).
    """
    instances: list[Handover] = []
    where: dict[int, int] = {}
    rows: list[tuple[int, str]] = []
    for work in works:
        item, compiled = work.item, work.compiled
        if item is None or compiled is None:
            continue
        index = where.get(id(compiled))
        if index is None:
            index = where[id(compiled)] = len(instances)
            instances.append(compiled.handover())
        rows.append((index, item["response"]))
    return instances, rows


def as_text(works: list[Any], columns: str | None, metrics: bool = False) -> AsText | None:
    """The :class:`AsText` of a chunk of :class:`OutputRow` (``None``: results as dicts, as with field metrics)."""
    if columns is None or metrics:
        return None
    heads = [(work.id, work.line, work.extra) for work in works if work.item is not None and work.compiled is not None]
    return AsText(heads, columns == STABLE_COLUMNS)


@dataclass(frozen=True, slots=True)
class _Row:
    """One row of a payload as :func:`~trace_tasks.runs._metrics.score_compiled_with_metrics` takes it."""

    item: dict[str, Any]
    compiled: CompiledInstance


def score_payload(
    chunk: Payload, options: Mapping[str, Any], metrics: bool = False, text: AsText | None = None
) -> list[Returned]:
    """A pool worker's chunk, scored as :func:`score_chunks` scores in-process (the same call per row, the same results).

    Each distinct instance of the chunk is rebuilt once from its handover, not
    validated again: validating took about 20 µs per instance and sending its
    record another 8 µs, against about 2 µs for the handover (the example mix).
    Rebuilding cannot fail unless the worker's plugins differ from the
    parent's, and then its rows say so. ``text`` (never with ``metrics``):
    each scored row comes back as its output line (:func:`~trace_tasks.runs._rows.row_text`).
    """
    instances, rows = chunk
    opts = options_from(options)
    compiled: list[CompiledInstance | Result] = []
    for state in instances:
        try:
            compiled.append(from_handover(state))
        except InstanceError as exc:
            compiled.append({"error": f"{type(exc).__name__}: {exc}"})
    results: list[Returned] = []
    if metrics:
        for index, response in rows:
            instance = compiled[index]
            if isinstance(instance, dict):
                results.append(dict(instance))
            else:
                results.append(score_compiled_with_metrics(_Row({"response": response}, instance), opts))
        return results
    if text is not None:
        stable = text.stable
        for (index, response), head in zip(rows, text.heads, strict=True):
            instance = compiled[index]
            scores = dict(instance) if isinstance(instance, dict) else score_response(instance, response, opts)
            results.append(row_text(head, scores, stable))
        return results
    for index, response in rows:
        instance = compiled[index]
        results.append(dict(instance) if isinstance(instance, dict) else score_response(instance, response, opts))
    return results


def ignore_interrupts(parent: int | None = None) -> None:
    """Ctrl-C reaches the whole process group, and only the parent answers it.

    The parent stops, reports one line and exits 130; a worker that took the
    interrupt too would print its own ``KeyboardInterrupt`` traceback. SIGTERM
    keeps its default (the pool itself stops a broken pool's workers with it).
    Given the ``parent``'s pid, the worker also exits when that process is gone
    (killed with SIGKILL, it could not stop its pool): a daemon thread checks
    every second whether the worker was handed to another parent (:func:`trace_tasks.data.watch_parent`).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        watch_parent(parent)


def start_worker(command: int, environ: Mapping[str, str] | None = None) -> None:
    """Pool worker initializer: interrupts left to the ``command`` (:func:`ignore_interrupts`), and the start-up paid once.

    ``environ``: the command's environment when it started the pool. A worker
    forked by the fork server inherits the server's, which is the command's at
    the server's start; with it, a worker sees what a spawned one would (a
    ``TRACE_TASKS_REWARD_IDS`` pin set since, for one). A worker forked from
    the command itself (:func:`pool_context`) has it already, and gets SIGTERM's
    default back (it inherited the command's handler, and the pool stops a
    broken pool's workers with SIGTERM) and closes its copies of the run's
    output locks (:func:`~trace_tasks.runs._durable.drop_inherited_locks`). The worker exits when the command does:
    a child of the command watches its parent, one forked by the fork server
    the command's process itself (:func:`watch_process`; its parent, the fork
    server, outlives a command killed with SIGKILL as long as workers hold
    the pipe it waits on). The plugin registry is built here, not in the
    first chunk, and what start-up created (modules, the registry: most of the
    worker's objects; a forked worker: all of the command's) is set aside from
    the cyclic GC (``gc.freeze``), which would otherwise walk it in every full collection.
    """
    if environ is not None and environ != os.environ:
        os.environ.clear()
        os.environ.update(environ)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    drop_inherited_locks()
    if os.getppid() == command:  # spawned, or forked from the command
        ignore_interrupts(command)
    else:  # forked by the fork server
        ignore_interrupts()
        watch_process(command)
    get_registry()
    gc.freeze()


def watch_process(pid: int) -> None:
    """From a daemon thread, end this process once process ``pid`` has ended (not its parent: any process)."""
    threading.Thread(target=_exit_after, args=(pid,), name="trace-tasks-command-watch", daemon=True).start()


def _exit_after(pid: int) -> None:
    """Return never while ``pid`` runs: a pidfd (Linux) is readable once it has ended; elsewhere, a check every second."""
    try:
        handle: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd here, or the process is gone already
        handle = None
    if handle is not None:
        select.select([handle], [], [])
    else:
        while _running(pid):
            time.sleep(1.0)
    os._exit(1)  # the command is gone: nobody will read this worker's results


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def pool_context() -> multiprocessing.context.BaseContext:
    """How workers start: forked from this process while it runs one thread, else from a fork server, else spawned.

    A spawned worker imports the package, numpy and scipy's solver itself,
    about 2.4 billion instructions (close to a second of CPU) per worker. A
    fork server imports :func:`preload`'s modules once per run and forks each
    worker from its single thread, but that import is still paid again beside
    the command's own (about 1 billion instructions, and the resource tracker
    it starts): in the native build, the price of 2,000 rows. So on Linux,
    while this process runs no other Python thread (a command's process, before
    its pool's threads start: the executor forks every worker before starting
    them), the workers are forked from it, with :func:`preload`'s modules
    imported here first. Forking a process whose other threads may hold a lock
    can deadlock the child, so any other thread (a caller's own, a pool's not
    yet stopped) means the fork server. numpy's OpenBLAS threads are not
    Python's: OpenBLAS stops them before a fork (``pthread_atfork``) and starts
    them again when next needed, so CPython 3.12+ does not warn of them either.
    """
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and sys.platform.startswith("linux") and threading.active_count() == 1:
        for name in preload():
            importlib.import_module(name)
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(preload())
        return context
    return multiprocessing.get_context("spawn")


def preload() -> list[str]:
    """The modules of :data:`PRELOAD` a worker needs: scipy's solver is left out where the native path solves sets itself.

    One process scoring the same rows would never import it there, and the
    pool would pay for it on every run (1.39 billion instructions where numpy
    is imported already); a worker whose responses fall back to the Python
    steps imports it on first use.
    """
    return [name for name in PRELOAD if name != "scipy.optimize" or not native_solves_assignments()]


@dataclass
class _Chunk(Generic[T]):
    """One chunk of the run: its context, its payload, and the pool's future (None: scored in this process)."""

    context: T
    payload: Payload
    text: AsText | None = None
    future: Future[list[Returned]] | None = None


class _Pool(Generic[T]):
    """The command's process pool; a dead worker costs time, never output (see the module's docstring)."""

    def __init__(self, options: Mapping[str, Any], workers: int, metrics: bool = False) -> None:
        self.options = options
        self.workers = workers
        self.metrics = metrics
        self.restarts = 0
        self.pending: collections.deque[_Chunk[T]] = collections.deque()
        # Started at the first chunk with rows (:meth:`_hand_out`): a run that never hands one out (every shard
        # scored in this process, see runs._local) starts no worker (nor a fork server and resource tracker).
        self.started = False
        self.executor: ProcessPoolExecutor | None = None

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=pool_context(),
            initializer=start_worker,
            initargs=(os.getpid(), dict(os.environ)),
        )

    def submit(self, context: T, payload: Payload, text: AsText | None = None) -> None:
        chunk = _Chunk(context, payload, text)
        self.pending.append(chunk)
        self._hand_out(chunk)

    def _hand_out(self, chunk: _Chunk[T]) -> None:
        chunk.future = None
        if not chunk.payload[1]:
            return
        if not self.started:
            self.started, self.executor = True, self._start()
        while self.executor is not None and chunk.future is None:
            try:
                chunk.future = self.executor.submit(score_payload, chunk.payload, self.options, self.metrics, chunk.text)
            except BrokenProcessPool:  # a worker died since the last result: the replacement hands this chunk out too
                self._replace()

    def finish(self) -> tuple[T, list[Returned]]:
        """The oldest chunk's results; scored in this process when its worker died (the call the worker makes)."""
        chunk = self.pending.popleft()
        if chunk.future is not None:
            try:
                return chunk.context, self._result(chunk.future)
            except BrokenProcessPool:
                self._replace()
            except Exception:  # the chunk or its results did not pickle (a family's own target type): scored below
                pass
        if not chunk.payload[1]:
            return chunk.context, []
        return chunk.context, score_payload(chunk.payload, self.options, self.metrics, chunk.text)

    def _result(self, future: Future[list[Returned]]) -> list[Returned]:
        """``future``'s result, the workers looked at while it is awaited (:meth:`unstick`)."""
        dead_since: float | None = None
        while True:
            try:
                return future.result(timeout=WATCH_SECONDS)
            except FuturesTimeout:
                dead_since = self.unstick(dead_since)

    def unstick(self, dead_since: float | None, grace: float = UNNOTICED_DEATH_SECONDS) -> float | None:
        """Break the pool when a worker has been dead for ``grace`` seconds and the pool has not noticed.

        Returns when a dead worker was first seen (``None``: every worker lives). The pool notices a death
        at once unless its reader waits for the rest of a message the worker died sending (see the module's
        docstring): then every worker is stopped and this process's end of the result pipe closed, so the
        reader meets the pipe's end and the pool breaks, its chunks handed to a fresh one as for any death.
        """
        executor = self.executor
        processes = dict(getattr(executor, "_processes", None) or {})
        if not any(process.exitcode is not None for process in processes.values()):
            return None
        now = time.monotonic()
        if dead_since is None or now - dead_since < grace:
            return dead_since if dead_since is not None else now
        for process in processes.values():
            if process.exitcode is None:
                process.kill()
        for process in processes.values():
            process.join(WATCH_SECONDS)
        queue = getattr(executor, "_result_queue", None)
        writer = getattr(queue, "_writer", None)
        if writer is not None and not writer.closed:
            writer.close()  # the last end but the reader's: it reads the pipe's end, the pool breaks
        return dead_since

    def _replace(self) -> None:
        """Drop the broken pool; start a fresh one (up to POOL_RESTARTS) and hand it the chunks it lost."""
        broken, self.executor = self.executor, None
        if broken is not None:
            broken.shutdown(wait=True, cancel_futures=True)  # its processes are stopped already
        if self.restarts >= POOL_RESTARTS:
            for chunk in self.pending:
                if not _succeeded(chunk.future):
                    chunk.future = None
            return
        self.restarts += 1
        generation = self.restarts
        self.executor = self._start()
        for chunk in self.pending:
            if not _succeeded(chunk.future):
                self._hand_out(chunk)
                if self.restarts != generation:  # the fresh pool broke at once: that replacement saw to the rest
                    break

    def shutdown(self) -> None:
        # Stopped early (interrupt, closed pipe, failed write): drop the chunks not started yet. A dead worker
        # the pool has not noticed would keep its shutdown waiting for ever: it is broken first (no grace).
        if self.executor is not None:
            self.unstick(0.0, grace=0.0)
            self.executor.shutdown(wait=True, cancel_futures=True)


def _succeeded(future: Future[list[Returned]] | None) -> bool:
    return future is not None and future.done() and not future.cancelled() and future.exception() is None


@contextlib.contextmanager
def worker_pool(options: Mapping[str, Any], workers: int, metrics: bool = False) -> Iterator[_Pool[Any] | None]:
    """One process pool for a whole run (``None`` for one worker): shards scored one after another share it.

    ``metrics``: its workers score with a trail (:func:`trace_tasks.runs._metrics.score_compiled_with_metrics`).
    """
    if workers <= 1:
        yield None
        return
    pool: _Pool[Any] = _Pool(options, workers, metrics)
    try:
        yield pool
    finally:
        pool.shutdown()


def _pooled(chunks: Iterable[tuple[T, Payload, AsText | None]], pool: _Pool[T]) -> Iterator[tuple[T, list[Returned]]]:
    try:
        for context, chunk, text in chunks:
            pool.submit(context, chunk, text)
            while len(pool.pending) >= 2 * pool.workers:
                yield pool.finish()
        while pool.pending:
            yield pool.finish()
    finally:
        pool.pending.clear()  # stopped early: what is left belongs to no one
