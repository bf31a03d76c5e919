"""``trace-tasks score --engine ray``: the run's jobs as a Ray Data pipeline, on a local Ray or a cluster.

The driver (this process) plans the jobs (:class:`trace_tasks.runs._plan.Plan`), checks every node (:func:`trace_tasks.integrations.ray_cluster.check_cluster`)
and starts the pipeline; it never reads, parses or writes a row:

1. **read** (:class:`ShardSource`): one read task per input shard streams it
   in blocks of :data:`BLOCK_LINES` rows (``shard``, ``line``, ``data``: the
   line's bytes, or a Parquet row pickled). When it reaches the end it writes
   the shard's line count beside the output (``LINES`` in the shard's parts
   directory), before handing on its last block.
2. **score** (:class:`ShardScorer`, ``map_batches`` on an actor pool of
   ``--workers`` actors): each actor builds the plugin registry once, keeps an
   :class:`~trace_tasks.data.InstanceCache`, and scores each row exactly as the
   local engine does (the same slots, the same pipeline, the same output
   record), returning each row's output line and, in the block's first row,
   the block's summary totals.
3. **write** (:class:`ShardSink`): each block becomes a part file named by its
   line range in ``.NAME.parts/`` beside the shard's output; the write that
   completes a shard's lines merges its parts, in line order, into a temporary
   file renamed over the output. A shard's output therefore appears complete
   or not at all, as soon as its own rows are scored (``--resume`` relies on
   it). The summaries come back to the driver with the write results.

Scores on standard output come through the driver (``iter_batches`` in input
order), while file descriptor 1 of the driver and of every Ray process it
starts points at standard error, so no Ray log line can land among the scores.

The ``--responses`` layout is :mod:`trace_tasks.runs._ray_joined`.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import logging
import os
import pickle
import re
import shutil
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from trace_tasks.data import InstanceCache
from trace_tasks.errors import ClusterMismatchError, RayJobError
from trace_tasks.runs._durable import sync_file
from trace_tasks.runs._engine import EngineError, score_compiled
from trace_tasks.runs._errors import InputFailed, UsageError
from trace_tasks.runs._jsonl import BOM, Line, dumps, open_source, parse_line
from trace_tasks.runs._long_lines import TooLong, bounded_lines
from trace_tasks.runs._output import guard
from trace_tasks.runs._plan import Job
from trace_tasks.runs._rows import combined_slots, output_record
from trace_tasks.runs._shards import JSONL_GZ, PARQUET, ParquetLines, parquet_cells, parquet_schema
from trace_tasks.runs._summary import Summary
from trace_tasks.scoring import options_from

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow


#: Rows per block read from a shard: the unit of scoring calls and of part files.
BLOCK_LINES = 4096
#: The line count a read task writes when it reaches the end of its shard.
COUNT_FILE = "LINES"
#: Taken (``O_EXCL``) by the one write that merges a complete shard.
MERGE_CLAIM = "MERGING"
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)(\([^)]*\))?: ")
RAY_MISSING = "--engine ray needs Ray Data and pyarrow: pip install 'trace-core[ray]'"


def check_available() -> None:
    """Raise :class:`EngineError` saying what to install when Ray Data or pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise EngineError(f"{RAY_MISSING} ({exc})") from exc


def parts_directory(output: str) -> str:
    """Where the parts of ``output`` are written until its shard is complete: ``.NAME.parts`` beside it."""
    directory, base = os.path.split(os.path.abspath(output))
    return os.path.join(directory, f".{base}.parts")


# --- 1. read ---------------------------------------------------------------------------------------


def _block(shard: int, lines: list[int], data: list[bytes]) -> pyarrow.Table:
    import pyarrow as pa

    return pa.table(
        {
            "shard": pa.array([shard] * len(lines), type=pa.int32()),
            "line": pa.array(lines, type=pa.int64()),
            "data": pa.array(data, type=pa.binary()),
        }
    )


#: Starts the stand-in of a line past ``MAX_LINE_BYTES`` in a block (a NUL never starts a JSON line); its error follows.
TOO_LONG_MARK = b"\x00line too long\x00"


