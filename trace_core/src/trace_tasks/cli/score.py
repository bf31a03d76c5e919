"""``trace-tasks score``: score stored rollouts, one JSON line of scores per input line.

Every instance is validated and compiled once (:func:`trace_tasks.compile_instance`,
cached by content), so an invalid instance is an error line naming its
problems, never a silent zero reward. Input is streamed in chunks (scored
in-process or in a process pool), so memory stays flat on inputs of any
length; in the two-file layout only the instances index is held, and the
problems of the instances file are printed before scoring (exit code 1).
Output keeps input order, and a line that cannot be scored becomes a line with
an ``error`` field: the input and output line counts are always equal. A
summary table goes to stderr. Output files are created before any input is
read and replace an existing file only when the run completes
(:mod:`trace_tasks.cli._output`); an output that is an input is refused.
Every output line is strict JSON that can be written as UTF-8, whatever the
input held (:func:`trace_tasks.cli._jsonl.dumps`): an id with a lone surrogate
makes its line ASCII-escaped, a non-finite id (``1e999``) is written as a string.

A directory or a glob as INPUT (or ``-o DIR``) makes a sharded run: one
output per input shard (:mod:`trace_tasks.cli._shards`), each complete under
its name or absent, so ``--resume`` skips the complete ones. ``--engine ray``
runs the same jobs as a Ray Data pipeline (:mod:`trace_tasks.cli._ray_engine`).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

import attrs

from trace_tasks.cli import _data_warnings
from trace_tasks.cli._durable import lock_output
from trace_tasks.cli._engine import ENGINES, EngineError, chunk_size, score_chunks, worker_pool
from trace_tasks.cli._errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from trace_tasks.cli._jsonl import Line, dumps, open_source, read_lines
from trace_tasks.cli._options import add_scoring_options, int_at_least, scoring_options
from trace_tasks.cli._output import REPLACED_WHEN_DONE, STDIO, guard, names_a_stream, open_outputs
from trace_tasks.cli._progress import make_progress
from trace_tasks.cli._resume_check import output_problem
from trace_tasks.cli._rows import InstanceIndex, Slot, combined_slots, joined_slots, output_record
from trace_tasks.cli._shards import (
    JSONL,
    PARQUET,
    JsonlOutput,
    ParquetOutput,
    Shard,
    check_not_instances,
    find_shards,
    format_of,
    is_sharded_input,
    names_directory,
    open_lines,
    open_shard_output,
    plan_outputs,
    prepare_directory,
    remove_stale_temporaries,
)
from trace_tasks.cli._summary import Summary

EXIT_LINE_ERRORS = EXIT_FAILED


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score stored responses (JSON Lines or Parquet in, scores out)",
        description=(
            "Score stored responses. INPUT holds instances with a 'response' field, or, with --responses, "
            'instances joined by \'id\' to responses ({"id", "response"} rows). INPUT and --responses may each be '
            "a file (.jsonl, .jsonl.gz, .parquet; '-' is standard input), a directory of such files or a quoted "
            "glob; several files make a sharded run: one output per input shard under -o DIR, named after the "
            "input in its format. Every instance is validated first. One output row per input row, in order; a "
            "row that cannot be scored (an invalid instance among them) gets an 'error' field naming every "
            "problem, and the exit code is 1; so do problems of an instances file (--responses layout), which are "
            "printed before scoring. An output may not be an input or another output (exit 2)."
        ),
    )
    parser.add_argument(
        "input",
        metavar="INPUT",
        help="instances (with 'response' unless --responses is given): a file, a directory, a glob, or '-'",
    )
    parser.add_argument(
        "--responses",
        metavar="FILE",
        help="responses joined to INPUT by id (several per instance allowed): a file, a directory or a glob",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE|DIR",
        default=None,
        help=(
            f"where to write scores (default: stdout; .gz compresses, .parquet writes Parquet); a directory (existing, "
            f"or a name ending in /) takes one output per input shard; {REPLACED_WHEN_DONE}"
        ),
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="skip shards whose output is already complete (every output is renamed into place only when complete)",
    )
    parser.add_argument(
        "--summary-json", metavar="FILE", help=f"also write the summary as JSON to FILE ('-': stdout); {REPLACED_WHEN_DONE}"
    )
    parser.add_argument(
        "--workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="scoring processes (default 1), or with --engine ray scoring actors (default: one per CPU of the cluster)",
    )
    parser.add_argument("--engine", choices=ENGINES, default="local", help="local (default) or ray (needs trace-core[ray])")
    parser.add_argument(
        "--address",
        metavar="ADDR",
        default=None,
        help="with --engine ray: the Ray cluster to join (default: $RAY_ADDRESS, else a Ray started for this run)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table on stderr")
    parser.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="COLUMN",
        help=(
            "carry an input column (a 'kind' or 'sample' tag) to each output row, under 'extra' (repeat, or give "
            "a,b); in the combined layout a column that is no instance field is not an error then; JSON Lines outputs only"
        ),
    )
    parser.add_argument(
        "--group-by",
        metavar="COLUMN",
        default=None,
        help="also summarize per value of an input column (kept as with --keep): a table on stderr, by_group in --summary-json",
    )
    parser.add_argument(
        "--no-metrics",
        action="store_true",
        help="leave the field metrics (acc@iou0.5, f1@iou0.5, ...) out of --summary-json: each response is then scored without a trail",
    )
    add_scoring_options(parser)
    parser.set_defaults(func=run)


@attrs.frozen(slots=True)
class Job:
    """One output of the run: the shard it scores (``None``: standard input), where it goes, in what format."""

    shard: Shard | None
    output: str
    format: str = JSONL

    @property
    def name(self) -> str:
        return "<stdin>" if self.shard is None else self.shard.path


@attrs.frozen(slots=True)
class Plan:
    """The jobs of a run, in order; ``sharded``: one output per input shard under a directory."""

    jobs: tuple[Job, ...]
    sharded: bool
    instances: tuple[Shard, ...] | None = None  # the instances file(s) of the --responses layout
    skipped: tuple[str, ...] = ()  # complete outputs left alone by --resume


def _fail(message: str) -> int:
    print(f"trace-tasks score: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    """Check options, then score; opening, reading and writing problems reach ``main`` (one line, documented code)."""
    try:
        options = scoring_options(args)
    except ValueError as exc:
        return _fail(str(exc))
    if args.responses is not None and STDIO == args.input == args.responses:
        return _fail("only one of INPUT and --responses can be standard input")
    if args.summary_json == STDIO and args.output in (None, STDIO):
        return _fail("--summary-json - and the scores would both go to standard output: give -o FILE for the scores")
    if args.address is not None and args.engine != "ray":
        return _fail("--address joins a Ray cluster: add --engine ray")
    keep = kept(args)
    if keep and args.engine == "ray":
        return _fail("--keep and --group-by are not supported by --engine ray yet: use --engine local")
    if keep and args.output is not None and _output_format(args.output) == PARQUET:
        return _fail("--keep and --group-by carry columns under 'extra', which only JSON Lines outputs hold: give -o FILE.jsonl")
    if args.engine == "ray":
        from trace_tasks.cli import _ray_engine

        try:
            _ray_engine.check_available()
        except EngineError as exc:
            return _fail(str(exc))
    with contextlib.ExitStack() as held:  # the outputs' lock, held until the run ends (a second run is refused)
        plan = make_plan(args, held)
        if keep and any(job.format == PARQUET for job in plan.jobs):
            return _fail(
                "--keep and --group-by carry columns under 'extra', which Parquet outputs do not hold: the shards are Parquet"
            )
        if args.engine == "ray":
            from trace_tasks.cli import _ray_engine

            return _ray_engine.score(plan, args, options)
        return _score(plan, args, options)


def make_plan(args: argparse.Namespace, held: contextlib.ExitStack | None = None) -> Plan:
    """The run's jobs: one per input shard (sharded), or the one input and its output; a bad layout is a :class:`UsageError`.

    ``held``: the outputs are locked into it (:func:`~trace_tasks.cli._durable.lock_output`) before
    anything beside them is touched; another run holding them raises :class:`OutputLocked`.
    """
    source = args.input if args.responses is None else args.responses
    instances = None
    if args.responses is not None:
        instances = None if args.input == STDIO else tuple(find_shards(args.input))
    if source == STDIO:
        if names_directory(args.output):
            raise UsageError("standard input is one shard: give -o FILE, not a directory")
        if held is not None and _lockable(args.output):
            held.enter_context(lock_output(args.output))
        return Plan((Job(None, args.output or STDIO, _output_format(args.output)),), False, instances)
    sharded = is_sharded_input(source) or names_directory(args.output)
    shards = find_shards(source)
    if not sharded:
        job = Job(shards[0], args.output or STDIO, _output_format(args.output))
        if instances is not None and job.output != STDIO:
            check_not_instances(job.output, instances)
        if held is not None and _lockable(job.output):
            held.enter_context(lock_output(job.output))
        return _resumed(Plan((job,), False, instances), args.resume, args.quiet)
    if args.output in (None, STDIO):
        raise UsageError(f"{source} names {len(shards)} shard(s), written one output each: give -o DIR")
    _check_output_directory(args)
    outputs = plan_outputs(shards, args.output, instances or ())
    prepare_directory(args.output)
    if held is not None:
        held.enter_context(lock_output(args.output, directory=True))
    jobs = tuple(Job(shard, output, shard.format) for shard, output in zip(shards, outputs, strict=True))
    return _resumed(Plan(jobs, True, instances), args.resume, args.quiet)


def _lockable(output: str | None) -> bool:
    """True for an output file that a run locks: not standard output, a device, a pipe or a stream's name (``/dev/stdout``)."""
    if output is None or output == STDIO or names_a_stream(output):
        return False
    return not os.path.exists(output) or os.path.isfile(output)


