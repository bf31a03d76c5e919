"""Scoring many responses: ``score_trace_batch``.

Input order is kept, results are deterministic, and a failure is isolated to its
item (it becomes an ``{"error": ...}`` entry instead of stopping the batch). With
``workers > 1`` a process pool scores large chunks (small chunks cost more in
pickling than they save); no ``signal`` is used, so it is safe inside threads
and Ray workers.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Union

from trace_tasks.core.reward_scoring import score_trace_response

#: Below this many items per worker a pool is slower than scoring in-process.
MIN_ITEMS_PER_WORKER = 512

BatchResult = dict[str, Union[float, str]]


def _score_one(item: Mapping[str, Any], options: Mapping[str, Any]) -> BatchResult:
    try:
        return score_trace_response(**{**options, **item})
    except Exception as exc:  # isolate the item: a caller mistake in one row must not sink the batch
        return {"error": f"{type(exc).__name__}: {exc}"}


def _score_chunk(chunk: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> list[BatchResult]:
    return [_score_one(item, options) for item in chunk]


def score_trace_batch(
    items: Iterable[Mapping[str, Any]], *, workers: int = 1, chunksize: int | None = None, **options: Any
) -> list[BatchResult]:
    """Score each item (the keyword arguments of ``score_trace_response``) in order.

    ``options`` are defaults applied to every item (an item's own keys win).
    Returns one dict per item: the score dict, or ``{"error": "..."}``.
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    rows = list(items)
    if workers == 1 or len(rows) < 2 * MIN_ITEMS_PER_WORKER:
        return _score_chunk(rows, options)
    size = chunksize or max(MIN_ITEMS_PER_WORKER, -(-len(rows) // (workers * 4)))
    chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
    # spawn, not fork: forking a process that runs threads (trainers, Ray) can deadlock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results: list[BatchResult] = []
        for part in pool.map(_score_chunk, chunks, [options] * len(chunks)):
            results.extend(part)
    return results