def _raw_lines(path: str, fmt: str) -> Iterator[tuple[int, bytes]]:
    """``(number, bytes)`` for each row: a JSON line as read (BOM dropped), a Parquet row's :class:`Line` pickled."""
    if fmt == PARQUET:
        for line in ParquetLines(path):  # the whole Line: a row refused when read keeps its error
            yield line.number, pickle.dumps(line, protocol=pickle.HIGHEST_PROTOCOL)
        return
    with open_source(path) as source:
        try:
            for number, raw in enumerate(bounded_lines(source.stream), start=1):
                if isinstance(raw, TooLong):  # past MAX_LINE_BYTES: its error travels instead of the line
                    yield number, TOO_LONG_MARK + raw.message(number).encode("utf-8")
                    continue
                yield number, raw[len(BOM) :] if number == 1 and raw.startswith(BOM) else raw
        except (OSError, EOFError) as exc:
            raise InputFailed(path, exc) from exc
        except Exception as exc:  # zlib.error: a corrupt .gz
            raise InputFailed(path, exc) from exc


def read_shard(shard: int, path: str, fmt: str, count_file: str | None) -> Iterator[pyarrow.Table]:
    """A read task: the blocks of one shard; the line count is written before the last block goes out."""
    lines: list[int] = []
    data: list[bytes] = []
    pending: pyarrow.Table | None = None
    count = 0
    for count, raw in _raw_lines(path, fmt):
        lines.append(count)
        data.append(raw)
        if len(lines) >= BLOCK_LINES:
            if pending is not None:
                yield pending
            pending = _block(shard, lines, data)
            lines, data = [], []
    if lines:
        if pending is not None:
            yield pending
        pending = _block(shard, lines, data)
    if count_file is not None:
        _write_atomically(count_file, str(count).encode())
    if pending is not None:
        yield pending


def _write_atomically(path: str, data: bytes) -> None:
    temporary = f"{path}.{os.getpid()}.{os.urandom(4).hex()}"
    with open(temporary, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temporary, path)


def _shard_source(shards: Sequence[tuple[int, str, str, str | None]]) -> Any:
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata

    class ShardSource(Datasource):
        """One read task per input shard (``(index, path, format, count file)``), in order."""

        def __init__(self) -> None:
            self.shards = shards

        def estimate_inmemory_data_size(self) -> int | None:
            return None

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None) -> list[Any]:
            return [
                ReadTask(
                    functools.partial(read_shard, index, path, fmt, count_file),
                    BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None, input_files=(path,)),
                )
                for index, path, fmt, count_file in shards
            ]

    return ShardSource()


# --- 2. score --------------------------------------------------------------------------------------


def decoded_lines(table: pyarrow.Table, formats: list[str]) -> Iterator[Line]:
    """The :class:`Line` items of a block, as the local engine reads them."""
    shards = table.column("shard").to_pylist()
    numbers = table.column("line").to_pylist()
    for shard, number, raw in zip(shards, numbers, table.column("data").to_pylist(), strict=True):
        if formats[shard] == PARQUET:
            yield pickle.loads(raw)
        elif raw.startswith(TOO_LONG_MARK):
            yield Line(number, error=raw[len(TOO_LONG_MARK) :].decode("utf-8"))
        else:
            yield parse_line(number, raw)


def scored_block(shards: list[int], numbers: list[int], records: list[dict[str, Any]], summary: Summary) -> pyarrow.Table:
    """A scored block: each row's output line, and the block's totals (pickled) in its first row."""
    import pyarrow as pa

    totals: list[bytes | None] = [None] * len(records)
    if records:
        totals[0] = pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL)
    return pa.table(
        {
            "shard": pa.array(shards, type=pa.int32()),
            "line": pa.array(numbers, type=pa.int64()),
            "out": pa.array([(dumps(record) + "\n").encode("utf-8") for record in records], type=pa.binary()),
            "summary": pa.array(totals, type=pa.binary()),
        }
    )


def check_node(expected: Mapping[str, Any]) -> None:
    """In an actor: refuse to score where the families, versions or pins differ from the driver's."""
    from trace_tasks.integrations.ray_cluster import check_worker

    check_worker(expected)


def scorer(metrics: bool) -> Any:
    """How an actor scores a slot: as the local engine does, with the field metrics when the run wants them."""
    from trace_tasks.runs._metrics import score_compiled_with_metrics

    return score_compiled_with_metrics if metrics else score_compiled


