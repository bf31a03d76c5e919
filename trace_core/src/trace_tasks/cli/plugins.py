"""``trace-tasks plugins``: list the installed plugins, what each one owns, and which reward ids are current.

Building the registry loads every entry point in the ``trace_tasks`` group, so
this command is also the quickest way to check a deployment: a family that
fails to import, two families claiming one type, or a bad
``TRACE_TASKS_REWARD_IDS`` pin is reported with the registry's own message
(``trace-tasks: error: ...``, exit code 1) instead of surfacing mid-training.

The listing starts with the core's version and build (pure, or native:
``docs/compiled.md``), then shows, per annotation type, its owner, the
owner's default reward id, the current id and what pinned it (``TRACE_TASKS_REWARD_IDS`` or
``trace_tasks.pin_reward_id()``); reward ids that a plugin adds for a type
another plugin owns; and, as problems, reward ids declared for a type no
installed plugin owns (orphans). ``--check`` also runs the family test kit
(:mod:`trace_tasks.family`) over everything installed and exits 1 on any
problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from trace_tasks import __version__
from trace_tasks._build import build_to_json, describe_build
from trace_tasks.plugins import Registry, get_registry

#: Marks the current reward id of a type in the human table.
CURRENT_MARK = "*"


def register(subparsers: Any) -> None:
    """Add the ``plugins`` subcommand to the ``trace-tasks`` parser."""
    parser = subparsers.add_parser(
        "plugins",
        help="list installed plugins, their annotation types and reward ids; --check runs the family test kit",
        description=(
            "List every plugin found in the trace_tasks entry-point group (plus the core's "
            "built-in answer types): distribution, version, entry point and implemented hooks; per annotation "
            "type its owner, default and current reward id and the pin that chose it; reward ids added by "
            "other plugins; and orphan reward ids (declared for a type no installed plugin owns) as problems. "
            "Exits with 1 when a plugin fails to load, and with --check when any problem is found."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument(
        "--check",
        action="store_true",
        help="run the family test kit (trace_tasks.family) over every installed annotation type and reward id; "
        "print each problem on one line and exit 1 if there is any",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build (or reuse) the registry and print it, or check it; plugin errors reach ``main`` (exit 1)."""
    registry = get_registry()
    if args.check:
        return run_check(registry, as_json=args.json)
    if args.json:
        json.dump(registry_to_json(registry), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_tables(registry))
    return 0


def run_check(registry: Registry, *, as_json: bool = False) -> int:
    """``--check``: the kit's problems one per line (exit 1), or a one-line OK summary (exit 0)."""
    from trace_tasks.family import check_family  # the kit scores things: only load it when asked

    problems = check_family(registry)
    summary = (
        f"{len(registry.annotation_types)} annotation types, {len(registry.reward_ids)} reward ids, "
        f"{len(registry.plugins)} plugins"
    )
    if as_json:
        out = {
            "ok": not problems,
            "checked": {
                "annotation_types": len(registry.annotation_types),
                "reward_ids": len(registry.reward_ids),
                "plugins": len(registry.plugins),
            },
            "problems": [
                {"annotation_type": p.annotation_type, "reward_id": p.reward_id, "check": p.check, "message": p.message}
                for p in problems
            ],
        }
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif problems:
        for problem in problems:
            print(problem)
        print(f"trace-tasks plugins --check: {len(problems)} problems ({summary} checked)", file=sys.stderr)
    else:
        print(f"OK: {summary} checked by the family test kit (trace_tasks.family.check_family), no problems")
    return 1 if problems else 0


def _current_ids(registry: Registry) -> set[str]:
    return {entry.current_reward_id for entry in registry.annotation_types.values()}


def _added(registry: Registry) -> dict[str, dict[str, Any]]:
    """Reward ids whose declaring plugin is not the type's owner: id -> details."""
    out = {}
    for rid, entry in registry.reward_ids.items():
        owner = registry.annotation_types[entry.annotation_type].plugin
        if entry.plugin != owner:
            out[rid] = {
                "annotation_type": entry.annotation_type,
                "plugin": entry.plugin,
                "owner": owner,
                "current": entry.current,
                "description": entry.description,
            }
    return out


def _problems(registry: Registry) -> list[str]:
    from trace_tasks.family import orphan_problems

    return [problem.message for problem in orphan_problems(registry)]


