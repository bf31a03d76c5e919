"""Flags to options: the scorer options every scoring subcommand accepts (checked before any input is read),
and which arguments of a subcommand name files (checked for clashes before it runs)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import attrs

from trace_tasks.runs import UsageError, check_distinct_files
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


def add_scoring_options(parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None) -> None:
    """Add one flag per row of the options table (``--mode``, the weights, ``--formula``, ...), dest its API name.

    ``only``: just the rows of these names (``validate`` and ``schema`` take ``prediction_frame`` alone).
    """
    group = parser.add_argument_group("scorer options (as in score_trace_response)")
    for row in OPTIONS:
        if only is not None and row.name not in only:
            continue
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


# --- file arguments --------------------------------------------------------------------------------

#: A value of this form in an input argument names a file after the ``@`` (``explain --response @FILE``).
AT_FILE = "@"


@attrs.frozen
class FileRoles:
    """Which arguments of a subcommand name files: ``(dest, label)`` pairs; a list value names several files.

    An input dest starting with ``@`` holds a value that is a file only when
    it starts with ``@`` (the rest is the path).
    """

    inputs: tuple[tuple[str, str], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()


#: The file arguments of each subcommand (``set_defaults(file_roles=...)`` in a parser overrides its entry).
FILE_ARGUMENTS: dict[str, FileRoles] = {
    "score": FileRoles(
        inputs=(("input", "INPUT"), ("responses", "--responses")),
        outputs=(("output", "--output"), ("summary_json", "--summary-json")),
    ),
    "validate": FileRoles(inputs=(("files", "FILE"),)),
    "explain": FileRoles(
        inputs=(("instance", "--instance"), ("image", "--image"), ("@response", "--response")), outputs=(("png", "--png"),)
    ),
}


def _values(args: argparse.Namespace, dest: str) -> Iterator[str]:
    value = getattr(args, dest.lstrip(AT_FILE), None)
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, str):
            continue
        if dest.startswith(AT_FILE):
            if item.startswith(AT_FILE):
                yield item[1:]
        else:
            yield item


def check_file_arguments(args: argparse.Namespace) -> None:
    """Refuse (:class:`~trace_tasks.runs.UsageError`) an output that is an input or another output of the command.

    A subcommand's file arguments are found in :data:`FILE_ARGUMENTS` under its
    name, or in ``parser.set_defaults(file_roles=FileRoles(...))`` (which wins);
    the files are compared by :func:`trace_tasks.runs.check_distinct_files`.
    """
    roles = getattr(args, "file_roles", None) or FILE_ARGUMENTS.get(getattr(args, "command", "") or "")
    if roles is None:
        return
    inputs = [(label, path) for dest, label in roles.inputs for path in _values(args, dest)]
    outputs = [(label, path) for dest, label in roles.outputs for path in _values(args, dest)]
    for label, path in inputs + outputs:
        if isinstance(path, str) and not path.strip():  # -o "" wrote to standard output; --summary-json "" said "a directory"
            raise UsageError(f"{label} is an empty name: give a file name, or - for standard input or output")
    check_distinct_files(inputs, outputs)
