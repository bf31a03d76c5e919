"""Scoring many responses: ``score_trace_batch``; and one response to one instance record: ``score_instance``.

Input order is kept, results are deterministic, and a failure is isolated to
its item: it becomes an ``{"error": ...}`` entry instead of stopping the batch.

Items come from data, so each item's instance (``answer_gt``,
``annotation_gt``, ``reward_contract``, ``image_size``, ``metadata``, and the
record's ``id``, ``prompt`` and ``image``: an item may be a whole instance
record with its ``response``) is validated through the strict path (:func:`trace_tasks.data.compile_instance`)
and compiled once per content (a bounded cache per process: the rollouts of a
group, or an instance scored again in the next call, pay for its ground truth
once). A broken instance (a zero-area target box, an unknown type, a contract
that disagrees, an answer its type cannot hold, a missing field, ...) becomes
``{"error": "InstanceError: invalid instance: PATH: MESSAGE; ..."}`` listing
every problem, never a partial reward. A valid item is scored exactly as
``score_trace_response`` would score it alone; that lenient scorer itself is
unchanged.

Processes (``workers > 1``)
---------------------------
The batch is cut into a few large contiguous shares (small chunks cost more in
serialisation than they save). The calling process scores the first share
itself and ``workers - 1`` child processes score the rest, so only the
children's shares cross a process boundary. Before scoring its own share the
caller pickles each child chunk (with the options) into a private temporary
file and hands the pool only the file's path; the child writes its results
(pickled) next to it and the
caller reads them when its own share is done. Sending megabytes through the
pool's pipe instead made the pool's feeder thread wait for the interpreter
lock once per 64 KiB while the caller scored, which left two workers at
0.95-1.11x of one; with files nothing large crosses a pipe.

The children are started with ``spawn`` (forking a process that runs threads,
as trainers and Ray do, can deadlock), warmed up once (imports, plugin
registry) and kept for the next call, since starting them costs about a second
while a trainer calls once per step; :func:`shutdown_batch_pools` stops them.

Scripts without ``if __name__ == "__main__"``: a spawned child normally
re-imports the caller's main module (as ``__mp_main__``), which re-runs a
script that has no main guard (a trainer would reload its model in every
child). The functions the children run live in this module, so they never need
the caller's main module: the pool's processes are started with the main
module left out of what ``spawn`` sends them (a filter on
``multiprocessing.spawn.get_preparation_data`` that acts only while this module
starts its own children, in the starting thread; every other process start is
unchanged). An item whose values are instances of classes defined in the
caller's script cannot be unpickled in a child then: its chunk is scored in
the calling process instead.

Timeouts and failures: a child that dies (killed, out of memory) or raises
has its chunk scored in the calling process, and a dead pool is replaced on
the next call. The caller waits at most ``timeout`` seconds (counted from
when the chunks are handed out; by default :data:`TIMEOUT_BASE_SECONDS` plus
:data:`TIMEOUT_SECONDS_PER_ITEM` for each item a child has to score); past it
the unfinished chunks are scored in-process and the pool's processes are
killed and dropped. No ``signal`` is used, so this is safe inside threads
and Ray workers.

A caller that dies without cleaning up (SIGKILL, the out-of-memory killer)
leaves nothing running and nothing for long: each child checks every
:data:`PARENT_CHECK_SECONDS` that the process that started it is still its
parent and exits when it is not (a thread polling ``os.getppid()``, which
works wherever Python runs; Linux's ``PR_SET_PDEATHSIG`` would fire when the
*thread* that started the pool ends, and a trainer may call from a short-lived
thread). The chunk files are named ``trace_tasks_batch_<caller pid>_*`` in the
temporary directory; whenever a pool starts, the files of callers that are no
longer running and that are older than :data:`STALE_AFTER_SECONDS` are removed
(the age spares a live caller in another PID namespace sharing ``/tmp``: were
its files removed, its chunks would only be scored in-process).

Speed (``benchmarks/bench_batch.py``: 20,000 mixed responses, pool kept,
alternating rounds; figures and load in ``benchmarks/README.md``): with two
workers the caller and the child each used about 57% of one worker's CPU
seconds, so with a free core each the batch takes ~1.7x less wall time than
with one worker. On a machine whose cores other sessions keep busy (load
average 5.5 on 2 cores when measured) a second worker gains nothing: the
kernel's autogroup scheduler gives a session's processes one share between
them. Starting the pool costs about a second (more under load); it is paid on
the first call only.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import math
import multiprocessing.context
import multiprocessing.spawn
import os
import pickle
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeoutError  # not the builtin before 3.11
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Union, cast

import attrs

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.data._cache import InstanceCache
from trace_tasks.data._records import TrainInstance
from trace_tasks.errors import InstanceError, OptionError, Problem, ResponseTypeError, TraceTasksError
from trace_tasks.scoring import (
    OPTION_BY_NAME,
    OPTION_NAMES,
    ScoringOptions,
    document_options,
    native_solves_assignments,
    options_from,
)

#: Below this many items per worker a pool is slower than scoring in-process.
MIN_ITEMS_PER_WORKER = 512

#: Shares per child process: a few, so a child starts on its first chunk while the caller writes the next.
CHUNKS_PER_CHILD = 2

#: Default ``timeout``: this many seconds (a cold pool start on a busy machine) ...
TIMEOUT_BASE_SECONDS = 60.0
#: ... plus this many per item of the busiest child (a mixed item takes ~0.05-0.3 ms).
TIMEOUT_SECONDS_PER_ITEM = 0.02

#: How often a child checks that its caller is alive (seconds); it exits within about this long of the caller's death.
PARENT_CHECK_SECONDS = 1.0
#: The chunk and result files: ``trace_tasks_batch_<caller pid>_<random>.pickle`` (and ``.pickle.out``).
CHUNK_PREFIX = "trace_tasks_batch_"
#: A dead caller's chunk files are removed when a pool starts, once they are this old (seconds).
STALE_AFTER_SECONDS = 60.0

BatchResult = dict[str, Union[float, str]]

#: The instance fields of an item (``TrainInstance``'s, as ``score_trace_response``
#: takes them); every other key is the response or a scorer option.
INSTANCE_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")
#: Every field of an instance record (``TrainInstance``: the instance fields, ``id``, ``prompt``, ``image``).
RECORD_FIELDS: tuple[str, ...] = tuple(field.name for field in attrs.fields(TrainInstance))
#: The scorer's keyword arguments besides the instance and the response: its options, and the
#: further image-size sources.
SCORE_KEYWORDS: tuple[str, ...] = (*OPTION_NAMES, "image_sizes", "extra_info")

#: Compiled instances of this process, by content and bounded (each pool child has its own).
INSTANCE_CACHE = InstanceCache(maxsize=4096)

_pools: dict[int, ProcessPoolExecutor] = {}
_pools_lock = threading.Lock()


def score_keywords(keywords: Mapping[str, Any], *, what: str = "scorer option", also: tuple[str, ...] = ()) -> dict[str, Any]:
    """``keywords`` checked as the scorer's options and size sources: an unknown name or a bad value is an
    :class:`~trace_tasks.errors.OptionError` naming it (never a ``TypeError`` about an internal signature).
    ``also`` are the other names the caller accepted (listed in the message)."""
    unknown = sorted(set(keywords) - set(SCORE_KEYWORDS), key=str)
    if unknown:
        raise OptionError(f"unknown {what}(s) {unknown}; accepted: {[*also, *SCORE_KEYWORDS]}")
    options_from({name: value for name, value in keywords.items() if name in OPTION_BY_NAME})
    return dict(keywords)


def _record_instance(merged: dict[str, Any]) -> dict[str, Any]:
    """The instance record's fields, taken out of ``merged`` (``None`` sizes and metadata left out)."""
    instance = {name: merged.pop(name) for name in RECORD_FIELDS if name in merged}
    # image_size and metadata default to None in score_trace_response: the instance has none then.
    for name in ("image_size", "metadata"):
        if name in instance and instance[name] is None:
            del instance[name]
    return instance


