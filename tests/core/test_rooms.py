"""The rooms of ``trace_tasks``, checked statically with ``ast`` (nothing is imported to check it).

* A room's private modules (``trace_tasks.<room>._<module>``) are imported only
  from inside the room; every other module goes through the room's door
  (``from trace_tasks.scoring import X``, the name listed in the door's ``__all__``).
* No module of the library imports a flat path of the old layout (the keys of
  ``trace_tasks._moved.MOVED``); only ``_moved.py`` names them, as strings.
* The official families and the example families import only the public modules
  a family author is given (:data:`FAMILY_MODULES`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from trace_tasks._moved import MOVED

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "trace_core" / "src"
PACKAGE = SRC / "trace_tasks"
ROOMS = frozenset({"reading", "plugins", "scoring", "family", "data", "cli", "integrations", "runs"})

#: Library modules that may import what they please: the deprecation table names old and new modules as strings.
UNCHECKED = frozenset({"trace_tasks._moved"})

#: (importing module, imported private module) -> why a module outside the room may import it.
#: Each must be a lazy import (inside a function); none is needed today.
ALLOWED_PRIVATE: dict[tuple[str, str], str] = {}

#: The only trace_tasks modules a family (or an example family) imports, and why each is public to them.
FAMILY_MODULES = {
    "trace_tasks": "the top-level API (scoring, contracts)",
    "trace_tasks.family": "the family-author API: everything a family needs, AnnotationParseError and from_numpy included",
    "trace_tasks.errors": "public: every error (trace_tasks.family re-exports AnnotationParseError)",
    "trace_tasks.limits": "the documented bounds",
}
FAMILY_SOURCES = (
    REPO / "trace_plugins_bbox" / "src",
    REPO / "trace_plugins_point" / "src",
    REPO / "trace_plugins_segment" / "src",
    REPO / "examples" / "circle_family" / "src",
    REPO / "examples" / "giou_bbox" / "src",
)


class Imported(NamedTuple):
    """One module an import statement names: ``from a.b import c`` names ``a.b`` and ``a.b.c``."""

    name: str
    line: int
    lazy: bool  # inside a function body (run when called, not when the module loads)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of the library (a file under ``trace_core/src``)."""
    base = SRC.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports(source: str, importer: str, *, is_package: bool = False) -> Iterator[Imported]:
    """Every module ``source`` imports; for ``from m import n``, both ``m`` and ``m.n`` (``n`` may be a module)."""
    tree = ast.parse(source)
    lazy_nodes = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for inner in ast.walk(node)
        if inner is not node
    }
    for node in ast.walk(tree):
        lazy = id(node) in lazy_nodes
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Imported(alias.name, node.lineno, lazy)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, importer, is_package)
            yield Imported(module, node.lineno, lazy)
            for alias in node.names:
                if alias.name != "*":
                    yield Imported(f"{module}.{alias.name}", node.lineno, lazy)


def private_room_module(name: str) -> str | None:
    """The private room module ``name`` is or lies in (``trace_tasks.scoring._pipeline``), else None."""
    parts = name.split(".")
    if len(parts) >= 3 and parts[0] == "trace_tasks" and parts[1] in ROOMS and parts[2].startswith("_"):
        return ".".join(parts[:3])
    return None


def old_path_home(name: str) -> str | None:
    """Where to import from instead, when ``name`` is (or lies in) an old flat path; else None."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[0] == "trace_tasks" and parts[1] in MOVED:
        return MOVED[parts[1]][0]
    return None


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in ROOMS else None


def room_violations(source: str, importer: str, *, is_package: bool = False) -> list[str]:
    """The imports of a room's private module by ``importer`` from outside that room (not allowed by name)."""
    found = []
    for imported in imports(source, importer, is_package=is_package):
        private = private_room_module(imported.name)
        if private is None or room_of(private) == room_of(importer):
            continue
        why = ALLOWED_PRIVATE.get((importer, private))
        if why is not None and imported.lazy:
            continue
        found.append(f"{importer}:{imported.line} imports {private}: import from trace_tasks.{room_of(private)} instead")
    return found


def library_modules() -> list[tuple[str, Path]]:
    return sorted((module_name(path, SRC), path) for path in PACKAGE.rglob("*.py"))


LIBRARY = library_modules()


def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# --- the rule itself, on sources written here ------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "from trace_tasks.scoring._pipeline import run\n",
        "import trace_tasks.scoring._pipeline\n",
        "from trace_tasks.scoring import _pipeline\n",
        "def later():\n    from trace_tasks.data._batch import score_trace_batch\n",
        "from ..scoring._pipeline import run\n",
    ],
)
def test_an_import_of_another_rooms_private_module_is_reported(source: str) -> None:
    assert room_violations(source, "trace_tasks.cli.score")


