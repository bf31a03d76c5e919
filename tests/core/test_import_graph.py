"""The import graph of ``trace_tasks``, built statically with ``ast``: no circle, and no command importing another.

Every import counts, a function-level one too: an import inside a function
runs later, but a circle it closes is still a circle (a module that can only
be imported after another has finished loading). ``from package import name``
is an arrow to ``package.name`` when that is a module, else to ``package``.
That no room imports a room after it in docs/architecture.md's order is
``tests/docs/test_architecture.py``; that rooms meet only at their doors,
``tests/core/test_rooms.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from .test_rooms import LIBRARY, UNCHECKED, is_module

Graph = dict[str, set[str]]


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def arrows(source: str, importer: str, *, is_package: bool = False) -> set[str]:
    """The library modules ``source`` imports, at load time or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, importer, is_package)
            names = [f"{module}.{alias.name}" for alias in node.names if alias.name != "*"]
            modules = [name for name in names if is_module(name)]
            found.update(modules)
            if len(modules) < len(names) or not names:
                found.add(module)
    return {name for name in found if name.partition(".")[0] == "trace_tasks" and is_module(name)}


def graph(modules: Iterable[tuple[str, Path]]) -> Graph:
    return {
        module: arrows(path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py") - {module}
        for module, path in modules
        if module not in UNCHECKED
    }


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: the graph is deep enough to matter for recursion
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


LIBRARY_GRAPH = graph(LIBRARY)


# --- the checks themselves, on graphs written here ----------------------------------------------------


def test_a_circle_through_a_function_level_import_is_found() -> None:
    sources = {
        "trace_tasks.cli.score": "import trace_tasks.runs._engine\n",
        "trace_tasks.runs._engine": "def later():\n    from trace_tasks.cli import score\n",
    }
    edges = {name: arrows(text, name) for name, text in sources.items()}
    assert circles(edges) == [["trace_tasks.cli.score", "trace_tasks.runs._engine"]]


def test_a_line_of_imports_is_no_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_scan_sees_function_level_imports() -> None:
    assert "trace_tasks.runs._ray" in LIBRARY_GRAPH["trace_tasks.runs._run"]  # imported inside score_files
    assert "trace_tasks.runs._ray_engine" in LIBRARY_GRAPH["trace_tasks.runs._ray_joined"]


# --- the library ---------------------------------------------------------------------------------------


def test_the_library_has_no_import_circle() -> None:
    assert circles(LIBRARY_GRAPH) == []


@pytest.mark.parametrize("command", ["score", "validate", "audit", "explain", "report", "schema", "plugins", "serve"])
def test_a_command_imports_no_other_command(command: str) -> None:
    from trace_tasks.cli import SUBCOMMANDS

    commands = {f"trace_tasks.cli.{name}" for name in SUBCOMMANDS}
    assert f"trace_tasks.cli.{command}" in commands
    mine = f"trace_tasks.cli.{command}"
    inside = [name for name in LIBRARY_GRAPH if name == mine or name.startswith(mine + ".")]
    others = commands - {mine}
    reached = {target for name in inside for target in LIBRARY_GRAPH[name]}
    assert not {target for target in reached if target in others or target.rpartition(".")[0] in others}
