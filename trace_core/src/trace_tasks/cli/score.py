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
(:mod:`trace_tasks.runs._output`); an output that is an input is refused.
Every output line is strict JSON that can be written as UTF-8, whatever the
input held (:func:`trace_tasks.runs._jsonl.dumps`): an id with a lone surrogate
makes its line ASCII-escaped, a non-finite id (``1e999``) is written as a string.

A directory or a glob as INPUT (or ``-o DIR``) makes a sharded run: one
output per input shard (:mod:`trace_tasks.runs._shards`), each complete under
its name or absent, so ``--resume`` skips the complete ones. ``--engine ray``
runs the same jobs as a Ray Data pipeline (:mod:`trace_tasks.runs._ray_engine`).

This module only turns the flags into :class:`trace_tasks.runs.RunSettings`;
the run itself is :func:`trace_tasks.runs.score_files`, callable without the
command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trace_tasks.cli._options import add_scoring_options, int_at_least, scoring_options
from trace_tasks.runs import ENGINES, EXIT_USAGE, REPLACED_WHEN_DONE, RunSettings, score_files


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
    parser.add_argument(
        "--columns",
        choices=("all", "stable"),
        default="all",
        help="all (default: every result key) or stable: no option echoes, aliases or one-hots, and the annotation "
        "type as a string column 'annotation_type' (JSON Lines, local engine)",
    )
    add_scoring_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the scorer options, then score; the run's own refusals reach ``main`` as one line and exit 2."""
    try:
        options = scoring_options(args)
    except ValueError as exc:
        print(f"trace-tasks score: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return score_files(settings(args, options)).exit_status


def settings(args: argparse.Namespace, options: dict[str, Any]) -> RunSettings:
    """The run the flags ask for."""
    return RunSettings(
        input=args.input,
        responses=args.responses,
        output=args.output,
        resume=args.resume,
        engine=args.engine,
        workers=args.workers,
        address=args.address,
        keep=tuple(args.keep),
        group_by=args.group_by,
        summary=args.summary_json,
        metrics=not args.no_metrics,
        quiet=args.quiet,
        options=options,
        output_columns=args.columns,
    )
