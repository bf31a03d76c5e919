"""The ``trace-tasks`` command. Each subcommand lives in its own module here.

A subcommand module defines ``register(subparsers)``, which adds its parser and
sets ``func`` (called with the parsed arguments, returning the exit code).

A deployment problem (a plugin that fails to load, two plugins claiming one
type, a bad ``TRACE_TASKS_REWARD_IDS`` pin, a missing official family: any
:class:`~trace_tasks.errors.TraceTasksError` a subcommand lets through) is
reported by :func:`main` as one line, ``trace-tasks: error: <message>``, with
exit code 1 and no traceback, whatever the subcommand.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from trace_tasks import __version__
from trace_tasks.errors import TraceTasksError

#: Subcommand modules, in the order ``--help`` lists them.
SUBCOMMANDS: tuple[str, ...] = ("score", "validate", "explain", "plugins", "serve")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="trace-tasks",
        description="Score, validate and explain trace_tasks rewards; list installed families.",
    )
    parser.add_argument("--version", action="version", version=f"trace-tasks {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"trace_tasks.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except TraceTasksError as exc:
        print(f"trace-tasks: error: {error_line(exc)}", file=sys.stderr)
        return 1


def error_line(exc: BaseException) -> str:
    """``ErrorClass: message`` on one line (a message spanning lines is joined with spaces)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


if __name__ == "__main__":  # python -m trace_tasks.cli
    raise SystemExit(main())