def registry_to_json(registry: Registry) -> dict[str, Any]:
    """The machine-readable listing.

    ``plugins`` holds each :class:`~trace_tasks.plugins.PluginInfo` as a dict plus
    ``current_reward_ids`` (the subset of ``reward_ids`` that contracts resolve
    to); ``annotation_types`` maps each type to its owner (``plugin``), every id
    registered for it, its default and current id and ``pinned_by`` (``null``,
    ``"TRACE_TASKS_REWARD_IDS"`` or ``"trace_tasks.pin_reward_id()"``); ``pins``
    lists the pinned types only; ``added_reward_ids`` the ids a plugin declares
    for a type another plugin owns; ``orphan_reward_ids`` the ids declared for a
    type no installed plugin owns, and ``problems`` says why each is one;
    ``trace_core`` gives the core's ``version`` and which ``build`` is running
    (``"pure"`` or ``"compiled"``, with its ``compiled_modules``).
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
            "default_reward_id": entry.default_reward_id,
            "current_reward_id": entry.current_reward_id,
            "pinned_by": entry.pinned_by,
        }
        for name, entry in registry.annotation_types.items()
    }
    pins = {
        name: {"reward_id": entry.current_reward_id, "pinned_by": entry.pinned_by}
        for name, entry in registry.annotation_types.items()
        if entry.pinned_by
    }
    orphans = {
        rid: {"annotation_type": entry.annotation_type, "plugin": entry.plugin, "description": entry.description}
        for rid, entry in registry.orphan_reward_ids.items()
    }
    return {
        "trace_core": {"version": __version__, **build_to_json()},
        "plugins": plugins,
        "annotation_types": types,
        "pins": pins,
        "added_reward_ids": _added(registry),
        "orphan_reward_ids": orphans,
        "problems": _problems(registry),
        "answer_types": sorted(registry.answer_types),
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = []
    for row in (header, *rows):
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines) + "\n"


def _join(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "-"


def format_tables(registry: Registry) -> str:
    """The core's version and build; plugins; annotation types (owner, default, current, pin, every id);
    added ids; answer types; problems."""
    plugin_rows = [
        (info.name, info.distribution or "(in-process)", info.version or "-", info.entry_point or "-", _join(info.hooks))
        for info in registry.plugins
    ]
    type_rows = []
    for name, entry in registry.annotation_types.items():
        ids = [rid + (CURRENT_MARK if rid == entry.current_reward_id else "") for rid in entry.reward_ids]
        type_rows.append(
            (name, entry.plugin, entry.default_reward_id, entry.current_reward_id, entry.pinned_by or "-", ", ".join(ids))
        )
    added = _added(registry)
    added_rows = [
        (rid, item["annotation_type"], item["plugin"], item["owner"], "yes" if item["current"] else "no")
        for rid, item in added.items()
    ]
    answer_rows = [(answer, info.name) for info in registry.plugins for answer in info.answer_types]
    pinned = sum(1 for entry in registry.annotation_types.values() if entry.pinned_by)
    out = [
        f"trace-core {__version__}, {describe_build()}\n",
        f"{len(registry.plugins)} plugins, {len(registry.annotation_types)} annotation types, "
        f"{len(registry.answer_types)} answer types" + (f", {pinned} pinned" if pinned else "") + "\n\n",
        _table(("PLUGIN", "DISTRIBUTION", "VERSION", "ENTRY POINT", "HOOKS"), plugin_rows),
        "\n",
    ]
    if type_rows:
        out.append(
            _table(
                ("ANNOTATION TYPE", "OWNER", "DEFAULT ID", "CURRENT ID", "PINNED BY", f"REWARD IDS ({CURRENT_MARK} = current)"),
                type_rows,
            )
        )
    else:
        out.append("no annotation types installed (answer mode only); e.g. pip install trace-plugins-bbox\n")
    if added_rows:
        out += ["\n", _table(("ADDED REWARD ID", "ANNOTATION TYPE", "DECLARED BY", "OWNER", "CURRENT"), added_rows)]
    out += ["\n", _table(("ANSWER TYPE", "PLUGIN"), answer_rows)]
    problems = _problems(registry)
    if problems:
        out += ["\n", f"PROBLEMS ({len(problems)})\n", *(f"{message}\n" for message in problems)]
    return "".join(out)