def _check_output_directory(args: argparse.Namespace) -> None:
    """Refuse ``-o`` of a sharded run when it names a data file, or is an input directory (its outputs would be inputs)."""
    output = args.output
    if not os.path.exists(output) and not names_directory(output) and format_of(output) is not None:
        raise UsageError(
            f"{args.responses or args.input} is a sharded input, written one output per shard: "
            f"-o {output} names a file; give a directory ({output}/ makes one)"
        )
    for spec in (args.input, args.responses):
        if spec is not None and os.path.isdir(spec) and os.path.isdir(output) and os.path.samefile(spec, output):
            raise UsageError(f"-o {output} is the input directory {spec}: give -o another directory")


def _output_format(output: str | None) -> str:
    return PARQUET if output is not None and output.lower().endswith(".parquet") else JSONL


def _resumed(plan: Plan, resume: bool, quiet: bool = False) -> Plan:
    """The plan without the jobs whose output is complete (``--resume``); a killed run's temporaries are removed.

    An existing output is complete when it reads to its end with one row per input row
    (:func:`~trace_tasks.cli._resume_check.output_problem`); one that is not is redone, with a line saying why.
    """
    files = [job.output for job in plan.jobs if job.output != STDIO]
    remove_stale_temporaries(files)
    if not resume:
        return plan
    left = tuple(job for job in plan.jobs if job.output == STDIO or not _complete(job, quiet))
    skipped = tuple(job.output for job in plan.jobs if job not in left)
    return attrs.evolve(plan, jobs=left, skipped=skipped)