def _score_one(item: Mapping[str, Any], options: Mapping[str, Any]) -> BatchResult:
    try:
        if not isinstance(item, Mapping):
            raise TypeError(
                f"a score_trace_batch item must be a mapping (an instance record with its 'response'), got {type(item).__name__}"
            )
        merged = {**options, **item}
        instance = _record_instance(merged)
        compiled = INSTANCE_CACHE.compile(instance)  # InstanceError lists every problem
        if "response" not in merged:
            raise ResponseTypeError("score_trace_batch item lacks 'response' (the model output to score)")
        response = merged.pop("response")
        keywords = score_keywords(merged, what="item key", also=("response", *RECORD_FIELDS))
        return cast(BatchResult, compiled.score(response, **keywords))
    except Exception as exc:  # isolate the item: a caller mistake in one row must not sink the batch
        return {"error": f"{type(exc).__name__}: {exc}"}


def score_instance(instance: Mapping[str, Any], response: str, **options: Any) -> dict[str, float]:
    """Score ``response`` against a whole instance record: exactly ``score_trace_response``'s dict.

    ``instance`` is a record as the data tools read it (``answer_gt``,
    ``annotation_gt``, ``reward_contract``, and optionally ``id``,
    ``image_size``, ``metadata``, ``prompt``, ``image``), validated as
    ``trace-tasks validate`` validates it (compiled once per content, in a
    bounded cache shared with :func:`score_trace_batch`). ``options`` are the
    scorer's (``trace_reward_mode``, the weights, ``trace_recovery``, ...) and
    its further size sources (``image_sizes``, ``extra_info``).

    Raises :class:`~trace_tasks.errors.OptionError` for an unknown or invalid
    option (checked first), :class:`~trace_tasks.errors.ResponseTypeError` for
    a non-string response, and :class:`~trace_tasks.errors.InstanceError`
    naming every problem of an invalid record (a ``response`` key in the
    record is one: pass the response as the argument).
    """
    checked = score_keywords(options)
    text = check_response(response)
    name = instance.get("id") if isinstance(instance, Mapping) else None
    record = f"instance {name!r}" if isinstance(name, str) else None
    if isinstance(instance, Mapping) and "response" in instance:
        raise InstanceError(
            [Problem("$.response", "is not an instance field: pass the response as score_instance's second argument")],
            record=record,
        )
    compiled = INSTANCE_CACHE.compile(instance, record=record)
    return compiled.score(text, **checked)