class ShardScorer:
    """The scoring actor: the registry and an instance cache per process, each row scored as the local engine does."""

    def __init__(
        self, options: Mapping[str, Any], formats: list[str], expected: Mapping[str, Any], metrics: bool = False
    ) -> None:
        check_node(expected)
        self.opts = options_from(options)
        self.formats = formats
        self.cache = InstanceCache()
        self.score = scorer(metrics)

    def __call__(self, table: pyarrow.Table) -> pyarrow.Table:
        summary = Summary()
        records = [
            output_record(slot, self.score(slot, self.opts) if slot.item is not None else None, summary)
            for slot in combined_slots(decoded_lines(table, self.formats), self.cache)
        ]
        return scored_block(table.column("shard").to_pylist(), table.column("line").to_pylist(), records, summary)


# --- 3. write --------------------------------------------------------------------------------------


def merged_summary(cells: Iterable[bytes | None], into: Summary) -> Summary:
    for cell in cells:
        if cell is not None:
            into.merge(pickle.loads(cell))
    return into


def _part_bytes(out: list[bytes], fmt: str) -> bytes:
    data = b"".join(out)
    return gzip.compress(data, mtime=0) if fmt == JSONL_GZ else data


def _write_part(parts: str, first: int, last: int, out: list[bytes], fmt: str) -> None:
    name = os.path.join(parts, f"{first:012d}-{last:012d}.part")
    temporary = os.path.join(parts, f".{first:012d}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    if fmt == PARQUET:
        import json

        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = parquet_schema()
        cells = [parquet_cells(json.loads(line)) for line in out]
        columns: list[Sequence[Any]] = list(zip(*cells, strict=True)) if cells else [[] for _ in schema]
        arrays = [pa.array(list(column), type=field.type) for column, field in zip(columns, schema, strict=True)]
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), temporary)
        sync_file(temporary)  # on disk before the name points at it, as the JSON Lines parts
    else:
        with open(temporary, "wb") as fh:
            fh.write(_part_bytes(out, fmt))
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(temporary, name)


def _ranges(parts: str) -> list[tuple[int, int, str]]:
    found = []
    for entry in os.listdir(parts):
        if entry.endswith(".part"):
            first, last = entry[: -len(".part")].split("-")
            found.append((int(first), int(last), os.path.join(parts, entry)))
    return sorted(found)


def complete_parts(parts: str) -> list[str] | None:
    """The part files of a shard in line order when they cover every line it has, else ``None``."""
    try:
        with open(os.path.join(parts, COUNT_FILE), "rb") as fh:
            count = int(fh.read())
        ranges = _ranges(parts)
    except (OSError, ValueError):
        return None
    following = 1
    for first, last, _ in ranges:
        if first != following:
            return None
        following = last + 1
    return [path for _, _, path in ranges] if following == count + 1 else None