def _complete(job: Job, quiet: bool) -> bool:
    """True when ``job``'s output exists and is whole (``--resume`` skips it); an incomplete one is said to be redone."""
    if not os.path.exists(job.output):
        return False
    problem = None if job.shard is None else output_problem(job.output, job.format, job.shard)
    if problem is not None and not quiet:
        print(f"trace-tasks score: resume: {job.output} {problem}: scored again", file=sys.stderr)
    return problem is None


def report_resumed(plan: Plan, quiet: bool) -> None:
    if plan.skipped and not quiet:
        total = len(plan.skipped) + len(plan.jobs)
        print(
            f"trace-tasks score: resume: {len(plan.skipped)} of {total} output(s) already complete, skipped; "
            "the summary counts the rest",
            file=sys.stderr,
        )


def _score(plan: Plan, args: argparse.Namespace, options: dict[str, Any]) -> int:
    summary = Summary()
    summary.group_by = getattr(args, "group_by", None)
    keep = kept(args)
    instance_problems: list[str] = []
    data_warnings = _data_warnings.RunWarnings()  # the authoring rules the instances break: counted, never scored
    report_resumed(plan, args.quiet)
    metrics = wants_metrics(args)
    with open_outputs(args.summary_json) as (summary_out,), worker_pool(options, args.workers or 1, metrics) as pool:
        index = None
        for number, job in enumerate(plan.jobs):
            # Each output is created before its input is read (the first before the instances too),
            # and is complete under its name as soon as its shard is scored.
            with _open_job_output(job) as out:
                if number == 0 and args.responses is not None:
                    index = _load_index(args.input, plan.instances)
                    instance_problems = index.problems
                    report_instance_problems(instance_problems, index.source)
                    data_warnings.add_index(index)
                    _data_warnings.report(data_warnings, "instance", index.source, args.quiet)
                with _open_job_input(job) as (lines, source):
                    slots = combined_slots(lines, keep=keep) if index is None else joined_slots(lines, index, keep)
                    if index is None:  # instances arrive with their responses: counted as they are compiled
                        slots = data_warnings.watch(slots, job.name)
                    _write_all(slots, job, source, out, summary, args, options, pool)
        if not args.quiet:
            if index is None:
                data_warnings.finish()
                _data_warnings.report(data_warnings, "line", args.input, args.quiet)
            print(summary.table(), file=sys.stderr)
        if summary_out is not None:
            data_warnings.finish()
            write_summary(summary_out, summary, instance_problems, options, plan, data_warnings.counts)
    return EXIT_LINE_ERRORS if summary.errors or instance_problems else EXIT_OK


