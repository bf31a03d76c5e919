"""One scoring run of files, whatever the engine: :func:`score_files`, the run's skeleton.

The skeleton checks the settings, plans the jobs, hands them to the engine
(:mod:`trace_tasks.runs._local` in-process or in a pool,
:mod:`trace_tasks.runs._ray` on Ray) and then, once for every engine,
prints the summary table, writes ``summary`` and decides the exit status.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

from trace_tasks.errors import OptionError
from trace_tasks.runs import _data_warnings, _local
from trace_tasks.runs._engine import EngineError
from trace_tasks.runs._errors import EXIT_FAILED, EXIT_OK, UsageError
from trace_tasks.runs._failure_hints import failure_note
from trace_tasks.runs._jsonl import dumps
from trace_tasks.runs._output import STDIO, open_outputs
from trace_tasks.runs._plan import Plan, make_plan, report_resumed
from trace_tasks.runs._settings import RunResult, RunSettings
from trace_tasks.runs._shards import PARQUET
from trace_tasks.runs._summary import Summary
from trace_tasks.scoring import options_from


def score_files(settings: RunSettings) -> RunResult:
    """Score the rows ``settings`` names, one output row per input row, in order; return what the run did.

    A row that cannot be scored (an invalid instance among them) gets an
    ``error`` field and makes the exit status 1, as do problems of the
    instances file. Output files are replaced only when the run completes.

    :param settings: the inputs, outputs, engine and scorer options of the run.
    :returns: the summary, the counts, the exit status and the outputs written.
    :raises trace_tasks.errors.OptionError: a bad scorer option (before any input is read), or settings that
        are not a :class:`RunSettings` (a bad setting is refused when the settings are made).
    :raises OutputLocked: another run is writing the same outputs (it is left alone).
    :raises UsageError: settings that cannot run (an input that cannot be opened, a layout the engine
        does not support, Ray not installed); ``InputFailed`` and ``OutputFailed`` when reading or
        writing fails part-way. Every one of them is a :class:`~trace_tasks.errors.TraceTasksError`.
    """
    if not isinstance(settings, RunSettings):
        raise OptionError(f"score_files takes a trace_tasks.runs.RunSettings, got {type(settings).__name__}")
    options_from(settings.options)  # an OptionError names a bad one before any input is read
    _check(settings)
    created = _missing_directories(settings.output)
    try:
        with contextlib.ExitStack() as held:  # the outputs' lock, held until the run ends (a second run is refused)
            return _run(settings, make_plan(settings, held))
    except UsageError:
        _remove_empty(created)  # a refused run leaves no directory behind
        raise


def _missing_directories(output: str | None) -> list[str]:
    """The directories a sharded run's ``output`` would create (itself and missing parents), deepest first."""
    if output is None or output == STDIO:
        return []
    missing = []
    path = os.path.abspath(output)
    while path and not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def _remove_empty(directories: list[str]) -> None:
    """Remove the directories this run created, deepest first, as long as they are empty."""
    for directory in directories:
        try:
            os.rmdir(directory)
        except OSError:
            return


def _run(settings: RunSettings, plan: Plan) -> RunResult:
    """The planned run: the engine, then the table, the summary file and the exit status, once for every engine."""
    if settings.output_columns != "all" and (settings.engine == "ray" or any(job.format == PARQUET for job in plan.jobs)):
        raise UsageError("--columns stable is for JSON Lines outputs of the local engine (Parquet has a fixed schema)")
    if settings.engine == "ray":
        from trace_tasks.runs import _ray

        _ray.check_plan(plan, settings)
    report_resumed(plan, settings.quiet)
    summary = Summary()
    summary.group_by = settings.group_by
    with open_outputs(settings.summary) as (summary_out,):
        if settings.engine == "ray":
            from trace_tasks.runs import _ray

            scored = _ray.run(plan, settings, summary)
        else:
            scored = _local.run(plan, settings, summary)
        warnings = scored.warnings
        if not settings.quiet:
            if warnings is not None and settings.responses is None:
                warnings.finish()
                _data_warnings.report(warnings, "line", settings.input, settings.quiet)
            print(summary.table(), file=sys.stderr)
            for line in summary.mismatches.warnings(settings.options):
                print(line, file=sys.stderr)
        missing = _report_columns(summary, settings)
        if warnings is not None:
            warnings.finish()
        counts = None if warnings is None else warnings.counts
        if summary_out is not None:
            write_summary(summary_out, summary, scored.instance_problems, settings.options, plan, counts)
    status = EXIT_FAILED if summary.errors or scored.instance_problems or missing else EXIT_OK
    return RunResult(
        exit_status=status,
        summary=summary.to_dict(),
        lines=summary.lines,
        errors=summary.errors,
        instance_problems=tuple(scored.instance_problems),
        warnings=counts,
        outputs=tuple(job.output for job in plan.jobs),
        skipped=plan.skipped,
    )


