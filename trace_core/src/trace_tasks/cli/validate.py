"""``trace-tasks validate``: check instance files before training on them.

Each problem is printed as ``FILE:LINE: PATH: MESSAGE``, each warning as
``FILE:LINE: warning[RULE]: PATH: MESSAGE`` (``FILE: warning[RULE]: MESSAGE``
for one about a group of instances), followed by a count of the lines checked,
the problems and the warnings by rule; the exit code is 1 when there is any
problem (or, with ``--strict``, any warning). ``--json`` writes the same as JSON
Lines. The checks of one instance are
:func:`trace_tasks.data.instance_problems`, the same validation the scorer
tools use (structure, contract rules, installed families, the answer value,
the target parse, the image size). On top, for a file: ids are unique, and,
when an image size is given, every item of the target lies inside the pixel
frame (asked of the owning family through :func:`trace_tasks.cli._views.frames.frame_report`;
a family that cannot say gets a note, not a problem). The warnings are those of
:class:`trace_tasks.data.DatasetLint`: the annotation contract's authoring
rules, per instance and per group of instances (docs/cli.md lists every rule).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from trace_tasks.cli._options import add_scoring_options
from trace_tasks.cli._views.explanation import escape_surrogates
from trace_tasks.cli._views.frames import frame_report
from trace_tasks.data import DatasetLint, DataWarning, Problem
from trace_tasks.plugins import get_registry
from trace_tasks.runs import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    MISSING,
    STDIO,
    InputFailed,
    column_value,
    dumps,
    find_shards,
    instance_part,
    open_binary,
    open_lines,
    read_lines,
)
from trace_tasks.scoring import resolve_frame, resolve_mode

EXIT_PROBLEMS = EXIT_FAILED


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check instance files (structure, contracts, families, coordinates; warnings on the authoring rules)",
        description=(
            "Check instance files (.jsonl, .jsonl.gz, .parquet, a directory or a glob of them, or '-' for stdin): "
            "record structure, reward-contract rules, "
            "installed families, target annotations that parse, unique ids, and coordinates inside the image "
            "frame when image_size is given; then warn, by rule id, on the annotation contract's authoring rules "
            "(normalised coordinates, duplicate items, counts that disagree with their set, one-item sets, one-key "
            "maps, missing image sizes and image files, ...). A combined score input is accepted as score accepts it: "
            "a line with a 'response' is checked as the instance it holds (its other columns are ignored, named in a note). "
            "Exit code 1 when any problem is found (with --strict, any warning too)."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="instance files to check (as score's INPUT)")
    parser.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="COLUMN",
        help="a column of the user's that is no instance field (as score --keep): not checked (repeatable; a,b names two)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the final count")
    parser.add_argument("--strict", action="store_true", help="warnings count as problems (exit code 1)")
    parser.add_argument(
        "--json", action="store_true", help="JSON Lines: one object per problem, warning and note, then the summary"
    )
    parser.add_argument(
        "--mode",
        dest="trace_reward_mode",
        metavar="MODE",
        default=None,
        help=(
            "the output mode the instances are meant for (as score's --mode); an instance without answer_gt is valid "
            "only for annotation_only. Default: any mode (an instance without answer_gt is accepted as annotation_only)"
        ),
    )
    parser.add_argument(
        "--group-by",
        metavar="FIELD",
        default=None,
        help=(
            "group rules (count-mismatch, single-item-set, ...) compare instances with the same value of FIELD "
            "(a top-level field, or a dotted path such as metadata.task) besides the same answer and annotation types; "
            "a FIELD found on no line is a problem naming it"
        ),
    )
    add_scoring_options(parser, only=("prediction_frame",))  # an instance scored in a frame needs its image size
    parser.set_defaults(func=run)


def frame_problems(report: Any, notes: dict[str, str] | None = None) -> list[Problem]:
    """Items of a parsed target outside the image frame; a family that cannot tell adds a note instead."""
    if not report.parsed or report.image_size is None or report.annotation_type is None:
        return []
    try:
        frame = frame_report(get_registry(), report.annotation_type, report.target, report.image_size)
    except Exception as exc:  # a family's explain or draw capability failing is its bug, not the data's
        note = f"the {report.annotation_type!r} family failed to describe its geometry ({type(exc).__name__}: {exc}); image frame not checked"
    else:
        if frame.checked:
            return [Problem(path, message) for path, message in frame.problems]
        note = frame.note
    if notes is not None:
        notes.setdefault(report.annotation_type, note)
    return []


@attrs.define
class Finding:
    """One thing to report about a file: a problem or a warning, at a line (``None``: about a group of lines)."""

    line: int | None
    problem: Problem | None = None
    warning: DataWarning | None = None


@attrs.define
class Tally:
    """What ``validate`` counts: lines read, problems (and the lines holding them), warnings by rule."""

    lines: int = 0
    problems: int = 0
    problem_lines: int = 0
    warnings: Counter[str] = attrs.field(factory=Counter)
    last_problem_line: int | None = None

    def add(self, finding: Finding) -> None:
        if finding.problem is not None:
            self.problems += 1
            if finding.line is None or finding.line != self.last_problem_line:
                self.problem_lines += 1
            self.last_problem_line = finding.line
        elif finding.warning is not None:
            self.warnings[finding.warning.rule] += 1

    @property
    def warning_count(self) -> int:
        return sum(self.warnings.values())


def file_findings(
    path: str,
    tally: Tally,
    notes: dict[str, str] | None = None,
    group_by: str | None = None,
    keep: tuple[str, ...] = (),
    lines: Iterator[Any] | None = None,
    trace_reward_mode: Any = None,
    prediction_frame: str = "pixel",
) -> Iterator[Finding]:
    """Every problem and warning of one instance file, in order (the group rules' warnings last).

    ``tally.lines`` counts the lines read; ``notes`` collects, per annotation
    type, why its image frame could not be checked (and the lint's own notes).
    ``keep``: the user's columns, not checked; ``lines``: the file's lines when
    already opened (a Parquet shard), else ``path`` is read as JSON Lines.
    """
    if lines is None:
        with open_binary(path) as fh:
            source = read_lines(fh, "<stdin>" if path == STDIO else path)
            yield from _findings(path, source, tally, notes, group_by, keep, trace_reward_mode, prediction_frame)
    else:
        yield from _findings(path, lines, tally, notes, group_by, keep, trace_reward_mode, prediction_frame)


def _findings(
    path: str,
    lines: Iterator[Any],
    tally: Tally,
    notes: dict[str, str] | None,
    group_by: str | None,
    keep: tuple[str, ...],
    trace_reward_mode: Any = None,
    prediction_frame: str = "pixel",
) -> Iterator[Finding]:
    seen_ids: dict[str, int] = {}
    image_dir = None if path == STDIO else os.path.dirname(path) or os.curdir
    lint = DatasetLint(
        group_by=group_by, image_dir=image_dir, trace_reward_mode=trace_reward_mode, prediction_frame=prediction_frame
    )
    ignored: set[str] = set()
    group_found = group_by is None
    for line in lines:
        tally.lines += 1
        if line.error is not None:
            yield Finding(line.number, Problem("$", line.error.split(": ", 1)[1]))
            continue
        data = line.value
        combined = isinstance(data, Mapping) and "response" in data
        if isinstance(data, Mapping):  # a score input line: the instance it holds (as score reads it)
            data, left_out = instance_part(data, keep)
            ignored.update(left_out)
            group_found = group_found or column_value(line.value, group_by or "") is not MISSING
        report = lint.add(data, line.number)
        for problem in (*report.problems, *frame_problems(report, notes)):
            yield Finding(line.number, problem)
        row_id = data.get("id") if isinstance(data, Mapping) else None
        # Ids must be unique in an instance file; a combined file repeats them per response.
        if isinstance(row_id, str) and not combined:
            if row_id in seen_ids:
                yield Finding(line.number, Problem("$.id", f"duplicate id {row_id!r} (first on line {seen_ids[row_id]})"))
            else:
                seen_ids[row_id] = line.number
        for warning in report.warnings:
            yield Finding(line.number, warning=warning)
    for warning in lint.finish():
        yield Finding(warning.line, warning=warning)
    if not group_found and tally.lines:
        yield Finding(
            None, Problem("$", f"--group-by {group_by}: found on no line (a field, or a dotted path such as metadata.task)")
        )
    if notes is not None:
        for note in lint.notes:
            notes.setdefault(f"lint: {note}", note)
        if ignored:
            names = ", ".join(sorted(ignored))
            notes.setdefault(
                f"ignored: {path}",
                f"{path}: the combined lines' columns that are no instance field were not checked: {names} "
                "(score ignores them too, or keeps them with --keep)",
            )


def _keep(values: list[str]) -> tuple[str, ...]:
    return tuple(column.strip() for value in values for column in value.split(",") if column.strip())


def _shards(path: str) -> list[tuple[str, Any]]:
    """The files a FILE argument names, as score's INPUT does: ``(name, None)`` for JSON Lines, a shard for Parquet."""
    if path == STDIO:
        return [(path, None)]
    return [(shard.path, shard if shard.format == "parquet" else None) for shard in find_shards(path)]


def _text(name: str, finding: Finding) -> str:
    where = f"{name}:{finding.line}" if finding.line is not None else name
    # A message may quote the data (an unknown key): a lone surrogate in it is shown escaped.
    return escape_surrogates(f"{where}: {finding.problem if finding.problem is not None else finding.warning}")


def _json(name: str, finding: Finding) -> str:
    record: dict[str, Any] = {"file": name, "line": finding.line}
    if finding.problem is not None:
        record.update(kind="problem", rule=None, path=finding.problem.path, message=finding.problem.message)
    else:
        assert finding.warning is not None
        record.update(kind="warning", rule=finding.warning.rule, path=finding.warning.path, message=finding.warning.message)
    return dumps(record)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' * (count != 1)}"


def summary_line(tally: Tally, files: int, strict: bool) -> str:
    """``400 lines checked in 1 file: 2 problems on 2 lines, 3 warnings (count-mismatch 2, single-key-map 1)``."""
    problems = _plural(tally.problems, "problem")
    if tally.problems:
        problems += f" on {_plural(tally.problem_lines, 'line')}"
    warnings = _plural(tally.warning_count, "warning")
    if tally.warnings:
        warnings += " (" + ", ".join(f"{rule} {count:,}" for rule, count in sorted(tally.warnings.items())) + ")"
    text = f"{_plural(tally.lines, 'line')} checked in {_plural(files, 'file')}: {problems}, {warnings}"
    if strict and tally.warnings:
        text += "; --strict: warnings count as problems"
    return text


def run(args: argparse.Namespace) -> int:
    if args.trace_reward_mode is not None:
        try:
            resolve_mode(args.trace_reward_mode)
        except ValueError as exc:
            print(f"trace-tasks validate: error: --mode: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        args.prediction_frame = resolve_frame(args.prediction_frame)
    except ValueError as exc:
        print(f"trace-tasks validate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    tally = Tally()
    notes: dict[str, str] = {}
    as_json = args.json
    keep = _keep(getattr(args, "keep", []))
    paths = [found for path in args.files for found in _shards(path)]
    for path, shard in paths:
        name = "<stdin>" if path == STDIO else path
        try:
            if shard is None:
                findings = file_findings(
                    path, tally, notes, args.group_by, keep, None, args.trace_reward_mode, args.prediction_frame
                )
                for finding in findings:
                    tally.add(finding)
                    if not args.quiet:
                        print(_json(name, finding) if as_json else _text(name, finding))
            else:
                with open_lines(shard) as (lines, _):
                    for finding in file_findings(
                        path, tally, notes, args.group_by, keep, lines, args.trace_reward_mode, args.prediction_frame
                    ):
                        tally.add(finding)
                        if not args.quiet:
                            print(_json(name, finding) if as_json else _text(name, finding))
        except InputFailed as exc:  # part-way through (a truncated .gz): a problem of this file; go on with the next
            tally.problems += 1
            tally.problem_lines += 1
            if not args.quiet:
                print(
                    dumps({"file": name, "line": None, "kind": "problem", "rule": None, "path": None, "message": str(exc)})
                    if as_json
                    else escape_surrogates(str(exc))
                )
        # An input that cannot be opened at all (missing, a directory, unreadable) is not caught:
        # main reports it in one line with exit 2, as for every command.
    if not args.quiet:
        for note in notes.values():
            print(dumps({"kind": "note", "message": note}) if as_json else escape_surrogates(f"note: {note}"))
    files = len(paths)
    failed = tally.problems > 0 or (args.strict and tally.warning_count > 0)
    if as_json:
        print(
            dumps(
                {
                    "kind": "summary",
                    "files": files,
                    "lines": tally.lines,
                    "problems": tally.problems,
                    "lines_with_problems": tally.problem_lines,
                    "warnings": tally.warning_count,
                    "warnings_by_rule": dict(sorted(tally.warnings.items())),
                    "strict": bool(args.strict),
                    "passed": not failed,
                }
            )
        )
    else:
        print(summary_line(tally, files, args.strict))
    return EXIT_PROBLEMS if failed else EXIT_OK
