"""``trace-tasks validate``: check instance files before training on them.

Each problem is printed as ``FILE:LINE: PATH: MESSAGE`` followed by a count;
the exit code is 1 when there is any problem. The checks of one instance are
:func:`trace_tasks.instances.instance_problems`, the same validation the scorer
tools use (structure, contract rules, installed families, the answer value,
the target parse, the image size). On top, for a file: ids are unique, and,
when an image size is given, every item of the target lies inside the pixel
frame (asked of the owning family through :func:`trace_tasks.frames.frame_report`;
a family that cannot say gets a note, not a problem).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from typing import Any

from trace_tasks.cli._errors import EXIT_FAILED, EXIT_OK, InputFailed
from trace_tasks.cli._extraction_view import escape_surrogates
from trace_tasks.cli._frames import frame_report
from trace_tasks.cli._jsonl import open_binary, read_lines
from trace_tasks.cli._output import STDIO
from trace_tasks.data import Problem, instance_report
from trace_tasks.plugins import get_registry

EXIT_PROBLEMS = EXIT_FAILED


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check instance files (structure, contracts, families, coordinates)",
        description=(
            "Check instance files (.jsonl, .jsonl.gz, or '-' for stdin): record structure, reward-contract rules, "
            "installed families, target annotations that parse, unique ids, and coordinates inside the image "
            "frame when image_size is given. A 'response' field (combined score input) is ignored. "
            "Exit code 1 when any problem is found."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="instance files to check")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the final count")
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


def file_problems(path: str, notes: dict[str, str] | None = None) -> Iterator[tuple[int, Problem]]:
    """``(line number, problem)`` for every problem of one instance file, in order.

    ``notes`` collects, per annotation type, why its image frame could not be checked.
    """
    seen_ids: dict[str, int] = {}
    with open_binary(path) as fh:
        for line in read_lines(fh, "<stdin>" if path == STDIO else path):
            if line.error is not None:
                yield line.number, Problem("$", line.error.split(": ", 1)[1])
                continue
            data = line.value
            combined = isinstance(data, Mapping) and "response" in data
            if combined:  # a score input line: the instance plus its response
                data = {k: v for k, v in data.items() if k != "response"}
            report = instance_report(data)
            for problem in (*report.problems, *frame_problems(report, notes)):
                yield line.number, problem
            row_id = data.get("id") if isinstance(data, Mapping) else None
            # Ids must be unique in an instance file; a combined file repeats them per response.
            if isinstance(row_id, str) and not combined:
                if row_id in seen_ids:
                    yield line.number, Problem("$.id", f"duplicate id {row_id!r} (first on line {seen_ids[row_id]})")
                else:
                    seen_ids[row_id] = line.number


def run(args: argparse.Namespace) -> int:
    problems = 0
    lines_with_problems = 0
    notes: dict[str, str] = {}
    for path in args.files:
        name = "<stdin>" if path == STDIO else path
        last_line = 0
        try:
            for number, problem in file_problems(path, notes):
                problems += 1
                lines_with_problems += number != last_line
                last_line = number
                if not args.quiet:
                    # A message may quote the data (an unknown key): a lone surrogate in it is shown escaped.
                    print(escape_surrogates(f"{name}:{number}: {problem}"))
        except InputFailed as exc:  # part-way through (a truncated .gz): a problem of this file; go on with the next
            print(escape_surrogates(str(exc)))
            problems += 1
        # An input that cannot be opened at all (missing, a directory, unreadable) is not caught:
        # main reports it in one line with exit 2, as for every command.
    if not args.quiet:
        for note in notes.values():
            print(escape_surrogates(f"note: {note}"))
    files = len(args.files)
    print(
        f"{problems} problem{'s' * (problems != 1)} on {lines_with_problems} line{'s' * (lines_with_problems != 1)} "
        f"in {files} file{'s' * (files != 1)}"
    )
    return EXIT_PROBLEMS if problems else EXIT_OK
