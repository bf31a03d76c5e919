"""Scoring at scale on Ray (needs ``pip install 'trace-core[ray]'``).

* :func:`score_dataset` adds score columns to a Ray Dataset with ``map_batches``
  over Arrow batches: one output row per input row, in the input's order
  (``preserve_order``), readable back by pandas and pyarrow.
* :func:`score_rows_with_ray`: the same input and output as
  :func:`trace_tasks.score_trace_batch`, spread over Ray tasks (rows held by
  the caller; ``trace-tasks score --engine ray`` reads and writes on the
  cluster instead: :func:`trace_tasks.runs.score_files` with ``engine='ray'``).
* :mod:`trace_tasks.integrations.ray_cluster` checks that every node scores as
  the driver would; call ``check_cluster()`` before scoring on a cluster.

Every row's instance goes through the strict path
(:func:`trace_tasks.data.compile_instance`, cached by content in each
worker process). Unlike the trainer adapters, a row that cannot be scored (a
malformed instance, or one that cannot be scored honestly: a zero-area target
box, an unknown type, a contract that disagrees, ...) does not stop the job: it
gets zeros in the score columns and its message, listing every problem, in the
``error`` column (``score_trace_batch`` does the same with ``{"error": ...}``).
Filter on ``error`` before using the scores; it is a string column, null on
every row that scored (``None`` in rows and Arrow; in pandas, the dtype's
missing value: test with ``isna()``).
Invalid options still raise before anything runs.

Per-row options: like :func:`trace_tasks.score_trace_batch`, where a row's own
keys win over the call's options, :func:`score_dataset` reads the columns named
after scorer options (``trace_reward_mode``, ``answer_weight``,
``annotation_weight``, ``format_weight``, ``trace_annotation_reward_formula``,
``point_half_life_px``) and the scorer inputs ``image_sizes`` and
``extra_info`` when the dataset has them; a null value there (Arrow cannot
leave a key out of one row) means "not set".

``uv run``: Ray's default under ``uv run`` starts every worker through
``uv run`` too, in an environment it builds from the project; when that
environment lacks Ray or this package the workers die with "No module named
'ray'" after minutes. :func:`score_rows_with_ray` starts its own Ray with that
hook off (``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``: the workers use the driver's
interpreter); :func:`score_dataset`, which runs on a Ray someone else started,
refuses at once with one line saying what to set, unless the variable is set
either way.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trace_tasks.data import MIN_ITEMS_PER_WORKER, BatchResult, score_trace_batch
from trace_tasks.errors import TraceTasksError
from trace_tasks.integrations._common import (
    REQUIRED_FIELDS,
    SCORER_OPTIONS,
    compile_ground_truth,
    require,
    scorer_options,
    stable_keys,
    stable_view,
    to_plain,
)
from trace_tasks.integrations.ray_cluster import check_worker, fingerprint

if TYPE_CHECKING:  # pragma: no cover - typing only; ray and pyarrow stay optional
    import pyarrow
    import ray.data

__all__ = [
    "DEFAULT_INSTANCE_COLUMNS",
    "ROW_OPTION_COLUMNS",
    "UV_RUN_ENV",
    "UvRunError",
    "disable_uv_hook",
    "score_dataset",
    "score_rows_with_ray",
    "uv_run_problem",
]

#: Columns read by default: one per instance field. Add ``"image_size"`` or
#: ``"metadata"`` when your dataset has them, or pass one column name holding
#: the whole instance (a mapping or its JSON string).
DEFAULT_INSTANCE_COLUMNS: tuple[str, ...] = REQUIRED_FIELDS


#: Columns read per row when the dataset has them, as ``score_trace_batch`` reads an item's own keys.
ROW_OPTION_COLUMNS: tuple[str, ...] = (*SCORER_OPTIONS, "image_sizes", "extra_info")
#: Ray's switch for starting workers through ``uv run`` (read when ``ray`` is imported).
UV_RUN_ENV = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"


class UvRunError(TraceTasksError, RuntimeError):
    """Ray would start its workers through ``uv run``; see :func:`uv_run_problem`."""


def _uv_run_cmdline() -> list[str] | None:
    """The command line of the nearest ancestor process that is ``uv run``, as Ray detects it."""
    try:
        import psutil  # type: ignore[import-untyped]  # a dependency of Ray, without stubs
    except ImportError:
        return None
    try:
        parents = psutil.Process().parents()
    except psutil.Error:
        return None
    for parent in parents:
        try:
            cmdline: list[str] = parent.cmdline()  # psutil has no stubs
        except psutil.Error:
            continue
        if _is_uv_run(cmdline):
            return cmdline
    return None


def _is_uv_run(cmdline: Sequence[str]) -> bool:
    # Ray's own test (ray/_private/runtime_env/uv_runtime_env_hook.py, _get_uv_run_cmdline)
    return len(cmdline) > 1 and os.path.basename(cmdline[0]) == "uv" and cmdline[1] == "run"


def uv_run_problem(environ: Mapping[str, str] | None = None, cmdline: Sequence[str] | None = None) -> str | None:
    """One line saying why Ray workers would start through ``uv run``, or ``None``.

    ``None`` when :data:`UV_RUN_ENV` is set (either way: the user decided) or
    when no ancestor process is ``uv run``. ``environ`` defaults to this
    process's environment, ``cmdline`` (an ancestor's command line) to the
    nearest ``uv run`` among this process's ancestors.
    """
    environ = os.environ if environ is None else environ
    if environ.get(UV_RUN_ENV) is not None:
        return None
    if cmdline is None:
        cmdline = _uv_run_cmdline()
    if not cmdline or not _is_uv_run(cmdline):
        return None
    return (
        f"this Python runs under `uv run`, so Ray starts every worker through `uv run` as well, in an environment "
        f"it builds from the project, where workers often fail with \"No module named 'ray'\" after minutes: set "
        f"{UV_RUN_ENV}=0 before starting Python (workers then use this interpreter), or {UV_RUN_ENV}=1 to keep "
        f"Ray's uv workers"
    )


def disable_uv_hook() -> None:
    """Start our own Ray with its workers on this interpreter (``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``).

    Ray reads the variable when ``ray`` is imported; if it already was, its
    constant is switched off as well (it only governs the Ray we start now).
    """
    os.environ[UV_RUN_ENV] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and hasattr(constants, UV_RUN_ENV):
        setattr(constants, UV_RUN_ENV, False)


def _is_null(value: Any) -> bool:
    """A cell that means "not set": Arrow's null (``None``) or a float NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _row_overrides(values: Mapping[str, list[Any]], i: int) -> dict[str, Any]:
    """Row ``i``'s own scorer inputs (non-null cells of the :data:`ROW_OPTION_COLUMNS` present)."""
    overrides = {}
    for name, column in values.items():
        value = column[i]
        if not _is_null(value):
            overrides[name] = to_plain(value)
    return overrides


