"""docs/architecture.md stays true to the package: its rooms table, its layering, the paths it names.

Static checks only (``ast``; nothing of the library is imported to check it).
That a room's private modules are imported only from inside the room is
``tests/core/test_rooms.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "trace_core" / "src" / "trace_tasks"
DOC = REPO / "docs" / "architecture.md"
#: Root modules every room may import.
ROOT_MODULES = frozenset({"errors", "limits", "_build"})


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def table_rooms() -> list[str]:
    """The rooms of the table, in its order (the folder column: ``reading/`` -> ``reading``)."""
    text = _doc()
    section = text[text.index("## Rooms") : text.index("## One `score_trace_response` call")]
    return re.findall(r"^\| `(\w+)/` \|", section, re.M)


def package_rooms() -> set[str]:
    return {p.parent.name for p in PACKAGE.glob("*/__init__.py")}


def test_the_table_lists_every_room_once() -> None:
    rooms = table_rooms()
    assert len(rooms) == len(set(rooms))
    assert set(rooms) == package_rooms()
    assert "| the package root |" in _doc()


def _imported_rooms(path: Path) -> set[tuple[str, int]]:
    """``(room or root module, line)`` of every ``trace_tasks.*`` import in a file (module level or lazy)."""
    found: set[tuple[str, int]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "trace_tasks":
                names = [f"trace_tasks.{alias.name}" for alias in node.names]
            else:
                names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "trace_tasks" and len(parts) > 1:
                found.add((parts[1], node.lineno))
    return found


@pytest.mark.parametrize("room", sorted(package_rooms()))
def test_a_room_imports_only_root_modules_and_rooms_above_it(room: str) -> None:
    """What the page says: a room imports errors.py, limits.py and rooms above it in the table, never one below."""
    order = table_rooms()
    above = set(order[: order.index(room)])
    wrong = []
    for path in sorted((PACKAGE / room).rglob("*.py")):
        for imported, line in _imported_rooms(path):
            if imported in (room, *ROOT_MODULES, *above):
                continue
            if imported == "__version__":
                continue  # "only the package's version is read from the root __init__.py"
            wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports trace_tasks.{imported}")
    assert not wrong, "\n".join(wrong)


def test_the_root_modules_import_no_room() -> None:
    for name in sorted(ROOT_MODULES):
        imported = {room for room, _ in _imported_rooms(PACKAGE / f"{name}.py")}
        assert imported <= ROOT_MODULES, (name, imported)


def test_the_package_paths_it_names_exist() -> None:
    """Backquoted paths such as ``scoring/_pipeline.py``, ``limits.py`` or ``cli/`` are files of the package."""
    named = {
        code
        for code in re.findall(r"`([\w/]+(?:\.py|/))`", _doc())
        if code.split("/")[0] in package_rooms()
        or code in {"__init__.py", "errors.py", "limits.py", "_moved.py", "_build.py", "hookspecs.py"}
    }
    assert {"scoring/_pipeline.py", "limits.py", "errors.py", "cli/", "integrations/"} <= named
    for code in named:
        target = PACKAGE / "plugins" / code if code == "hookspecs.py" else PACKAGE / code
        assert target.exists(), code
