"""The local engine: the plan's jobs one after another, scored in this process or in one process pool for the run.

Each output is created before its input is read (the first one before the
instances too), and is complete under its name as soon as its shard is
scored. Chunks are scored by :func:`trace_tasks.runs._engine.score_chunks`;
the run's skeleton (summary, table, exit status) is :func:`trace_tasks.runs.score_files`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from trace_tasks.runs import _data_warnings
from trace_tasks.runs._columns import STABLE_COLUMNS, stable_record
from trace_tasks.runs._engine import busy_cores_note, chunk_size, score_chunks, worker_pool
from trace_tasks.runs._jsonl import Line, open_source, read_lines
from trace_tasks.runs._output import STDIO, guard
from trace_tasks.runs._plan import Job, Plan, Scored
from trace_tasks.runs._progress import make_progress
from trace_tasks.runs._rows import InstanceIndex, Slot, combined_slots, counted_text, joined_slots, output_record
from trace_tasks.runs._settings import RunSettings
from trace_tasks.runs._shards import JsonlOutput, ParquetOutput, Shard, open_lines, open_shard_output
from trace_tasks.runs._summary import Summary


def run(plan: Plan, settings: RunSettings, summary: Summary) -> Scored:
    """Score every job of ``plan`` into ``summary``; the instances' problems and the data warnings come back."""
    options = settings.options
    keep = settings.columns
    instance_problems: list[str] = []
    warnings = _data_warnings.RunWarnings()  # the authoring rules the instances break: counted, never scored
    note = busy_cores_note(settings.workers or 1)
    if note is not None and not settings.quiet:
        print(note, file=sys.stderr)
    with worker_pool(options, settings.workers or 1, settings.wants_metrics) as pool:
        index = None
        for number, job in enumerate(plan.jobs):
            with _open_job_output(job, keep) as out:
                if number == 0 and settings.responses is not None:
                    index = _load_index(settings.input, plan.instances)
                    instance_problems = index.problems
                    _data_warnings.report_instance_problems(instance_problems, index.source)
                    warnings.add_index(index)
                    _data_warnings.report(warnings, "instance", index.source, settings.quiet)
                with _open_job_input(job) as (lines, source):
                    slots = combined_slots(lines, keep=keep) if index is None else joined_slots(lines, index, keep)
                    if index is None:  # instances arrive with their responses: counted as they are compiled
                        slots = warnings.watch(slots, job.name)
                    _write_all(slots, job, source, out, summary, settings, options, pool)
    return Scored(instance_problems, warnings)


def _load_index(spec: str, shards: tuple[Shard, ...] | None) -> InstanceIndex:
    """The instances of the responses layout, from standard input or every instances shard."""
    if shards is None:
        with open_source(spec) as source:
            return InstanceIndex.load(read_lines(source.stream, source.name), source.name)
    index = InstanceIndex(shards[0].path if len(shards) == 1 else spec)
    for shard in shards:
        with open_lines(shard) as (lines, _):
            index.add_all(lines, shard.path)
    return index


@contextlib.contextmanager
def _open_job_output(job: Job, columns: tuple[str, ...] = ()) -> Iterator[JsonlOutput | ParquetOutput]:
    if job.output == STDIO:
        yield JsonlOutput(guard(sys.stdout, "standard output"))
        return
    with open_shard_output(job.output, job.format, columns) as out:
        yield out


@contextlib.contextmanager
def _open_job_input(job: Job) -> Iterator[tuple[Iterator[Line], Any]]:
    if job.shard is None:
        with open_source(STDIO) as source:
            yield read_lines(source.stream, source.name), source
        return
    with open_lines(job.shard) as opened:
        yield opened


def _chunks(slots: Iterator[Slot], size: int) -> Iterator[tuple[list[Slot], list[Slot]]]:
    """Groups of at most ``size`` slots, with the slots among them to score."""
    while True:
        group = list(itertools.islice(slots, size))
        if not group:
            return
        yield group, [slot for slot in group if slot.item is not None]


def _one_chunk(slots: Iterator[Slot], size: int) -> tuple[Iterator[Slot], bool]:
    """The same slots, and whether they fit in one chunk of ``size`` (read up to one slot past it).

    Standard input is read one line further than the chunk, no more: a stream
    whose next lines are slow to come still has its first chunk scored as soon
    as that line arrives.
    """
    head = list(itertools.islice(slots, size + 1))
    return itertools.chain(head, slots), len(head) <= size


def _write_all(
    slots: Iterator[Slot],
    job: Job,
    source: Any,
    out: JsonlOutput | ParquetOutput,
    summary: Summary,
    settings: RunSettings,
    options: Mapping[str, Any],
    pool: Any = None,
) -> None:
    label = "scoring" if job.shard is None or len(job.name) > 40 else f"scoring {os.path.basename(job.name)}"
    progress = make_progress(label, quiet=settings.quiet, total=source.size())
    workers = settings.workers or 1
    try:
        if workers > 1:
            slots, alone = _one_chunk(slots, chunk_size(workers))
            if alone:  # a pool would add its start-up and score it no sooner: one chunk goes to one worker
                workers = 1
        chunks: Iterator[tuple[list[Slot], list[Any]]] = _chunks(slots, chunk_size(workers))
        metrics = settings.wants_metrics
        stable = settings.output_columns == STABLE_COLUMNS
        # A JSON Lines output: a pool worker writes each row's line itself (less to send back than its scores).
        text = settings.output_columns if isinstance(out, JsonlOutput) else None
        chunked = score_chunks(chunks, options=options, workers=workers, pool=pool, metrics=metrics, text=text)
        for group, results in chunked:
            errors_before = summary.errors
            scored = iter(results)
            for slot in group:
                result = next(scored) if slot.item is not None else None
                # One write per line: the output stream is guarded (a Python-level call per write).
                if isinstance(result, tuple):
                    assert isinstance(out, JsonlOutput)
                    out.write_line(counted_text(slot, result, summary))
                    continue
                record = output_record(slot, result, summary)
                out.write(stable_record(record) if stable else record)
            progress.update(len(group), summary.errors - errors_before, source.position())
    finally:
        progress.close()