def _report_columns(summary: Summary, settings: RunSettings) -> list[str]:
    """On stderr (even with ``quiet``: they are findings, not progress): the ignored columns, the kept
    columns found on no line, and, when most lines failed, the most common error and its likely fix.

    Returns the kept columns found on no line (an error of the run: exit status 1).
    """
    ignored = sorted(summary.ignored_columns)
    if ignored:
        names = ", ".join(_printable(name) for name in ignored)
        print(
            f"warning: ignored {len(ignored)} input column{'s' if len(ignored) > 1 else ''} that "
            f"{'are' if len(ignored) > 1 else 'is'} no instance field: {names} "
            f"(carry {'them' if len(ignored) > 1 else 'it'} to the output rows with --keep "
            f"{','.join(_printable(name) for name in ignored)})",
            file=sys.stderr,
        )
    missing = [column for column in settings.columns if column not in summary.found_columns] if summary.lines else []
    for column in missing:
        flag = "--group-by" if column == settings.group_by else "--keep"
        where = "its instance" if settings.responses is not None else "the instance it holds"
        print(
            f"error: {flag} {_printable(column)}: found on no line nor {where} (a column name, or a dotted path "
            f"such as metadata.task); its value is null in every output row",
            file=sys.stderr,
        )
    note = failure_note(summary.error_kinds, summary.lines, summary.errors, settings.responses is not None)
    if note is not None:
        print(note, file=sys.stderr)
    return missing


def _printable(name: str) -> str:
    """A column name as text any stream can write (a lone surrogate as its escape)."""
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


def _check(settings: RunSettings) -> None:
    """Refuse, before anything is opened, settings no engine can run."""
    if settings.responses is not None and STDIO == settings.input == settings.responses:
        raise UsageError("only one of INPUT and --responses can be standard input")
    if settings.summary == STDIO and settings.output in (None, STDIO):
        raise UsageError("--summary-json - and the scores would both go to standard output: give -o FILE for the scores")
    if settings.address is not None and settings.engine != "ray":
        raise UsageError("--address joins a Ray cluster: add --engine ray")
    columns = settings.columns
    if columns and settings.engine == "ray":
        raise UsageError("--keep and --group-by are not supported by --engine ray yet: use --engine local")
    if settings.engine == "ray":
        from trace_tasks.runs import _ray

        try:
            _ray.check_available()
        except EngineError as exc:
            raise UsageError(str(exc)) from None


def write_summary(
    out: IO[str],
    summary: Summary,
    instance_problems: list[str],
    options: Mapping[str, Any],
    plan: Plan,
    warnings: dict[str, int] | None = None,
) -> None:
    """``--summary-json``: the summary, the instances' problems and the options; a sharded run also lists its outputs."""
    data: dict[str, Any] = {**summary.to_dict(), "instance_problems": instance_problems, "options": dict(options)}
    mismatch_warnings = summary.mismatches.warnings(options)
    if mismatch_warnings:  # the lines printed under the table, for a machine reader
        data["mismatch_warnings"] = mismatch_warnings
    if warnings is not None:  # the data warnings by rule (the local engine counts them)
        data["warnings"] = warnings
    if plan.sharded or plan.skipped:
        data["outputs"] = [job.output for job in plan.jobs]
        data["skipped_complete"] = len(plan.skipped)
        data["skipped_outputs"] = list(plan.skipped)
    out.write(dumps(data, indent=2) + "\n")
