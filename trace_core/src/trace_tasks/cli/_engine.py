"""Scoring a stream of chunks in order, in-process, in a process pool, or with Ray.

Chunks are pulled from the input lazily and at most ``2 * workers`` are in
flight, so memory stays flat however long the input is. Results come back in
input order. In-process, each response is scored by its compiled instance
(:class:`trace_tasks.CompiledInstance`: the ground truth was validated and
parsed once); a process pool or Ray gets the items as keyword arguments of
``score_trace_response`` through :func:`trace_tasks.score_trace_batch` (same
scores: the instances were validated before). Either way a failing item
becomes ``{"error": ...}`` instead of stopping the run.
"""

from __future__ import annotations

import collections
import multiprocessing
import signal
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol, TypeVar

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.data import CompiledInstance, score_trace_batch
from trace_tasks.scoring import ScoringOptions, options_from

T = TypeVar("T")
Item = Mapping[str, Any]
Result = dict[str, Any]


class Work(Protocol):
    """One response to score: ``item`` (keyword arguments of ``score_trace_response``) and its compiled instance."""

    @property
    def item(self) -> dict[str, Any] | None: ...

    @property
    def compiled(self) -> CompiledInstance | None: ...


ENGINES = ("local", "ray")
#: Items per chunk in-process (the unit of progress updates and output writes).
LOCAL_CHUNK = 1024
#: Items per chunk sent to a pool worker: big enough that pickling is amortized.
POOL_CHUNK = 2048
#: Items per chunk handed to Ray: each call builds a Ray Dataset, which has a fixed cost.
RAY_CHUNK = 20_000

RAY_MISSING = "--engine ray needs Ray: pip install 'trace-core[ray]'"


class EngineError(RuntimeError):
    """The selected engine cannot run (for example Ray is not installed)."""


def chunk_size(engine: str, workers: int) -> int:
    if engine == "ray":
        return RAY_CHUNK
    return POOL_CHUNK if workers > 1 else LOCAL_CHUNK


def load_ray_scorer() -> Callable[..., list[Result]]:
    """``score_rows_with_ray``, imported only when asked for (Ray is heavy and optional)."""
    try:
        import ray  # noqa: F401  (checked here so the error comes before any input is read)

        from trace_tasks.integrations.ray import score_rows_with_ray
    except ImportError as exc:
        raise EngineError(f"{RAY_MISSING} ({exc})") from exc
    return score_rows_with_ray


def score_compiled(work: Work, opts: ScoringOptions) -> Result:
    """One response scored by its compiled instance (options validated once per run); a caller mistake becomes ``{"error": ...}``."""
    assert work.item is not None and work.compiled is not None
    try:
        return work.compiled.run(check_response(work.item["response"]), opts)
    except Exception as exc:  # isolate the item, as score_trace_batch does
        return {"error": f"{type(exc).__name__}: {exc}"}


def score_chunks(
    chunks: Iterable[tuple[T, list[Work]]], *, options: Mapping[str, Any], workers: int = 1, engine: str = "local"
) -> Iterator[tuple[T, list[Result]]]:
    """For each ``(context, works)`` yield ``(context, results)``, in input order."""
    if engine == "ray":
        yield from _on_ray(((context, _items(works)) for context, works in chunks), options, workers)
    elif workers <= 1:
        opts = options_from(options)
        for context, works in chunks:
            yield context, [score_compiled(work, opts) for work in works]
    else:
        yield from _pooled(((context, _items(works)) for context, works in chunks), options, workers)


def _items(works: list[Work]) -> list[Item]:
    return [work.item for work in works if work.item is not None]


def _on_ray(chunks: Iterable[tuple[T, list[Item]]], options: Mapping[str, Any], workers: int) -> Iterator[tuple[T, list[Result]]]:
    ray_score = load_ray_scorer()
    import ray

    # Start Ray once for the whole stream: score_rows_with_ray would otherwise
    # start and stop a local Ray for every chunk. A running Ray is left alone.
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=workers if workers > 1 else None, include_dashboard=False, log_to_driver=False)
    try:
        for context, items in chunks:
            yield context, list(ray_score(items, **options)) if items else []
    finally:
        if started:
            ray.shutdown()


def ignore_interrupts() -> None:
    """Pool worker initializer: Ctrl-C reaches the whole process group, and only the parent answers it.

    The parent stops, reports one line and exits 130; a worker that took the
    interrupt too would print its own ``KeyboardInterrupt`` traceback.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pooled(chunks: Iterable[tuple[T, list[Item]]], options: Mapping[str, Any], workers: int) -> Iterator[tuple[T, list[Result]]]:
    # spawn, not fork: forking a process that runs threads can deadlock (as in batch.py).
    context_mp = multiprocessing.get_context("spawn")
    pending: collections.deque[tuple[T, Future[list[Result]] | None]] = collections.deque()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context_mp, initializer=ignore_interrupts)
    try:
        for context, items in chunks:
            future = pool.submit(score_trace_batch, items, **options) if items else None
            pending.append((context, future))
            while len(pending) >= 2 * workers:
                yield _finish(pending.popleft())
        while pending:
            yield _finish(pending.popleft())
    finally:
        # Stopped early (interrupt, closed pipe, failed write): drop the chunks not started yet.
        pool.shutdown(wait=True, cancel_futures=True)


def _finish(entry: tuple[T, Future[list[Result]] | None]) -> tuple[T, list[Result]]:
    context, future = entry
    return context, future.result() if future is not None else []
