"""The ``trace-tasks`` command. Each subcommand lives in its own module here.

A subcommand module defines ``register(subparsers)``, which adds its parser and
sets ``func`` (called with the parsed arguments, returning the exit code).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from trace_tasks import __version__

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
    return int(args.func(args) or 0)


if __name__ == "__main__":  # python -m trace_tasks.cli
    raise SystemExit(main())