@pytest.mark.parametrize(
    "source",
    [
        "from trace_tasks.scoring import score_trace_response\n",
        "from trace_tasks.cli._options import scoring_options\n",  # its own room
        "from ._options import scoring_options\n",
        "from trace_tasks.errors import OptionError\n",
        "import trace_tasks.plugins.hookspecs\n",  # public module of a room
    ],
)
def test_an_import_through_the_door_or_within_the_room_is_fine(source: str) -> None:
    assert room_violations(source, "trace_tasks.cli.score") == []


def test_a_rooms_door_may_import_its_private_modules() -> None:
    source = "from trace_tasks.scoring._pipeline import run\n"
    assert room_violations(source, "trace_tasks.scoring", is_package=True) == []
    assert room_violations(source, "trace_tasks", is_package=True)


# --- the library -------------------------------------------------------------------------------------


def test_the_scan_sees_the_library() -> None:
    names = dict(LIBRARY)
    assert {"trace_tasks", "trace_tasks.errors", "trace_tasks.scoring._pipeline", "trace_tasks.cli.score"} <= set(names)
    seen = {i.name for i in imports(_source(names["trace_tasks.cli.score"]), "trace_tasks.cli.score")}
    assert "trace_tasks.cli._options" in seen  # within its room: the scan is not vacuous


def test_private_modules_of_a_room_are_imported_only_inside_it() -> None:
    problems = []
    for module, path in LIBRARY:
        if module not in UNCHECKED:
            problems += room_violations(_source(path), module, is_package=path.name == "__init__.py")
    assert problems == []


def test_every_allowed_private_import_is_lazy_and_still_there() -> None:
    sources = dict(LIBRARY)
    for (importer, private), why in ALLOWED_PRIVATE.items():
        assert why.strip(), importer
        found = [i for i in imports(_source(sources[importer]), importer) if private_room_module(i.name) == private]
        assert found, f"{importer} no longer imports {private}: drop it from ALLOWED_PRIVATE"
        assert all(i.lazy for i in found), f"{importer} imports {private} at load time"


def test_the_moved_table_names_real_homes_only() -> None:
    for old, (instead, homes) in MOVED.items():
        assert not is_module(f"trace_tasks.{old}"), f"trace_tasks.{old} is a real module again: drop it from MOVED"
        assert is_module(instead), old
        assert all(is_module(f"trace_tasks.{home}") for home in homes), old


def test_no_module_imports_an_old_flat_path() -> None:
    problems = []
    for module, path in LIBRARY:
        if module in UNCHECKED:
            continue
        for imported in imports(_source(path), module, is_package=path.name == "__init__.py"):
            instead = old_path_home(imported.name)
            if instead is not None:
                problems.append(f"{module}:{imported.line} imports {imported.name}: {instead} instead")
    assert problems == []


# --- the families and the examples -------------------------------------------------------------------


def family_modules() -> list[tuple[str, Path]]:
    return sorted((module_name(path, root), path) for root in FAMILY_SOURCES for path in root.rglob("*.py"))


def family_violations(source: str, importer: str, *, is_package: bool = False) -> list[str]:
    """The trace_tasks imports of a family module other than :data:`FAMILY_MODULES` and their public names."""
    found = []
    for imported in imports(source, importer, is_package=is_package):
        name = imported.name
        if old_path_home(name) is not None:
            found.append(f"{importer}:{imported.line} imports the old path {name}")
            continue
        if name.partition(".")[0] != "trace_tasks" or name in FAMILY_MODULES:
            continue
        parent, _, last = name.rpartition(".")
        if not is_module(name) and parent in FAMILY_MODULES and not last.startswith("_"):
            continue  # a public name of an allowed module (``from trace_tasks.family import Primitive``)
        found.append(f"{importer}:{imported.line} imports {name}")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "from trace_tasks.family._kit import CONTEXT\n",
        "from trace_tasks.family import _kit\n",
        "from trace_tasks import scoring\n",
        "import trace_tasks.data\n",
        "from trace_tasks.shapes import ShapeFamily\n",
        "from trace_tasks import shapes\n",
        "def later():\n    from trace_tasks.scoring import ANSWER\n",
    ],
)
def test_a_family_importing_beyond_the_family_modules_is_reported(source: str) -> None:
    assert family_violations(source, "trace_plugins_x.plugin")


def test_a_family_importing_the_family_modules_is_fine() -> None:
    source = (
        "import numpy as np\n"
        "from trace_tasks import family, score_trace_response\n"
        "from trace_tasks.errors import AnnotationParseError\n"
        "from trace_tasks.family import Primitive, ShapeFamily\n"
        "from trace_plugins_x.geometry import iou\n"
    )
    assert family_violations(source, "trace_plugins_x.plugin") == []


def test_families_and_examples_import_only_the_family_authors_modules() -> None:
    modules = family_modules()
    assert {name.partition(".")[0] for name, _ in modules} == {
        "trace_plugins_bbox",
        "trace_plugins_point",
        "trace_plugins_segment",
        "trace_plugins_circle",
        "trace_plugins_bbox_giou",
    }
    problems = []
    for module, path in modules:
        problems += family_violations(_source(path), module, is_package=path.name == "__init__.py")
    assert problems == [], f"families import only {sorted(FAMILY_MODULES)}"