def _score_arrow_batch(
    batch: pyarrow.Table,
    *,
    response_column: str,
    instance_columns: str | tuple[str, ...],
    options: dict[str, Any],
    prefix: str,
    error_column: str,
    expected: Mapping[str, Any] | None = None,
) -> pyarrow.Table:
    """``batch`` with the score columns and the error column added: same rows, same order.

    ``expected`` is the driver's :func:`~trace_tasks.integrations.ray_cluster.fingerprint`:
    a worker whose families, versions or pins differ raises
    :class:`~trace_tasks.errors.ClusterMismatchError` (the job fails at its
    first batch) instead of giving every row an error.

    The input's columns pass through as Arrow data (never through pandas).
    The result carries no pandas metadata, so pandas reads each column from
    its Arrow type (metadata naming an Arrow-backed dtype such as
    ``struct<...>[pyarrow]`` makes ``pandas.read_parquet`` fail).
    """
    import pyarrow

    if expected is not None:
        check_worker(expected)
    keys = stable_keys(options)
    columns: dict[str, list[float]] = {key: [] for key in keys}
    errors: list[str | None] = []
    responses = batch.column(response_column).to_pylist()
    if isinstance(instance_columns, str):
        instances = batch.column(instance_columns).to_pylist()
    else:
        values = {name: batch.column(name).to_pylist() for name in instance_columns}
        instances = [{name: values[name][i] for name in instance_columns} for i in range(batch.num_rows)]
    taken = {instance_columns} if isinstance(instance_columns, str) else set(instance_columns)
    present = set(batch.column_names)
    own = {name: batch.column(name).to_pylist() for name in ROW_OPTION_COLUMNS if name in present and name not in taken}
    for i, (response, instance) in enumerate(zip(responses, instances, strict=True)):
        try:
            compiled, inputs = compile_ground_truth(instance, where="instance")  # InstanceError for a broken one
            text = response if isinstance(response, str) else ""
            row = _row_overrides(own, i) if own else {}
            result = stable_view(compiled.score(text, **{**inputs, **options, **row}), keys)  # the row's own keys win
            error = None
        except Exception as exc:  # one bad row must not sink a job over millions of rows
            result = dict.fromkeys(keys, 0.0)
            error = f"{type(exc).__name__}: {exc}"
        for key in keys:
            columns[key].append(result[key])
        errors.append(error)
    table = batch.replace_schema_metadata(_without_pandas_metadata(batch.schema.metadata))
    for key in keys:
        table = _set_column(table, prefix + key, pyarrow.array(columns[key], type=pyarrow.float64()))
    # Typed string, also in a batch where every row scored (inference would give a null-typed column).
    return _set_column(table, prefix + error_column, pyarrow.array(errors, type=pyarrow.string()))