def _score_chunk(chunk: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> list[BatchResult]:
    return [_score_one(item, options) for item in chunk]


# --- children that never import the caller's main module -------------------------------------

_launching = threading.local()


def _main_free_preparation_data(original: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """Wrap ``spawn.get_preparation_data``: without the main module while this thread starts our child."""

    def preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        if getattr(_launching, "main_free", False):
            # What makes the child run the caller's script (or ``-m`` module) as ``__mp_main__``.
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data

    preparation_data.trace_tasks_main_free = True  # type: ignore[attr-defined]
    return preparation_data


def _install_main_free_filter() -> None:
    """Install the filter once; it is transparent for every process this module does not start."""
    current = getattr(multiprocessing.spawn, "get_preparation_data", None)
    # Listed in multiprocessing.spawn.__all__; a Python without it starts children as multiprocessing does.
    if current is not None and not getattr(current, "trace_tasks_main_free", False):
        multiprocessing.spawn.get_preparation_data = _main_free_preparation_data(current)  # type: ignore[assignment]


class _MainFreeSpawnProcess(multiprocessing.context.SpawnProcess):
    """A spawned process started without the caller's main module."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:  # multiprocessing's name
        _launching.main_free = True
        try:
            return multiprocessing.context.SpawnProcess._Popen(process_obj)
        finally:
            _launching.main_free = False


class _MainFreeSpawnContext(multiprocessing.context.SpawnContext):
    Process = _MainFreeSpawnProcess


def _warm_up(parent: int | None = None) -> None:
    """Child initializer: exit with the ``parent``; pay the imports and the registry build once, not in the first chunk."""
    if parent is not None:
        watch_parent(parent)
    from trace_tasks.plugins import get_registry

    get_registry()
    if not native_solves_assignments():  # the native path solves sets without it (scoring.native_solves_assignments)
        import scipy.optimize  # noqa: F401  (the assignment solver is imported lazily otherwise)


def watch_parent(parent: int) -> None:
    """In a pool child: end this process once ``parent`` is no longer its parent (checked every second, from a daemon thread).

    Used by ``score_trace_batch``'s children and the CLI's pool workers alike:
    a caller killed with SIGKILL cannot stop its pool.
    """
    threading.Thread(target=_exit_with, args=(parent,), name="trace-tasks-parent-watch", daemon=True).start()


def _exit_with(parent: int) -> None:
    """Child watchdog: return never while ``parent`` is this process's parent; exit once it is gone."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)  # the caller is dead: nobody will read this child's results


# --- the kept pools ----------------------------------------------------------------------------


def _pool(children: int) -> ProcessPoolExecutor:
    with _pools_lock:
        pool = _pools.get(children)
        if pool is None:
            remove_stale_files()
            _install_main_free_filter()
            pool = ProcessPoolExecutor(
                max_workers=children, mp_context=_MainFreeSpawnContext(), initializer=_warm_up, initargs=(os.getpid(),)
            )
            _pools[children] = pool
        return pool


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (PermissionError): alive
        return True
    return True


def remove_stale_files(directory: str | None = None, *, now: float | None = None) -> list[str]:
    """Remove the chunk files of callers no longer running, older than :data:`STALE_AFTER_SECONDS`; returns their paths.

    Only this user's regular files named ``trace_tasks_batch_<pid>_*`` in ``directory``
    (the temporary directory) are looked at; nothing here raises.
    """
    directory = directory or tempfile.gettempdir()
    cutoff = (time.time() if now is None else now) - STALE_AFTER_SECONDS
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        pid_text, sep, _ = entry.name[len(CHUNK_PREFIX) :].partition("_")
        if not entry.name.startswith(CHUNK_PREFIX) or not sep or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        mine = uid is None or st.st_uid == uid
        if not stat.S_ISREG(st.st_mode) or not mine or st.st_mtime > cutoff or pid == os.getpid() or _running(pid):
            continue
        with contextlib.suppress(OSError):
            os.remove(entry.path)
            removed.append(entry.path)
    return removed


def _drop_pool(children: int, pool: ProcessPoolExecutor, *, kill: bool = False) -> None:
    """Forget ``pool`` (the next call starts a fresh one); ``kill`` also stops its processes now.

    A stuck child may be stopped (SIGSTOP) or ignore SIGTERM, hence SIGKILL; the pool is
    dropped as a whole, so no other child is left waiting on a lock the killed one held.
    """
    with _pools_lock:
        if _pools.get(children) is pool:
            del _pools[children]
    # ProcessPoolExecutor has no public way to stop a busy child; its process table is stable since 3.2.
    processes = list((getattr(pool, "_processes", None) or {}).values()) if kill else []
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:  # so that none writes a result file after the caller removed it
        with contextlib.suppress(Exception):
            process.join(1.0)


def shutdown_batch_pools() -> None:
    """Stop the child processes ``score_trace_batch`` keeps between calls."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_batch_pools)


# --- the batch -----------------------------------------------------------------------------------


def _shares(rows: list[Mapping[str, Any]], workers: int, chunksize: int | None) -> tuple[list[Any], list[list[Any]]]:
    """(the caller's share, the children's chunks), contiguous and in order."""
    own = -(-len(rows) // workers)
    rest = rows[own:]
    size = chunksize or max(MIN_ITEMS_PER_WORKER, -(-len(rest) // ((workers - 1) * CHUNKS_PER_CHILD)))
    return rows[:own], [rest[i : i + size] for i in range(0, len(rest), size)]


def _check_timeout(timeout: float | None) -> None:
    if timeout is None:
        return
    wanted = "timeout must be a positive number of seconds (math.inf: wait forever) or None"
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise OptionError(f"{wanted}, got {timeout!r}")
    try:
        seconds = float(timeout)
    except OverflowError:  # 10**400: no float holds it (say math.inf to wait forever)
        raise OptionError(f"{wanted}, got an int too large for a float") from None
    if math.isnan(seconds) or seconds <= 0:
        raise OptionError(f"{wanted}, got {timeout!r}")


def _default_timeout(chunks: Sequence[Sequence[Any]], children: int) -> float:
    """The default ``timeout`` for ``chunks`` spread over ``children``: base plus per item of the busiest child."""
    per_child = -(-sum(len(chunk) for chunk in chunks) // max(children, 1))
    busiest = max(per_child, max((len(chunk) for chunk in chunks), default=0))
    return TIMEOUT_BASE_SECONDS + TIMEOUT_SECONDS_PER_ITEM * busiest


@document_options
def score_trace_batch(
    items: Iterable[Mapping[str, Any]],
    *,
    workers: int = 1,
    chunksize: int | None = None,
    timeout: float | None = None,
    options: ScoringOptions | None = None,
    **keywords: Any,
) -> list[BatchResult]:
    """Score each item (the keyword arguments of ``score_trace_response``, or a whole instance record with its
    ``response``: ``id``, ``prompt`` and ``image`` are validated with the instance) in order.

    ``options`` (a :class:`~trace_tasks.ScoringOptions` record) and ``keywords``
    (scorer options by name, overriding the record's, and size sources) are
    defaults applied to every item (an item's own keys win); a key that is no
    record field, option or size source is an ``OptionError`` item.
    ``workers`` is how many processes score, this one included; batches smaller
    than ``2 * MIN_ITEMS_PER_WORKER`` are scored in-process whatever it says.
    ``chunksize`` overrides the size of the chunks sent to child processes.
    ``timeout`` bounds, in seconds from when the chunks are handed out, the wait
    for the children (``None``: :data:`TIMEOUT_BASE_SECONDS`, 60 s plus 20 ms per item
    of the busiest child; ``math.inf``: no bound); a chunk not back by then is
    scored in-process and the pool's processes are killed (a fresh pool starts next call).
    Returns one dict per item: the score dict, or ``{"error": "..."}``.
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise OptionError(f"workers must be a positive integer, got {workers!r}")
    if chunksize is not None and (not isinstance(chunksize, int) or isinstance(chunksize, bool) or chunksize < 1):
        raise OptionError(f"chunksize must be a positive integer or None, got {chunksize!r}")
    _check_timeout(timeout)
    if options is not None and not isinstance(options, ScoringOptions):
        raise OptionError(f"options must be a trace_tasks.ScoringOptions (or None), got {type(options).__name__}")
    if options is not None:
        keywords = {**options.keywords(), **keywords}
    rows = list(items)
    if workers == 1 or len(rows) < 2 * MIN_ITEMS_PER_WORKER:
        return _score_chunk(rows, keywords)
    own, chunks = _shares(rows, workers, chunksize)
    children = workers - 1
    pool = _pool(children)
    wait = _default_timeout(chunks, children) if timeout is None else timeout
    handouts = [_hand_out(pool, children, chunk, keywords) for chunk in chunks]
    deadline = time.monotonic() + wait if math.isfinite(wait) else None
    try:
        results = _score_chunk(own, keywords)
        gathering = _Gathering(pool, children, deadline)
        for chunk, handout in zip(chunks, handouts, strict=True):
            results.extend(gathering.collect(chunk, handout, keywords))
    finally:
        for handout in handouts:
            if handout is not None:
                handout.remove_files()
    return results


@dataclass
class _Handout:
    """A chunk handed to the pool: its input file, where the child writes the results, the future."""

    path: str
    future: Future[None] | None = None

    @property
    def out_path(self) -> str:
        return self.path + ".out"

    def remove_files(self) -> None:
        for path in (self.path, self.out_path):
            with contextlib.suppress(OSError):
                os.remove(path)


def _hand_out(
    pool: ProcessPoolExecutor, children: int, chunk: list[Mapping[str, Any]], options: Mapping[str, Any]
) -> _Handout | None:
    """Write one chunk to a file and give the pool its path; None when it must be scored in-process."""
    try:
        blob = pickle.dumps((dict(options), chunk), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an item holds something unpicklable (a lambda): scored here instead
        return None
    try:
        fd, path = tempfile.mkstemp(prefix=f"{CHUNK_PREFIX}{os.getpid()}_", suffix=".pickle")
    except OSError:
        return None
    handout = _Handout(path)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(blob)
        handout.future = pool.submit(_score_file, path, handout.out_path)
    except (BrokenProcessPool, RuntimeError):  # a dead or shut-down pool: start afresh next time
        _drop_pool(children, pool)
    except OSError:  # the disk is full
        pass
    if handout.future is None:
        handout.remove_files()
        return None
    return handout


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Loading thousands of nested dicts triggers collection after collection (~3x the load itself).

    The loaded data holds no cycles, so pausing the cyclic GC frees nothing late.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _score_file(path: str, out_path: str) -> None:
    """Child side: load a chunk from ``path``, score it, write the results to ``out_path``."""
    with open(path, "rb") as file:
        blob = file.read()
    with _gc_paused():
        options, chunk = pickle.loads(blob)
        # This process is ours: the chunk's objects (thousands of dicts, alive until the chunk is
        # done) are set aside from the cyclic GC, which would otherwise walk them in every full
        # collection while the chunk is scored; they are handed back to it afterwards.
        gc.freeze()
    try:
        # Pickle keeps every value's type (a plugin's numpy float stays one). marshal would load ~35%
        # faster but silently turns a numpy float into its bytes; checking every value first costs the gain.
        payload = pickle.dumps(_score_chunk(chunk, options), protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        gc.unfreeze()
    if not os.path.exists(path):  # the caller gave up on this chunk (interrupted) and cleaned up: leave nothing
        return
    # Created exclusively (never through a planted file or link) and private, like the input.
    with os.fdopen(os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
        file.write(payload)


def _read_results(out_path: str, expected: int) -> list[BatchResult]:
    with open(out_path, "rb") as file:
        payload = file.read()
    with _gc_paused():
        results = pickle.loads(payload)
    if not isinstance(results, list) or len(results) != expected:
        raise TraceTasksError(f"a child returned {type(results).__name__} for {expected} items")
    return cast(list[BatchResult], results)


class _Gathering:
    """Collects the children's results in order until the deadline; after it, scores in-process."""

    def __init__(self, pool: ProcessPoolExecutor, children: int, deadline: float | None) -> None:
        self.pool = pool
        self.children = children
        self.deadline = deadline
        self.abandoned = False

    def _remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def collect(self, chunk: list[Mapping[str, Any]], handout: _Handout | None, options: Mapping[str, Any]) -> list[BatchResult]:
        """A child's results for ``chunk``; the chunk is scored here instead when the child could not."""
        future = None if handout is None else handout.future
        if handout is not None and future is not None and not (self.abandoned and not future.done()):
            try:
                future.result(timeout=self._remaining())
                return _read_results(handout.out_path, len(chunk))
            except FutureTimeoutError:  # a stuck child: stop waiting for any of them
                self.abandoned = True
                _drop_pool(self.children, self.pool, kill=True)
            except BrokenProcessPool:  # a child died (killed, out of memory): forget the pool
                _drop_pool(self.children, self.pool)
            except Exception:  # the child raised (an item's class it cannot import, a full disk)
                pass
        return _score_chunk(chunk, options)
