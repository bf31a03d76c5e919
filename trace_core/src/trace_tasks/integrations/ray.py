"""Scoring at scale on Ray (needs ``pip install 'trace-core[ray]'``).

* :func:`score_dataset` adds score columns to a Ray Dataset with ``map_batches``
  over pandas batches.
* :func:`score_rows_with_ray` is the Ray engine of ``trace-tasks score``: the
  same input and output as :func:`trace_tasks.score_trace_batch`, spread over
  Ray tasks.

Every row's instance goes through the strict path
(:func:`trace_tasks.instances.compile_instance`, cached by content in each
worker process). Unlike the trainer adapters, a row that cannot be scored (a
malformed instance, or one that cannot be scored honestly: a zero-area target
box, an unknown type, a contract that disagrees, ...) does not stop the job: it
gets zeros in the score columns and its message, listing every problem, in the
``error`` column (``score_trace_batch`` does the same with ``{"error": ...}``).
Filter on ``error`` before using the scores. Invalid options still raise before
anything runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trace_tasks.batch import MIN_ITEMS_PER_WORKER, BatchResult, score_trace_batch
from trace_tasks.integrations._common import (
    REQUIRED_FIELDS,
    compile_ground_truth,
    require,
    scorer_options,
    stable_keys,
    stable_view,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; ray and pandas stay optional
    import pandas
    import ray.data

__all__ = ["DEFAULT_INSTANCE_COLUMNS", "score_dataset", "score_rows_with_ray"]

#: Columns read by default: one per instance field. Add ``"image_size"`` or
#: ``"metadata"`` when your dataset has them, or pass one column name holding
#: the whole instance (a mapping or its JSON string).
DEFAULT_INSTANCE_COLUMNS: tuple[str, ...] = REQUIRED_FIELDS


def _score_pandas_batch(
    batch: pandas.DataFrame,
    *,
    response_column: str,
    instance_columns: str | tuple[str, ...],
    options: dict[str, Any],
    prefix: str,
    error_column: str,
) -> pandas.DataFrame:
    keys = stable_keys()
    columns: dict[str, list[float]] = {key: [] for key in keys}
    errors: list[str | None] = []
    responses = batch[response_column].tolist()
    if isinstance(instance_columns, str):
        instances = batch[instance_columns].tolist()
    else:
        values = {name: batch[name].tolist() for name in instance_columns}
        instances = [{name: values[name][i] for name in instance_columns} for i in range(len(batch))]
    for response, instance in zip(responses, instances, strict=False):
        try:
            compiled, inputs = compile_ground_truth(instance, where="instance")  # InstanceError for a broken one
            text = response if isinstance(response, str) else ""
            result = stable_view(compiled.score(text, **inputs, **options))
            error = None
        except Exception as exc:  # one bad row must not sink a job over millions of rows
            result = dict.fromkeys(keys, 0.0)
            error = f"{type(exc).__name__}: {exc}"
        for key in keys:
            columns[key].append(result[key])
        errors.append(error)
    batch = batch.copy()
    for key in keys:
        batch[prefix + key] = columns[key]
    batch[prefix + error_column] = errors
    return batch


def score_dataset(
    ds: ray.data.Dataset,
    *,
    response_column: str = "response",
    instance_columns: str | Sequence[str] = DEFAULT_INSTANCE_COLUMNS,
    prefix: str = "",
    error_column: str = "error",
    batch_size: int | None = 1024,
    **options: Any,
) -> ray.data.Dataset:
    """Add a column per always-present score key (``overall``, ``format``, ...) and an error column.

    ``instance_columns``: the columns holding ``answer_gt``, ``annotation_gt``,
    ``reward_contract`` (and optionally ``image_size``, ``metadata``), each a
    mapping or its JSON string; or one column name holding the whole instance.
    Storing instances as JSON strings is the most robust: Arrow cannot give one
    type to annotation values that differ in shape from row to row.
    ``prefix`` is prepended to every added column name. ``options`` are scorer
    options, checked now. Lazy like every Ray Data transform.
    """
    require("ray", "ray")
    require("pandas", "ray")
    picked = scorer_options(options, strict=True)
    columns = instance_columns if isinstance(instance_columns, str) else tuple(instance_columns)
    return ds.map_batches(
        _score_pandas_batch,  # type: ignore[arg-type]  # Ray's stubs do not model fn_kwargs
        batch_format="pandas",
        batch_size=batch_size,
        fn_kwargs={
            "response_column": response_column,
            "instance_columns": columns,
            "options": picked,
            "prefix": prefix,
            "error_column": error_column,
        },
    )


def _score_chunk(rows: list[Mapping[str, Any]], options: dict[str, Any]) -> list[BatchResult]:
    return score_trace_batch(rows, **options)


def score_rows_with_ray(
    rows: Iterable[Mapping[str, Any]],
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    chunksize: int | None = None,
    **options: Any,
) -> list[BatchResult]:
    """Score ``score_trace_response`` keyword dicts on Ray; same contract as ``score_trace_batch``.

    Returns one dict per row, in order: the full score dict (diagnostics
    included), or ``{"error": "..."}`` for a row that raised. ``options`` are
    defaults for every row (a row's own keys win). Connects to ``address``
    (``"auto"`` for a running cluster) or starts a local Ray with ``num_cpus``;
    a Ray started here is shut down before returning.
    """
    ray = require("ray", "ray")
    scorer_options(options, strict=True)  # fail before starting anything
    items = list(rows)
    if not items:
        return []
    started = False
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        workers = max(1, int(ray.available_resources().get("CPU", 1)))
        # Few, large chunks: per-task overhead is milliseconds, per-row scoring microseconds.
        size = chunksize or max(MIN_ITEMS_PER_WORKER, -(-len(items) // (workers * 4)))
        remote = ray.remote(_score_chunk)
        refs = [remote.remote(items[i : i + size], options) for i in range(0, len(items), size)]
        results: list[BatchResult] = []
        for part in ray.get(refs):
            results.extend(part)
        return results
    finally:
        if started:
            ray.shutdown()
