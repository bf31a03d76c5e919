"""The ``--responses`` layout on Ray: instances sharded by id, so no process holds them all.

The local engine indexes every instance in one process (about 5 kB each);
on Ray the instances are split into :func:`bucket_count` buckets by a hash of
their id, and every stage holds one bucket at most:

A. **instances** (Ray Data: read, ``map_batches`` on an actor pool, a sink):
   each instance is validated where it is read; the rows go to their bucket's
   files in a scratch directory, their problems to the driver.
B. **index** (one task per bucket): the bucket's rows in file order, duplicate
   ids found (the first wins, as in the local engine); the driver prints every
   problem, in file order, before any response is scored.
C. **responses** (Ray Data: read, ``map_batches``, a sink): each line goes to
   its id's bucket, unparsed; a read task records its shard's line count.
D. **score** (one call per bucket on a pool of ``--workers`` actors): the
   bucket's instances compiled once, its responses scored exactly as the local
   engine scores them (the same slots, messages and records), written as runs
   sorted by line, one per output. All rollouts of an instance are in one
   bucket, so one actor compiles it, once.
E. **assemble** (one task per output): the output's runs merged by line
   (streamed, one row per run in memory) into a temporary file renamed over
   the output once every line is there.

Memory per process is one bucket of instances or responses; the driver holds
file names, problem messages and summary totals only. The instances are
validated twice (once to report, once where their rollouts are scored). The
scratch directory (beside the outputs, or in ``$TMPDIR`` for standard output)
must be one every node can read and write: a shared file system on a cluster.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import pickle
import shutil
import socket
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, cast

from trace_tasks.data import InstanceCache, InstanceError
from trace_tasks.errors import RayJobError
from trace_tasks.runs._data_warnings import report_instance_problems
from trace_tasks.runs._jsonl import dumps
from trace_tasks.runs._output import STDIO
from trace_tasks.runs._plan import Plan
from trace_tasks.runs._ray_engine import (
    _shard_source,
    actor_pool,
    check_node,
    decoded_lines,
    run_ray,
    scorer,
)
from trace_tasks.runs._rows import InstanceIndex, build, joined_slots, output_record
from trace_tasks.runs._shards import JSONL_GZ, PARQUET, ParquetOutput
from trace_tasks.runs._summary import Summary
from trace_tasks.scoring import options_from

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow


#: Bytes of responses per bucket (by file size on disk) the bucket count aims at.
BUCKET_BYTES = 32 << 20
MAX_BUCKETS = 4096


def bucket_of(row_id: str, buckets: int) -> int:
    return zlib.crc32(row_id.encode("utf-8", "surrogatepass")) % buckets


def bucket_count(paths: Iterable[str], workers: int) -> int:
    """Enough buckets that each holds about :data:`BUCKET_BYTES` of responses, and at least two per worker."""
    size = sum(os.path.getsize(path) for path in paths)
    return max(2 * workers, min(MAX_BUCKETS, -(-size // BUCKET_BYTES)))


def _dump(path: str, rows: Any) -> None:
    temporary = f"{path}.{os.urandom(4).hex()}.tmp"
    with open(temporary, "wb") as fh:
        pickle.dump(rows, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(temporary, path)


def _load_all(directory: str) -> Iterator[Any]:
    if not os.path.isdir(directory):
        return
    for name in sorted(os.listdir(directory)):
        if name.endswith(".pkl"):
            with open(os.path.join(directory, name), "rb") as fh:
                yield from pickle.load(fh)


def _rows_table(buckets: list[int], payloads: list[bytes]) -> pyarrow.Table:
    import pyarrow as pa

    return pa.table({"bucket": pa.array(buckets, type=pa.int32()), "row": pa.array(payloads, type=pa.binary())})


# --- A. instances ------------------------------------------------------------------------------------


class InstanceRouter:
    """Actor: validates each instance where it is read; rows ``(source, line, kind, id, payload)`` to the id's bucket."""

    def __init__(self, sources: list[str], formats: list[str], buckets: int, expected: Mapping[str, Any]) -> None:
        check_node(expected)
        self.sources, self.formats, self.buckets = sources, formats, buckets
        self.cache = InstanceCache()

    def __call__(self, table: pyarrow.Table) -> pyarrow.Table:
        buckets, payloads = [], []
        shards = table.column("shard").to_pylist()
        for shard, line in zip(shards, decoded_lines(table, self.formats), strict=True):
            source = self.sources[shard]
            scratch = InstanceIndex(source)
            row_id = scratch.check_line(line, source)
            if row_id is None:
                row: tuple[Any, ...] = (shard, line.number, "problem", None, scratch.problems[0])
                bucket = line.number % self.buckets
            else:
                compiled = build(line.value, self.cache)
                if isinstance(compiled, InstanceError):
                    scratch.enter(row_id, source, line.number, compiled)
                    row = (shard, line.number, "invalid", row_id, (scratch.problems, scratch.by_id[row_id][2]))
                else:
                    row = (shard, line.number, "valid", row_id, line.value)
                bucket = bucket_of(row_id, self.buckets)
            buckets.append(bucket)
            payloads.append(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
        return _rows_table(buckets, payloads)


def _bucket_sink(directory: str) -> Any:
    from ray.data import Datasink

    class BucketSink(Datasink[int]):
        """Writes each block's rows into their buckets' directories (one file per block and bucket)."""

        def write(self, blocks: Iterable[pyarrow.Table], ctx: Any) -> int:
            written = 0
            for block in blocks:
                if block.num_rows == 0:
                    continue
                by_bucket: dict[int, list[Any]] = {}
                for bucket, row in zip(block.column("bucket").to_pylist(), block.column("row").to_pylist(), strict=True):
                    by_bucket.setdefault(bucket, []).append(pickle.loads(row))
                for bucket, rows in by_bucket.items():
                    target = os.path.join(directory, f"b{bucket:05d}")
                    os.makedirs(target, exist_ok=True)
                    _dump(os.path.join(target, f"{os.getpid()}-{os.urandom(6).hex()}.pkl"), rows)
                    written += len(rows)
            return written

    return BucketSink()


# --- B. index ------------------------------------------------------------------------------------


def index_bucket(directory: str, bucket: int, sources: list[str], index_source: str) -> list[tuple[int, int, int, str]]:
    """Task: a bucket's instances in file order, duplicates resolved; returns its problems as ``(shard, line, n, text)``."""
    rows = sorted(_load_all(os.path.join(directory, f"b{bucket:05d}")), key=lambda row: (row[0], row[1]))
    index = InstanceIndex(index_source)
    problems: list[tuple[int, int, int, str]] = []
    entries: dict[str, tuple[str, int, Any]] = {}
    for shard, number, kind, row_id, payload in rows:
        before = len(index.problems)
        source = sources[shard]
        if kind == "problem":
            index.problems.append(payload)
        elif not index.is_duplicate(row_id, source, number):
            if kind == "invalid":
                texts, message = payload
                index.problems.extend(texts)
                index.by_id[row_id] = (source, number, message)
            else:
                index.by_id[row_id] = (source, number, "")  # valid: compiled where its responses are scored
                entries[row_id] = (source, number, payload)
        problems.extend((shard, number, n, text) for n, text in enumerate(index.problems[before:]))
    for row_id, (source, number, entry) in index.by_id.items():
        if isinstance(entry, str) and entry:  # invalid or duplicated: its responses get this message
            entries[row_id] = (source, number, entry)
    _dump(os.path.join(directory, f"b{bucket:05d}.index"), entries)
    return problems


# --- C. responses ----------------------------------------------------------------------------------


def route_responses(table: pyarrow.Table, formats: list[str], buckets: int) -> pyarrow.Table:
    """Task: each response line, unparsed beyond its id, to its id's bucket (lines without one: anywhere)."""
    targets, payloads = [], []
    shards = table.column("shard").to_pylist()
    for shard, line in zip(shards, decoded_lines(table, formats), strict=True):
        value = line.value
        row_id = value.get("id") if isinstance(value, Mapping) else None
        targets.append(bucket_of(row_id, buckets) if isinstance(row_id, str) else line.number % buckets)
        payloads.append(pickle.dumps((shard, line), protocol=pickle.HIGHEST_PROTOCOL))
    return _rows_table(targets, payloads)


# --- D. score --------------------------------------------------------------------------------------


class BucketScorer:
    """Actor: scores whole buckets, compiling each instance once; writes one sorted run per output."""

    def __init__(self, options: Mapping[str, Any], expected: Mapping[str, Any], metrics: bool = False) -> None:
        check_node(expected)
        self.opts = options_from(options)
        self.cache = InstanceCache(maxsize=0)  # a bucket's instances are compiled once each below
        self.score_slot = scorer(metrics)

    def score(self, instances: str, responses: str, runs: str, bucket: int, index_source: str) -> Summary:
        with open(os.path.join(instances, f"b{bucket:05d}.index"), "rb") as fh:
            entries = pickle.load(fh)
        index = InstanceIndex(index_source)
        for row_id, (source, number, entry) in entries.items():
            index.enter(row_id, source, number, entry if isinstance(entry, str) else build(entry, self.cache))
        by_shard: dict[int, list[Any]] = {}
        for shard, line in _load_all(os.path.join(responses, f"b{bucket:05d}")):
            by_shard.setdefault(shard, []).append(line)
        summary = Summary()
        for shard, lines in by_shard.items():
            lines.sort(key=lambda line: line.number)
            target = os.path.join(runs, f"s{shard:05d}")
            os.makedirs(target, exist_ok=True)
            temporary = os.path.join(target, f".b{bucket:05d}.{os.urandom(4).hex()}.tmp")
            with open(temporary, "w", encoding="utf-8", newline="\n") as out:
                for slot in joined_slots(lines, index):
                    record = output_record(slot, self.score_slot(slot, self.opts) if slot.item is not None else None, summary)
                    out.write(f"{slot.line}\t{dumps(record)}\n")  # JSON never holds a raw tab
            os.replace(temporary, os.path.join(target, f"b{bucket:05d}.run"))
        return summary


# --- E. assemble -----------------------------------------------------------------------------------


def _run_rows(path: str) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8") as fh:
        for row in fh:
            number, _, record = row.partition("\t")
            yield int(number), record


def assemble(runs: str, shard: int, count_file: str, output: str, fmt: str) -> None:
    """Task: merge an output's runs by line into a temporary file, renamed over ``output`` when every line is there."""
    with open(count_file, "rb") as fh:
        count = int(fh.read())
    directory = os.path.join(runs, f"s{shard:05d}")
    paths = sorted(os.path.join(directory, name) for name in os.listdir(directory)) if os.path.isdir(directory) else []
    merged = heapq.merge(*(_run_rows(path) for path in paths if path.endswith(".run")))
    target_dir, base = os.path.split(os.path.abspath(output))
    if fmt == PARQUET:
        parquet = ParquetOutput(output)
        try:
            _check_lines(_records(merged), count, parquet.write, output)
            parquet.commit()
        finally:
            parquet.discard()
        return
    temporary = os.path.join(target_dir, f".{base}.{os.urandom(4).hex()}.tmp")
    try:
        with _text_output(temporary, fmt) as stream:
            _check_lines(((number, record) for number, record in merged), count, stream.write, output, raw=True)
        os.replace(temporary, output)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _records(merged: Iterator[tuple[int, str]]) -> Iterator[tuple[int, Any]]:
    import json

    for number, record in merged:
        yield number, json.loads(record)


def _check_lines(rows: Iterator[tuple[int, Any]], count: int, write: Any, output: str, *, raw: bool = False) -> None:
    following = 1
    for number, record in rows:
        if number != following:
            raise RayJobError(f"{output}: line {following} was not scored (got line {number} next)")
        write(record)
        following += 1
    if following != count + 1:
        raise RayJobError(f"{output}: {count - following + 1} line(s) at the end were not scored")


@contextlib.contextmanager
def _text_output(path: str, fmt: str) -> Iterator[IO[str]]:
    import gzip
    import io

    with open(path, "wb") as raw:
        binary: IO[bytes] = raw
        if fmt == JSONL_GZ:
            binary = cast(IO[bytes], gzip.GzipFile(filename=os.path.basename(path), mode="wb", fileobj=raw, mtime=0))
        text = io.TextIOWrapper(cast(Any, binary), encoding="utf-8", newline="\n")
        yield text
        text.flush()
        text.detach()
        if binary is not raw:
            binary.close()  # the gzip trailer; the file stays open
        raw.flush()
        os.fsync(raw.fileno())


# --- the driver ------------------------------------------------------------------------------------


SCRATCH_PREFIX = ".trace-tasks-join."


def _scratch(plan: Plan) -> str:
    """A new scratch directory beside the first output (``$TMPDIR`` for standard output); a killed run's are removed."""
    first = plan.jobs[0].output
    parent = tempfile.gettempdir() if first == STDIO else os.path.dirname(os.path.abspath(first))
    host = socket.gethostname()
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            owner = name[len(SCRATCH_PREFIX) :].split(".")
            if name.startswith(SCRATCH_PREFIX) and len(owner) == 3 and owner[0] == host and not _alive(owner[1]):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{host}.{os.getpid()}.", dir=parent)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def run(
    plan: Plan,
    index_source: str,
    options: Mapping[str, Any],
    workers: int,
    expected: Mapping[str, Any],
    summary: Summary,
    stdout: IO[str] | None,
    metrics: bool = False,
) -> list[str]:
    """Score the plan's response shards against its instances; returns the instances' problems (printed already).

    ``index_source`` names the instances in messages, as the local engine does (the file, or INPUT for several).
    """
    import ray

    assert plan.instances is not None
    instance_paths = [shard.path for shard in plan.instances]
    jobs = plan.jobs
    scratch = _scratch(plan)
    dirs = {name: os.path.join(scratch, name) for name in ("instances", "responses", "runs", "counts", "out")}
    for directory in dirs.values():
        os.makedirs(directory)
    buckets = bucket_count([job.shard.path for job in jobs if job.shard is not None], workers)
    try:
        # A and B: instances to their buckets, then each bucket indexed; problems up front, in file order.
        inst_sources = [(i, os.path.abspath(shard.path), shard.format, None) for i, shard in enumerate(plan.instances)]
        routed = ray.data.read_datasource(
            _shard_source(inst_sources), override_num_blocks=len(inst_sources), num_cpus=0
        ).map_batches(
            InstanceRouter,
            fn_constructor_kwargs={
                "sources": instance_paths,
                "formats": [shard.format for shard in plan.instances],
                "buckets": buckets,
                "expected": dict(expected),
            },
            batch_size=None,
            batch_format="pyarrow",
            compute=actor_pool(ray, workers),
            num_cpus=1,
        )
        run_ray(lambda: routed.write_datasink(_bucket_sink(dirs["instances"]), ray_remote_args={"num_cpus": 0}))
        indexer = ray.remote(num_cpus=1)(index_bucket)
        found = ray.get([indexer.remote(dirs["instances"], b, instance_paths, index_source) for b in range(buckets)])
        problems = [text for *_, text in sorted(problem for part in found for problem in part)]
        report_instance_problems(problems, index_source)

        # C: responses to their buckets.
        formats = [job.shard.format for job in jobs if job.shard is not None]
        resp_sources = [
            (i, os.path.abspath(job.shard.path), job.shard.format, os.path.join(dirs["counts"], f"s{i:05d}"))
            for i, job in enumerate(jobs)
            if job.shard
        ]
        spread = ray.data.read_datasource(
            _shard_source(resp_sources), override_num_blocks=len(resp_sources), num_cpus=0
        ).map_batches(
            route_responses,
            fn_kwargs={"formats": formats, "buckets": buckets},
            batch_size=None,
            batch_format="pyarrow",
            num_cpus=1,
        )
        run_ray(lambda: spread.write_datasink(_bucket_sink(dirs["responses"]), ray_remote_args={"num_cpus": 0}))

        # D: each bucket scored by one actor of the pool.
        scoring = ray.remote(num_cpus=1)(BucketScorer)
        actors = [scoring.remote(dict(options), dict(expected), metrics) for _ in range(min(workers, buckets))]
        pool = ray.util.ActorPool(actors)
        args = [(dirs["instances"], dirs["responses"], dirs["runs"], b, index_source) for b in range(buckets)]

        def score_buckets() -> None:
            for part in pool.map(lambda actor, a: actor.score.remote(*a), args):
                summary.merge(part)

        run_ray(score_buckets)
        for actor in actors:
            ray.kill(actor)  # type: ignore[arg-type]  # Ray's stubs type a handle as the class too

        # E: each output assembled from its runs.
        assembler = ray.remote(num_cpus=1)(assemble)
        targets = [
            (i, os.path.join(dirs["out"], f"s{i:05d}.jsonl") if job.output == STDIO else os.path.abspath(job.output), job.format)
            for i, job in enumerate(jobs)
        ]
        run_ray(
            lambda: ray.get(
                [
                    assembler.remote(dirs["runs"], i, os.path.join(dirs["counts"], f"s{i:05d}"), out, fmt)
                    for i, out, fmt in targets
                ]
            )
        )
        if stdout is not None:
            for _, path, _ in targets:
                if path.startswith(dirs["out"]):
                    with open(path, encoding="utf-8") as fh:
                        shutil.copyfileobj(fh, stdout)
        return problems
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
