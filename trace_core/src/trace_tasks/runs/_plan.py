"""A run's plan: its jobs (one output per input shard, or the one input and its output), and resuming.

Planning checks the layout (a sharded input needs ``-o DIR``, an output
directory may not be an input directory) and, with ``resume``, leaves out
the jobs whose output is complete. A killed run's temporary files are
removed whether or not the run resumes.
"""

from __future__ import annotations

import contextlib
import os
import sys

import attrs

from trace_tasks.runs._data_warnings import RunWarnings
from trace_tasks.runs._durable import lock_output
from trace_tasks.runs._errors import UsageError
from trace_tasks.runs._output import STDIO, names_a_stream
from trace_tasks.runs._resume_check import output_problem
from trace_tasks.runs._settings import RunSettings
from trace_tasks.runs._shards import (
    JSONL,
    PARQUET,
    Shard,
    check_not_instances,
    find_shards,
    format_of,
    is_sharded_input,
    names_directory,
    plan_outputs,
    prepare_directory,
    remove_stale_temporaries,
)


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
    instances: tuple[Shard, ...] | None = None  # the instances file(s) of the responses layout
    skipped: tuple[str, ...] = ()  # complete outputs left alone by resume


@attrs.frozen(slots=True)
class Scored:
    """What an engine hands back to the run: the instances' problems and the data warnings it counted (or ``None``)."""

    instance_problems: list[str]
    warnings: RunWarnings | None = None


def output_format(output: str | None) -> str:
    """Parquet for an output named ``*.parquet``, else JSON Lines."""
    return PARQUET if output is not None and output.lower().endswith(".parquet") else JSONL


def make_plan(settings: RunSettings, held: contextlib.ExitStack | None = None) -> Plan:
    """The run's jobs: one per input shard (sharded), or the one input and its output; a bad layout is a :class:`UsageError`.

    ``held``: the outputs are locked into it (:func:`~trace_tasks.runs._durable.lock_output`) before
    anything beside them is touched; another run holding them raises :class:`~trace_tasks.runs._errors.OutputLocked`.
    """
    source = settings.input if settings.responses is None else settings.responses
    output = settings.output
    instances = None
    if settings.responses is not None:
        instances = None if settings.input == STDIO else tuple(find_shards(settings.input))
    if source == STDIO:
        if names_directory(output):
            raise UsageError("standard input is one shard: give -o FILE, not a directory")
        if held is not None and _lockable(output):
            assert output is not None
            held.enter_context(lock_output(output))
        return Plan((Job(None, output or STDIO, output_format(output)),), False, instances)
    sharded = is_sharded_input(source) or names_directory(output)
    shards = find_shards(source)
    if not sharded:
        job = Job(shards[0], output or STDIO, output_format(output))
        if instances is not None and job.output != STDIO:
            check_not_instances(job.output, instances)
        if held is not None and _lockable(job.output):
            held.enter_context(lock_output(job.output))
        return _resumed(Plan((job,), False, instances), settings.resume, settings.quiet)
    if output in (None, STDIO):
        raise UsageError(f"{source} names {len(shards)} shard(s), written one output each: give -o DIR")
    assert output is not None
    _check_output_directory(settings, output)
    outputs = plan_outputs(shards, output, instances or ())
    prepare_directory(output)
    if held is not None:
        held.enter_context(lock_output(output, directory=True))
    jobs = tuple(Job(shard, path, shard.format) for shard, path in zip(shards, outputs, strict=True))
    return _resumed(Plan(jobs, True, instances), settings.resume, settings.quiet)


def _check_output_directory(settings: RunSettings, output: str) -> None:
    """Refuse the output of a sharded run when it names a data file, or is an input directory (its outputs would be inputs)."""
    if not os.path.exists(output) and not names_directory(output) and format_of(output) is not None:
        raise UsageError(
            f"{settings.responses or settings.input} is a sharded input, written one output per shard: "
            f"-o {output} names a file; give a directory ({output}/ makes one)"
        )
    for spec in (settings.input, settings.responses):
        if spec is not None and os.path.isdir(spec) and os.path.isdir(output) and os.path.samefile(spec, output):
            raise UsageError(f"-o {output} is the input directory {spec}: give -o another directory")


def _lockable(output: str | None) -> bool:
    """True for an output file that a run locks: not standard output, a device, a pipe or a stream's name (``/dev/stdout``)."""
    if output is None or output == STDIO or names_a_stream(output):
        return False
    return not os.path.exists(output) or os.path.isfile(output)


def _resumed(plan: Plan, resume: bool, quiet: bool = False) -> Plan:
    """The plan without the jobs whose output is complete (``resume``); a killed run's temporaries are removed.

    An existing output is complete when it reads to its end with one row per input row
    (:func:`~trace_tasks.runs._resume_check.output_problem`); one that is not is redone, with a line saying why.
    """
    files = [job.output for job in plan.jobs if job.output != STDIO]
    remove_stale_temporaries(files)
    if not resume:
        return plan
    left = tuple(job for job in plan.jobs if job.output == STDIO or not _complete(job, quiet))
    skipped = tuple(job.output for job in plan.jobs if job not in left)
    return attrs.evolve(plan, jobs=left, skipped=skipped)


def _complete(job: Job, quiet: bool) -> bool:
    """True when ``job``'s output exists and is whole (``resume`` skips it); an incomplete one is said to be redone."""
    if not os.path.exists(job.output):
        return False
    problem = None if job.shard is None else output_problem(job.output, job.format, job.shard)
    if problem is not None and not quiet:
        print(f"trace-tasks score: resume: {job.output} {problem}: scored again", file=sys.stderr)
    return problem is None


def report_resumed(plan: Plan, quiet: bool) -> None:
    """``resume: N of M output(s) already complete`` on stderr (not when ``quiet``)."""
    if plan.skipped and not quiet:
        total = len(plan.skipped) + len(plan.jobs)
        print(
            f"trace-tasks score: resume: {len(plan.skipped)} of {total} output(s) already complete, skipped; "
            "the summary counts the rest",
            file=sys.stderr,
        )