def kept(args: argparse.Namespace) -> tuple[str, ...]:
    """The input columns carried to the output rows: every ``--keep`` (``a,b`` is two), then ``--group-by``'s, once each."""
    columns: list[str] = []
    for value in [*getattr(args, "keep", []), *([args.group_by] if getattr(args, "group_by", None) else [])]:
        for column in value.split(","):
            if column.strip() and column.strip() not in columns:
                columns.append(column.strip())
    return tuple(columns)


def wants_metrics(args: argparse.Namespace) -> bool:
    """The field metrics are computed for ``--summary-json`` only (a trail per response costs time), unless ``--no-metrics``."""
    return args.summary_json is not None and not getattr(args, "no_metrics", False)


def write_summary(
    out: IO[str],
    summary: Summary,
    instance_problems: list[str],
    options: dict[str, Any],
    plan: Plan,
    warnings: dict[str, int] | None = None,
) -> None:
    """``--summary-json``: the summary, the instances' problems and the options; a sharded run also lists its outputs."""
    data: dict[str, Any] = {**summary.to_dict(), "instance_problems": instance_problems, "options": options}
    if warnings is not None:  # the data warnings by rule (the local engine counts them)
        data["warnings"] = warnings
    if plan.sharded or plan.skipped:
        data["outputs"] = [job.output for job in plan.jobs]
        data["skipped_complete"] = len(plan.skipped)
        data["skipped_outputs"] = list(plan.skipped)
    out.write(dumps(data, indent=2) + "\n")


def _load_index(spec: str, shards: tuple[Shard, ...] | None) -> InstanceIndex:
    """The instances of the --responses layout, from standard input or every instances shard."""
    if shards is None:
        with open_source(spec) as source:
            return InstanceIndex.load(read_lines(source.stream, source.name), source.name)
    index = InstanceIndex(shards[0].path if len(shards) == 1 else spec)
    for shard in shards:
        with open_lines(shard) as (lines, _):
            index.add_all(lines, shard.path)
    return index


@contextlib.contextmanager
def _open_job_output(job: Job) -> Iterator[JsonlOutput | ParquetOutput]:
    if job.output == STDIO:
        yield JsonlOutput(guard(sys.stdout, "standard output"))
        return
    with open_shard_output(job.output, job.format) as out:
        yield out


@contextlib.contextmanager
def _open_job_input(job: Job) -> Iterator[tuple[Iterator[Line], Any]]:
    if job.shard is None:
        with open_source(STDIO) as source:
            yield read_lines(source.stream, source.name), source
        return
    with open_lines(job.shard) as opened:
        yield opened


def report_instance_problems(problems: list[str], source: str) -> None:
    """Up front, before any scoring: a broken instances file is the first thing to know."""
    for problem in problems:
        print(f"trace-tasks score: instances: {problem}", file=sys.stderr)
    if problems:
        count = len(problems)
        print(
            f"trace-tasks score: {count} problem{'s' * (count != 1)} in {source}; responses to an "
            "unusable instance get an error line, and the exit code will be 1",
            file=sys.stderr,
        )


def _chunks(slots: Iterator[Slot], size: int) -> Iterator[tuple[list[Slot], list[Slot]]]:
    """Groups of at most ``size`` slots, with the slots among them to score."""
    while True:
        group = list(itertools.islice(slots, size))
        if not group:
            return
        yield group, [slot for slot in group if slot.item is not None]


def _write_all(
    slots: Iterator[Slot],
    job: Job,
    source: Any,
    out: JsonlOutput | ParquetOutput,
    summary: Summary,
    args: argparse.Namespace,
    options: dict[str, Any],
    pool: Any = None,
) -> None:
    label = "scoring" if job.shard is None or len(job.name) > 40 else f"scoring {os.path.basename(job.name)}"
    progress = make_progress(label, quiet=args.quiet, total=source.size())
    workers = args.workers or 1
    chunks: Iterator[tuple[list[Slot], list[Any]]] = _chunks(slots, chunk_size(workers))
    try:
        metrics = wants_metrics(args)
        for group, results in score_chunks(chunks, options=options, workers=workers, pool=pool, metrics=metrics):
            errors_before = summary.errors
            scored = iter(results)
            for slot in group:
                # One write per line: the output stream is guarded (a Python-level call per write).
                out.write(output_record(slot, next(scored) if slot.item is not None else None, summary))
            progress.update(len(group), summary.errors - errors_before, source.position())
    finally:
        progress.close()
