"""Scoring many responses: ``score_trace_batch``.

Input order is kept, results are deterministic, and a failure is isolated to
its item: it becomes an ``{"error": ...}`` entry instead of stopping the batch.

Items come from data, so each item's instance (``answer_gt``,
``annotation_gt``, ``reward_contract``, ``image_size``, ``metadata``) is
validated through the strict path (:func:`trace_tasks.instances.compile_instance`)
and compiled once per content (a bounded cache per process: the rollouts of a
group, or an instance scored again in the next call, pay for its ground truth
once). A broken instance (a zero-area target box, an unknown type, a contract
that disagrees, an answer its type cannot hold, a missing field, ...) becomes
``{"error": "InstanceError: invalid instance: PATH: MESSAGE; ..."}`` listing
every problem, never a partial reward. A valid item is scored exactly as
``score_trace_response`` would score it alone; that lenient scorer itself is
unchanged.

With ``workers > 1`` the batch is cut into a few large contiguous shares (small
chunks cost more in pickling than they save). The calling process scores the
first share itself and ``workers - 1`` child processes score the rest, so only
the children's shares cross a process boundary. The children are started with
``spawn`` (forking a process that runs threads, as trainers and Ray do, can
deadlock), warmed up once (imports, plugin registry) and kept for the next
call, since starting them costs about a second while a trainer calls once per
step; :func:`shutdown_batch_pools` stops them. No ``signal`` is used, so this is
safe inside threads and Ray workers.
"""

from __future__ import annotations

import atexit
import gc
import multiprocessing
import pickle
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Union, cast

from trace_tasks.instances import InstanceCache

#: Below this many items per worker a pool is slower than scoring in-process.
MIN_ITEMS_PER_WORKER = 512

#: Shares per child process: a few, so one slow share does not idle the others.
CHUNKS_PER_CHILD = 2

BatchResult = dict[str, Union[float, str]]

#: The instance fields of an item (``TrainInstance``'s, as ``score_trace_response``
#: takes them); every other key is the response or a scorer option.
INSTANCE_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")

#: Compiled instances of this process, by content and bounded (each pool child has its own).
INSTANCE_CACHE = InstanceCache(maxsize=4096)

_pools: dict[int, ProcessPoolExecutor] = {}
_pools_lock = threading.Lock()


def _score_one(item: Mapping[str, Any], options: Mapping[str, Any]) -> BatchResult:
    merged = {**options, **item}
    instance = {name: merged.pop(name) for name in INSTANCE_FIELDS if name in merged}
    # image_size and metadata default to None in score_trace_response: the instance has none then.
    for name in ("image_size", "metadata"):
        if name in instance and instance[name] is None:
            del instance[name]
    try:
        compiled = INSTANCE_CACHE.compile(instance)  # InstanceError lists every problem
        if "response" not in merged:
            raise TypeError("score_trace_batch item lacks 'response' (the model output to score)")
        return cast(BatchResult, compiled.score(merged.pop("response"), **merged))
    except Exception as exc:  # isolate the item: a caller mistake in one row must not sink the batch
        return {"error": f"{type(exc).__name__}: {exc}"}


def _score_chunk(chunk: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> list[BatchResult]:
    return [_score_one(item, options) for item in chunk]


def _warm_up() -> None:
    """Child initializer: pay the imports and the registry build once, not in the first chunk."""
    from trace_tasks.plugins import get_registry

    get_registry()
    import scipy.optimize  # noqa: F401  (the assignment solver is imported lazily otherwise)


def _pool(children: int) -> ProcessPoolExecutor:
    with _pools_lock:
        pool = _pools.get(children)
        if pool is None:
            context = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(max_workers=children, mp_context=context, initializer=_warm_up)
            _pools[children] = pool
        return pool


def _drop_pool(children: int, pool: ProcessPoolExecutor) -> None:
    with _pools_lock:
        if _pools.get(children) is pool:
            del _pools[children]
    pool.shutdown(wait=False, cancel_futures=True)


def shutdown_batch_pools() -> None:
    """Stop the child processes ``score_trace_batch`` keeps between calls."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_batch_pools)


def _shares(rows: list[Mapping[str, Any]], workers: int, chunksize: int | None) -> tuple[list[Any], list[list[Any]]]:
    """(the caller's share, the children's chunks), contiguous and in order."""
    own = -(-len(rows) // workers)
    rest = rows[own:]
    size = chunksize or max(MIN_ITEMS_PER_WORKER, -(-len(rest) // ((workers - 1) * CHUNKS_PER_CHILD)))
    return rows[:own], [rest[i : i + size] for i in range(0, len(rest), size)]


def score_trace_batch(
    items: Iterable[Mapping[str, Any]], *, workers: int = 1, chunksize: int | None = None, **options: Any
) -> list[BatchResult]:
    """Score each item (the keyword arguments of ``score_trace_response``) in order.

    ``options`` are defaults applied to every item (an item's own keys win).
    ``workers`` is how many processes score, this one included; batches smaller
    than ``2 * MIN_ITEMS_PER_WORKER`` are scored in-process whatever it says.
    ``chunksize`` overrides the size of the chunks sent to child processes.
    Returns one dict per item: the score dict, or ``{"error": "..."}``.
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if chunksize is not None and (not isinstance(chunksize, int) or isinstance(chunksize, bool) or chunksize < 1):
        raise ValueError(f"chunksize must be a positive integer or None, got {chunksize!r}")
    rows = list(items)
    if workers == 1 or len(rows) < 2 * MIN_ITEMS_PER_WORKER:
        return _score_chunk(rows, options)
    own, chunks = _shares(rows, workers, chunksize)
    children = workers - 1
    pool = _pool(children)
    futures = [_submit(pool, children, chunk, options) for chunk in chunks]
    results = _score_chunk(own, options)
    for chunk, future in zip(chunks, futures, strict=False):
        results.extend(_collect(future, chunk, options, children, pool))
    return results


def _submit(
    pool: ProcessPoolExecutor, children: int, chunk: list[Mapping[str, Any]], options: Mapping[str, Any]
) -> Future[list[BatchResult]] | None:
    """Send one chunk to a child, pickled here; None when it must be scored in-process."""
    try:
        blob = pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None
    try:
        return pool.submit(_score_pickled, blob, options)
    except (BrokenProcessPool, RuntimeError):  # a dead or shut-down pool: start afresh next time
        _drop_pool(children, pool)
        return None


def _score_pickled(blob: bytes, options: Mapping[str, Any]) -> list[BatchResult]:
    """Child side: unpickle a chunk with the cyclic GC paused, then score it.

    Unpickling thousands of nested dicts and lists triggers collection after
    collection: with the GC running it costs ~13 us per item, without it ~4 us
    (measured on the benchmark batch), as much as a third of the scoring itself.
    The data holds no cycles, so pausing the GC for the load frees nothing late.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        chunk = pickle.loads(blob)
    finally:
        if enabled:
            gc.enable()
    return _score_chunk(chunk, options)


def _collect(
    future: Future[list[BatchResult]] | None,
    chunk: list[Mapping[str, Any]],
    options: Mapping[str, Any],
    children: int,
    pool: ProcessPoolExecutor,
) -> list[BatchResult]:
    """A child's results; the chunk is scored here instead when the child could not."""
    if future is not None:
        try:
            return future.result()
        except BrokenProcessPool:  # a child died (killed, out of memory): forget the pool
            _drop_pool(children, pool)
        except Exception:
            pass
    return _score_chunk(chunk, options)