def _without_pandas_metadata(metadata: Mapping[bytes, bytes] | None) -> dict[bytes, bytes] | None:
    """Schema metadata minus pandas' key (it describes the columns as some pandas frame held them)."""
    kept = {key: value for key, value in (metadata or {}).items() if key != b"pandas"}
    return kept or None


def _set_column(table: pyarrow.Table, name: str, values: pyarrow.Array) -> pyarrow.Table:
    index = table.schema.get_field_index(name)
    if index == -1:
        return table.append_column(name, values)
    return table.set_column(index, name, values)


def score_dataset(
    ds: ray.data.Dataset,
    *,
    response_column: str = "response",
    instance_columns: str | Sequence[str] = DEFAULT_INSTANCE_COLUMNS,
    prefix: str = "",
    error_column: str = "error",
    batch_size: int | None = 1024,
    preserve_order: bool = True,
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

    Rows: one output row per input row, with the input's columns unchanged
    (as Arrow data, never through pandas) and the new columns added (an input
    column of the same name is replaced); within a batch the rows keep their
    order. ``preserve_order=True`` (the default) keeps the input's order
    across blocks too: the result runs with Ray Data's
    ``execution_options.preserve_order`` on, in a ``DataContext`` of its own
    (``ds``, ``DataContext.get_current()`` and other datasets keep theirs).
    That covers the whole plan that produces the result, reads included, and
    every dataset derived from it, so ``take_all()``, ``iter_batches()``,
    ``to_pandas()`` and ``write_parquet()`` (files named in order) give the
    rows in ``ds``'s order. Its cost: Ray passes a block on only after every
    block before it, so a slow block holds back the finished ones behind it
    (they wait in the object store, and new tasks wait once its budget is
    spent). ``preserve_order=False`` leaves the order to ``ds``'s own context
    (Ray's default: blocks in the order they finish); keep an id column and
    sort on it where the order matters.

    The score columns are float64. ``error`` (after ``prefix``) is a string
    column, null on every row that scored: ``None`` in rows (``take_all()``,
    ``iter_rows()``) and in Arrow; pandas shows that null as its dtype's missing
    value, so test it with ``isna()``. The output carries no pandas metadata,
    so ``pandas.read_parquet`` and ``pyarrow.parquet.read_table`` both read what
    ``write_parquet`` wrote (struct and list columns included).
    """
    ray = require("ray", "ray")
    require("pyarrow", "ray")
    picked = scorer_options(options, strict=True)
    problem = uv_run_problem()
    if problem is not None:
        if ray.is_initialized():  # someone else's Ray: its workers are already set up that way
            raise UvRunError(f"score_dataset: {problem}")
        disable_uv_hook()  # Ray Data would start Ray now: start it with workers on this interpreter
    columns = instance_columns if isinstance(instance_columns, str) else tuple(instance_columns)
    scored = ds.map_batches(
        _score_arrow_batch,  # type: ignore[arg-type]  # Ray's stubs do not model fn_kwargs
        batch_format="pyarrow",
        batch_size=batch_size,
        fn_kwargs={
            "response_column": response_column,
            "instance_columns": columns,
            "options": picked,
            "prefix": prefix,
            "error_column": error_column,
            "expected": fingerprint(),
        },
    )
    return _in_order(scored) if preserve_order else scored


def _in_order(ds: ray.data.Dataset) -> ray.data.Dataset:
    """``ds`` run with Ray Data's ``preserve_order`` on, in a copy of its ``DataContext``.

    A dataset shares its context object with the dataset it was derived from
    (and keeps the context current when its source was created), so the flag
    goes on a copy: ``Dataset.copy(..., _deep_copy=True)`` copies the context.
    """
    from ray.data import Dataset

    if ds.context.execution_options.preserve_order:
        return ds
    ordered = Dataset.copy(ds, _deep_copy=True)
    ordered.context.execution_options.preserve_order = True
    return ordered


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
    if "ray" not in sys.modules and uv_run_problem() is not None:
        disable_uv_hook()  # before Ray reads the variable at import
    ray = require("ray", "ray")
    scorer_options(options, strict=True)  # fail before starting anything
    items = list(rows)
    if not items:
        return []
    started = False
    if not ray.is_initialized():
        if uv_run_problem() is not None:
            disable_uv_hook()  # our own Ray: workers on this interpreter, not through `uv run`
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