def merge_shard(parts: str, output: str, fmt: str, *, claim: bool = True) -> bool:
    """Merge a complete shard's parts into ``output`` (renamed into place); False when incomplete or claimed."""
    ordered = complete_parts(parts)
    if ordered is None:
        return False
    if claim:
        try:
            os.close(os.open(os.path.join(parts, MERGE_CLAIM), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
    directory, base = os.path.split(os.path.abspath(output))
    temporary = os.path.join(directory, f".{base}.{os.urandom(4).hex()}.tmp")
    try:
        if fmt == PARQUET:
            _merge_parquet(ordered, temporary)
            sync_file(temporary)  # pyarrow closed it unsynced; the bytes merge syncs its own
        else:
            _merge_bytes(ordered, temporary, fmt)
        os.replace(temporary, output)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    shutil.rmtree(parts, ignore_errors=True)
    return True


def _merge_bytes(ordered: list[str], temporary: str, fmt: str) -> None:
    with open(temporary, "wb") as out:
        if not ordered and fmt == JSONL_GZ:
            out.write(gzip.compress(b"", mtime=0))  # an empty shard still gives a valid .gz
        for path in ordered:  # concatenated gzip members are one valid gzip stream
            with open(path, "rb") as part:
                shutil.copyfileobj(part, out, 1 << 20)
        out.flush()
        os.fsync(out.fileno())


def _merge_parquet(ordered: list[str], temporary: str) -> None:
    import pyarrow.parquet as pq

    schema = parquet_schema()
    with pq.ParquetWriter(temporary, schema) as writer:
        for path in ordered:
            writer.write_table(pq.read_table(path, schema=schema))


def _sink(outputs: list[tuple[str, str]]) -> Any:
    from ray.data import Datasink

    class ShardSink(Datasink[Summary]):
        """Writes each block as a part of its shard; the write completing a shard merges it. Returns the block totals."""

        def __init__(self) -> None:
            self.summary = Summary()

        def write(self, blocks: Iterable[pyarrow.Table], ctx: Any) -> Summary:
            summary = Summary()
            for block in blocks:
                if block.num_rows == 0:  # Ray Data may hand on an empty block, without columns
                    continue
                merged_summary(block.column("summary").to_pylist(), summary)
                for shard, first, last, out in _runs(block):
                    path, fmt = outputs[shard]
                    parts = parts_directory(path)
                    _write_part(parts, first, last, out, fmt)
                    merge_shard(parts, path, fmt)
            return summary

        def on_write_complete(self, write_result: Any) -> None:
            for summary in write_result.write_returns:
                self.summary.merge(summary)

    return ShardSink()


def _runs(block: pyarrow.Table) -> Iterator[tuple[int, int, int, list[bytes]]]:
    """``(shard, first line, last line, output lines)`` for each run of consecutive lines of one shard in a block."""
    shards = block.column("shard").to_pylist()
    numbers = block.column("line").to_pylist()
    out = block.column("out").to_pylist()
    rows = sorted(zip(shards, numbers, range(len(numbers)), strict=True))
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i][0] != rows[start][0] or rows[i][1] != rows[i - 1][1] + 1:
            yield rows[start][0], rows[start][1], rows[i - 1][1], [out[row[2]] for row in rows[start:i]]
            start = i


# --- the driver ------------------------------------------------------------------------------------


@contextlib.contextmanager
def scores_stream(to_stdout: bool) -> Iterator[IO[str] | None]:
    """Standard output for the scores alone: meanwhile descriptor 1 and ``sys.stdout`` point at stderr.

    Ray's processes inherit descriptor 1 and its driver prints to
    ``sys.stdout``; both go to standard error while the scores are written to
    the stream standard output was (a new one on the saved descriptor when it
    was descriptor 1).
    """
    if not to_stdout:
        yield None
        return
    given = sys.stdout
    given.flush()
    try:
        on_descriptor_1 = given.fileno() == 1
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (an embedding, a test)
        on_descriptor_1 = False
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stream = os.fdopen(os.dup(saved), "w", encoding="utf-8", newline="\n") if on_descriptor_1 else given
    try:
        yield guard(stream, "standard output")
        stream.flush()
    finally:
        if stream is not given:
            with contextlib.suppress(OSError):
                stream.close()
        sys.stdout = given
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def ray_session(address: str | None, workers: int | None, quiet: bool) -> Iterator[Any]:
    """The connected ``ray`` module: the cluster at ``address`` (or ``$RAY_ADDRESS``), or a Ray started here and stopped after."""
    from trace_tasks.integrations import ray as ray_integration
    from trace_tasks.integrations.ray_cluster import environment_variables

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None and "ray" not in sys.modules and ray_integration.uv_run_problem() is not None:
        ray_integration.disable_uv_hook()  # our own Ray: workers on this interpreter, not through `uv run`
    import ray

    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {
            "runtime_env": {"env_vars": environment_variables()},
            "log_to_driver": False,
            "logging_level": logging.WARNING,
            "configure_logging": True,
        }
        if address is None:
            if ray_integration.uv_run_problem() is not None:
                ray_integration.disable_uv_hook()
            kwargs.update(include_dashboard=False, num_cpus=workers)
        else:
            kwargs["address"] = address
        ours = signal.getsignal(signal.SIGTERM)
        try:
            ray.init(**kwargs)
        except ConnectionError as exc:
            raise UsageError(f"cannot connect to the Ray cluster at {address}: {exc}") from exc
        finally:
            # ray.init answers SIGTERM with sys.exit(15); the command's own answer (exit 143, clean-up) stays.
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGTERM, ours)
        started = True
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def actor_count(ray: Any, workers: int | None) -> int:
    """``--workers`` actors, else one per CPU of the cluster."""
    return workers or max(1, int(ray.cluster_resources().get("CPU", 1)))


def actor_pool(ray: Any, workers: int) -> Any:
    """Up to ``workers`` scoring actors, starting with as many as the cluster's CPUs hold (more than fit would wait forever)."""
    fits = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return ray.data.ActorPoolStrategy(min_size=1, max_size=workers, initial_size=min(workers, fits))


