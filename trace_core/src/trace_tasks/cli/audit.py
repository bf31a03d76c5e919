"""``trace-tasks audit``: what image-blind and reference policies earn on a dataset, through the normal scorer.

The policies, their groups and the tables are :mod:`trace_tasks.cli._views.audit`
(the report shows the same audit); this module reads the flags, the
instances, and prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from trace_tasks.cli._options import FileRoles, add_scoring_options, scoring_options
from trace_tasks.cli._views.audit import DEFAULT_THRESHOLD, audit, load, tables, to_json
from trace_tasks.runs import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    REPLACED_WHEN_DONE,
    STDIO,
    dumps,
    open_outputs,
    open_source,
    read_lines,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="what image-blind policies earn on a dataset (a reward-hacking baseline)",
        description=(
            "Score fixed image-blind policies (the group's majority answer, with no, an empty, the whole-image or the "
            "mean annotation) and reference policies (the correct answer alone or with the whole image) on every "
            "instance of INSTANCES through the normal scorer; print per annotation type what each earns. "
            "Image-blind policies whose mean overall is at least --threshold are flagged, and the exit code is 1; "
            "so it is when an instance is invalid (it is left out, its problems printed)."
        ),
    )
    parser.add_argument(
        "instances",
        metavar="INSTANCES",
        help="instances (.jsonl, .jsonl.gz, or '-'); a combined line is read as score reads it (its 'response' ignored)",
    )
    parser.add_argument(
        "--threshold",
        type=_share,
        default=DEFAULT_THRESHOLD,
        metavar="T",
        help="flag an image-blind policy whose mean overall is >= T (default %(default)s)",
    )
    parser.add_argument(
        "--group-by",
        metavar="COLUMN",
        default=None,
        help=(
            "audit per value of COLUMN (a field, or a dotted path such as metadata.task): the majority answer and "
            "the tables per value and type; a COLUMN found on no line is an error naming it"
        ),
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        default=None,
        help=f"also write the audit as JSON ('-': stdout, the tables then go to stderr); {REPLACED_WHEN_DONE}",
    )
    add_scoring_options(parser)
    parser.set_defaults(func=run, file_roles=FileRoles(inputs=(("instances", "INSTANCES"),), outputs=(("json", "--json"),)))


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


# --- reading -----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    try:
        options = scoring_options(args)
    except ValueError as exc:
        print(f"trace-tasks audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with open_outputs(args.json) as (json_out,):
        with open_source(args.instances) as source:
            instances = load(read_lines(source.stream, source.name), source.name, args.group_by)
        if args.group_by is not None and not instances.group_found and (instances.compiled or instances.problems):
            print(
                f"trace-tasks audit: error: --group-by {args.group_by}: found on no line of {instances.source} "
                "(a field, or a dotted path such as metadata.task)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        for problem in instances.problems:
            print(f"trace-tasks audit: instances: {problem}", file=sys.stderr)
        if instances.problems:
            print(
                f"trace-tasks audit: {len(instances.problems)} problem(s) in {instances.source}: "
                "those instances are left out of the audit, and the exit code will be 1",
                file=sys.stderr,
            )
        result = audit(instances.compiled, options, args.threshold, instances.labels or None)
        shown: IO[str] = sys.stderr if args.json == STDIO else sys.stdout
        if instances.repeated:
            print(f"{instances.repeated} line(s) repeating an id seen before (a combined file) left out", file=shown)
        print(tables(result), file=shown)
        if json_out is not None:
            json_out.write(dumps(to_json(result, instances, options), indent=2) + "\n")
    return EXIT_FAILED if result.any_flagged() or instances.problems else EXIT_OK
