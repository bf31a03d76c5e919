"""``trace-tasks plugins``: list the installed plugins and what each one owns.

Building the registry loads every entry point in the ``trace_tasks`` group, so
this command is also the quickest way to check a deployment: a family that
fails to import, or two families claiming one type, is reported here with the
registry's own message and exit code 1, instead of surfacing mid-training.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from trace_tasks.errors import TraceTasksError
from trace_tasks.plugins import Registry, get_registry

#: Marks the current reward id of a type in the human table.
CURRENT_MARK = "*"


def register(subparsers: Any) -> None:
    """Add the ``plugins`` subcommand to the ``trace-tasks`` parser."""
    parser = subparsers.add_parser(
        "plugins",
        help="list installed plugins, their annotation types and reward ids",
        description=(
            "List every plugin found in the trace_tasks entry-point group (plus the core's "
            "built-in answer types): distribution, version, entry point, annotation types, "
            f"reward ids (current ones marked {CURRENT_MARK}), answer types and implemented hooks. "
            "Exits with 1 when a plugin fails to load."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build (or reuse) the registry and print it; 1 when plugins cannot be loaded."""
    try:
        registry = get_registry()
    except TraceTasksError as exc:
        print(f"trace-tasks plugins: could not load plugins: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(registry_to_json(registry), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_tables(registry))
    return 0


def _current_ids(registry: Registry) -> set[str]:
    return {entry.current_reward_id for entry in registry.annotation_types.values()}


def registry_to_json(registry: Registry) -> dict[str, Any]:
    """The machine-readable listing.

    ``plugins`` holds each :class:`~trace_tasks.plugins.PluginInfo` as a dict plus
    ``current_reward_ids`` (the subset of ``reward_ids`` that contracts resolve
    to); ``annotation_types`` maps each type to its owner, ids and current id.
    """
    current = _current_ids(registry)
    plugins = []
    for info in registry.plugins:
        item = info.to_dict()
        item["current_reward_ids"] = [rid for rid in info.reward_ids if rid in current]
        plugins.append(item)
    types = {
        name: {
            "plugin": entry.plugin,
            "reward_ids": list(entry.reward_ids),
            "current_reward_id": entry.current_reward_id,
        }
        for name, entry in registry.annotation_types.items()
    }
    return {"plugins": plugins, "annotation_types": types, "answer_types": sorted(registry.answer_types)}


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = []
    for row in (header, *rows):
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines) + "\n"


def _join(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "-"


def format_tables(registry: Registry) -> str:
    """Three tables: plugins, annotation types with their reward ids, answer types."""
    current = _current_ids(registry)
    plugin_rows = [
        (info.name, info.distribution or "(in-process)", info.version or "-", info.entry_point or "-", _join(info.hooks))
        for info in registry.plugins
    ]
    type_rows = []
    for name, entry in registry.annotation_types.items():
        ids = [rid + (CURRENT_MARK if rid in current else "") for rid in entry.reward_ids]
        type_rows.append((name, entry.plugin, ", ".join(ids)))
    answer_rows = [(answer, info.name) for info in registry.plugins for answer in info.answer_types]
    out = [
        f"{len(registry.plugins)} plugins, {len(registry.annotation_types)} annotation types, "
        f"{len(registry.answer_types)} answer types\n\n",
        _table(("PLUGIN", "DISTRIBUTION", "VERSION", "ENTRY POINT", "HOOKS"), plugin_rows),
        "\n",
    ]
    if type_rows:
        out.append(_table(("ANNOTATION TYPE", "PLUGIN", f"REWARD IDS ({CURRENT_MARK} = current)"), type_rows))
    else:
        out.append("no annotation types installed (answer mode only); e.g. pip install trace-plugins-bbox\n")
    out += ["\n", _table(("ANSWER TYPE", "PLUGIN"), answer_rows)]
    return "".join(out)