def run_combined(
    ray: Any,
    jobs: tuple[Job, ...],
    options: Mapping[str, Any],
    workers: int,
    expected: Mapping[str, Any],
    summary: Summary,
    stdout: IO[str] | None,
    metrics: bool = False,
) -> None:
    assert all(job.shard is not None for job in jobs)
    formats = [job.shard.format for job in jobs if job.shard is not None]
    files = stdout is None
    sources = []
    for index, job in enumerate(jobs):
        assert job.shard is not None
        count_file = None
        if files:
            if not os.path.isdir(os.path.dirname(os.path.abspath(job.output))):
                raise UsageError(f"cannot write {job.output}: No such file or directory")
            parts = parts_directory(job.output)
            shutil.rmtree(parts, ignore_errors=True)  # a killed run's parts: its shard is redone
            os.makedirs(parts)
            count_file = os.path.join(parts, COUNT_FILE)
        # Absolute paths: a worker's working directory is not the driver's.
        sources.append((index, os.path.abspath(job.shard.path), job.shard.format, count_file))
    try:
        scored = build_scored(ray, sources, formats, options, workers, expected, ordered=not files, metrics=metrics)
        if files:
            outputs = [(os.path.abspath(job.output), job.format) for job in jobs]
            sink = _sink(outputs)
            run_ray(lambda: scored.write_datasink(sink, ray_remote_args={"num_cpus": 0}))
            summary.merge(sink.summary)
            finish_outputs(ray, outputs)
        else:
            assert stdout is not None
            stream_to(stdout, scored, summary)
    except BaseException:
        if files:
            for job in jobs:
                shutil.rmtree(parts_directory(job.output), ignore_errors=True)
        raise


def build_scored(
    ray: Any,
    sources: list[tuple[int, str, str, str | None]],
    formats: list[str],
    options: Mapping[str, Any],
    workers: int,
    expected: Mapping[str, Any],
    *,
    ordered: bool,
    metrics: bool = False,
) -> Any:
    """The read and score stages: blocks of ``(shard, line, out, summary)``."""
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = ordered
    ds = ray.data.read_datasource(
        _shard_source(sources), override_num_blocks=len(sources), num_cpus=0, concurrency=max(1, min(len(sources), workers))
    )
    return ds.map_batches(
        ShardScorer,
        fn_constructor_kwargs={"options": dict(options), "formats": formats, "expected": dict(expected), "metrics": metrics},
        batch_size=None,
        batch_format="pyarrow",
        compute=actor_pool(ray, workers),
        num_cpus=1,
    )


def stream_to(stdout: IO[str], scored: Any, summary: Summary) -> None:
    """Standard output: the driver writes each scored block's lines, in input order."""

    def write_all() -> None:
        for batch in scored.iter_batches(batch_format="pyarrow", batch_size=None):
            if batch.num_rows == 0:
                continue
            merged_summary(batch.column("summary").to_pylist(), summary)
            stdout.write(b"".join(batch.column("out").to_pylist()).decode("utf-8"))

    run_ray(write_all)


def finish_outputs(ray: Any, outputs: list[tuple[str, str]]) -> None:
    """After the writes: merge any complete shard a write left (its merge lost a race or failed); refuse a gap."""
    left = [(path, fmt) for path, fmt in outputs if os.path.isdir(parts_directory(path))]
    merge = ray.remote(num_cpus=0)(_finish_shard)
    missing = [path for (path, _), done in zip(left, ray.get([merge.remote(p, f) for p, f in left]), strict=True) if not done]
    if missing:
        raise RayJobError(f"Ray finished without every row of {', '.join(missing)}: rerun with --resume")


def _finish_shard(path: str, fmt: str) -> bool:
    return merge_shard(parts_directory(path), path, fmt, claim=False)


def run_ray(step: Any) -> None:
    """Run a Ray Data step; a task's own failure (a bad node, an unreadable shard) reaches ``main`` as our error."""
    try:
        step()
    except Exception as exc:
        raise _our_error(exc) from exc


def _our_error(exc: BaseException) -> BaseException:
    """The error a Ray failure stands for: ours when a task raised one (InputFailed, ClusterMismatchError), else itself."""
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (InputFailed, ClusterMismatchError, UsageError)):
            return current
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    root = next((line for line in reversed(lines) if _ERROR_LINE.match(line)), lines[-1] if lines else type(exc).__name__)
    if "ClusterMismatchError" in root or "ModuleNotFoundError" in root:
        return ClusterMismatchError(f"a Ray worker could not score: {root}")
    return RayJobError(f"the Ray job failed: {root[:500]}")
