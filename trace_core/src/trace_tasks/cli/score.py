"""``trace-tasks score``: score stored rollouts, one JSON line of scores per input line.

Every instance is validated and compiled once (:func:`trace_tasks.compile_instance`,
cached by content), so an invalid instance is an error line naming its
problems, never a silent zero reward. Input is streamed in chunks (scored
in-process, in a process pool, or with Ray), so memory stays flat on inputs of
any length; in the two-file layout only the instances index is held, and the
problems of the instances file are printed before scoring (exit code 1).
Output keeps input order, and a line that cannot be scored becomes a line with
an ``error`` field: the input and output line counts are always equal. A
summary table goes to stderr. Output files are created before any input is
read and replace an existing file only when the run completes
(:mod:`trace_tasks.cli._output`); an output that is an input is refused.
Every output line is strict JSON that can be written as UTF-8, whatever the
input held (:func:`trace_tasks.cli._jsonl.dumps`): an id with a lone surrogate
makes its line ASCII-escaped, a non-finite id (``1e999``) is written as a string.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from typing import IO, Any

from trace_tasks.cli._engine import ENGINES, EngineError, chunk_size, load_ray_scorer, score_chunks
from trace_tasks.cli._errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from trace_tasks.cli._jsonl import Source, dumps, open_source, read_lines
from trace_tasks.cli._options import add_scoring_options, int_at_least, scoring_options
from trace_tasks.cli._output import REPLACED_WHEN_DONE, STDIO, open_outputs
from trace_tasks.cli._progress import make_progress
from trace_tasks.cli._rows import InstanceIndex, Slot, combined_slots, joined_slots
from trace_tasks.cli._summary import Summary

EXIT_LINE_ERRORS = EXIT_FAILED


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score stored responses (JSON Lines in, JSON Lines of scores out)",
        description=(
            "Score stored responses. INPUT holds instances with a 'response' field, or, with --responses, "
            'instances joined by \'id\' to a file of {"id", "response"} lines. Files may be .jsonl or '
            ".jsonl.gz; '-' is standard input. Every instance is validated first. One output line per input "
            "line, in order; a line that cannot be scored (an invalid instance among them) gets an 'error' field "
            "naming every problem, and the exit code is 1; so do problems of an instances file (--responses "
            "layout), which are printed before scoring. An output may not be an input or another output (exit 2)."
        ),
    )
    parser.add_argument("input", metavar="INPUT", help="instances (with 'response' unless --responses is given), or '-'")
    parser.add_argument("--responses", metavar="FILE", help="responses joined to INPUT by id (several per instance allowed)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default=None,
        help=f"where to write scores (default: stdout; .gz compresses); {REPLACED_WHEN_DONE}",
    )
    parser.add_argument(
        "--summary-json", metavar="FILE", help=f"also write the summary as JSON to FILE ('-': stdout); {REPLACED_WHEN_DONE}"
    )
    parser.add_argument(
        "--workers",
        type=int_at_least(1),
        default=1,
        metavar="N",
        help="scoring processes, or Ray CPUs with --engine ray (default %(default)s)",
    )
    parser.add_argument("--engine", choices=ENGINES, default="local", help="local (default) or ray (needs trace-core[ray])")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table on stderr")
    add_scoring_options(parser)
    parser.set_defaults(func=run)


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
    if args.engine == "ray":
        try:
            load_ray_scorer()
        except EngineError as exc:
            return _fail(str(exc))
    return _score(args, options)


def _score(args: argparse.Namespace, options: dict[str, Any]) -> int:
    summary = Summary()
    instance_problems: list[str] = []
    # Outputs first: one that cannot be written fails before any input is read.
    with open_outputs(args.output or STDIO, args.summary_json) as (out, summary_out):
        assert out is not None
        if args.responses is None:
            with open_source(args.input) as source:
                _write_all(combined_slots(read_lines(source.stream, source.name)), source, out, summary, args, options)
        else:
            with open_source(args.input) as source:
                index = InstanceIndex.load(read_lines(source.stream, source.name), source.name)
            instance_problems = index.problems
            _report_instance_problems(instance_problems, index.source)
            with open_source(args.responses) as source:
                _write_all(joined_slots(read_lines(source.stream, source.name), index), source, out, summary, args, options)
        if not args.quiet:
            print(summary.table(), file=sys.stderr)
        if summary_out is not None:
            data = {**summary.to_dict(), "instance_problems": instance_problems, "options": options}
            summary_out.write(dumps(data, indent=2) + "\n")
    return EXIT_LINE_ERRORS if summary.errors or instance_problems else EXIT_OK


def _report_instance_problems(problems: list[str], source: str) -> None:
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
    slots: Iterator[Slot], source: Source, out: IO[str], summary: Summary, args: argparse.Namespace, options: dict[str, Any]
) -> None:
    progress = make_progress("scoring", quiet=args.quiet, total=source.size())
    chunks: Iterator[tuple[list[Slot], list[Any]]] = _chunks(slots, chunk_size(args.engine, args.workers))
    try:
        for group, results in score_chunks(chunks, options=options, workers=args.workers, engine=args.engine):
            errors_before = summary.errors
            scored = iter(results)
            for slot in group:
                # One write per line: the output stream is guarded (a Python-level call per write).
                out.write(dumps(_record(slot, next(scored) if slot.item is not None else None, summary)) + "\n")
            progress.update(len(group), summary.errors - errors_before, source.position())
    finally:
        progress.close()


def _record(slot: Slot, scores: dict[str, Any] | None, summary: Summary) -> dict[str, Any]:
    """The output line of one slot, counted in the summary."""
    head = {"id": slot.id, "line": slot.line}
    if slot.error is not None:
        summary.add_error()
        return {**head, "error": slot.error}
    assert scores is not None
    if "error" in scores:  # the scorer refused the item (a caller mistake such as a missing family)
        summary.add_error()
        return {**head, "error": f"line {slot.line}: {scores['error']}"}
    summary.add_scores(slot.annotation_type, scores)
    return {**head, **scores}
