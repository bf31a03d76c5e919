"""The scorer options every scoring subcommand accepts, checked before any input is read."""

from __future__ import annotations

import argparse
from typing import Any

from trace_tasks.scoring import NUMBER, OPTIONS, SWITCH, options_from


def int_at_least(minimum: int) -> Any:
    """An argparse ``type`` for whole numbers >= ``minimum`` (1: "a positive integer")."""
    wanted = "a positive integer" if minimum == 1 else f"a whole number >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    return parse


def add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """Add one flag per row of the options table (``--mode``, the weights, ``--formula``, ...), dest its API name."""
    group = parser.add_argument_group("scorer options (as in score_trace_response)")
    for row in OPTIONS:
        text = f"{row.name}: {row.description}" + (" (opt-in)" if row.opt_in else "")
        if row.cli == SWITCH:
            group.add_argument(row.flag, dest=row.name, action="store_true", help=text)
            continue
        shown = "" if row.default is None else "; default %(default)s"
        kind = float if row.cli == NUMBER else str
        group.add_argument(row.flag, dest=row.name, type=kind, default=row.default, metavar=row.metavar, help=text + shown)


def scoring_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword options for the scorer; raises :class:`~trace_tasks.errors.OptionError` (a ``ValueError``) naming a bad one."""
    options = {row.name: getattr(args, row.name) for row in OPTIONS}
    options_from(options)  # an OptionError names a bad one before any input is read
    return options
