"""The import paths of the flat layout (before the rooms), kept for one release with a ``DeprecationWarning``.

``import trace_tasks.shapes`` (or ``from trace_tasks.specs import ScoringContext``)
still works: a finder on ``sys.meta_path`` answers for each old path with a
module that looks every name up in the modules now holding it, and warns once,
naming the module to import instead. So a third-party family written against
the old paths keeps loading. Nothing in the library itself imports an old path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

#: Old module (under ``trace_tasks.``) -> (where to import from now, the modules holding its names, in order).
MOVED: dict[str, tuple[str, tuple[str, ...]]] = {
    "answers": ("trace_tasks.scoring", ("scoring._answers", "plugins._answer_types")),
    "assignment": ("trace_tasks.family", ("family._assignment",)),
    "batch": ("trace_tasks", ("data._batch",)),
    "coordinates": ("trace_tasks.family", ("family._coordinates",)),
    "distance": ("trace_tasks.family", ("family._distance", "scoring._context")),
    "drawing": ("trace_tasks.family", ("plugins._drawables",)),
    "extraction": ("trace_tasks.reading", ("reading._extraction",)),
    "frames": ("trace_tasks.cli", ("cli._views.frames",)),
    "hookspecs": ("trace_tasks.plugins.hookspecs", ("plugins.hookspecs",)),
    "image_size": ("trace_tasks.scoring", ("scoring._image_size",)),
    "instances": ("trace_tasks", ("data._validation", "data._compiled", "data._cache", "errors")),
    "literals": ("trace_tasks.reading", ("reading._literals",)),
    "markers": ("trace_tasks.family", ("plugins._markers",)),
    "matching": ("trace_tasks.family", ("family._matching",)),
    "numpy_values": ("trace_tasks.reading", ("reading._values",)),
    "options": ("trace_tasks.scoring", ("scoring._options",)),
    "primitives": ("trace_tasks.family", ("family._primitives",)),
    "records": ("trace_tasks.data", ("data._records",)),
    "shape_parsing": ("trace_tasks.family", ("family._parsing",)),
    "shape_scoring": ("trace_tasks.family", ("family._scoring",)),
    "shapes": ("trace_tasks.family", ("family._shapes", "family")),
    "specs": ("trace_tasks.family", ("plugins._records",)),
    "testing": ("trace_tasks.family", ("family._kit",)),
}


class _MovedModule(types.ModuleType):
    """An old path: every attribute is looked up in the modules that hold it now."""

    _homes: Sequence[str]

    def __getattr__(self, name: str) -> Any:
        for home in self._homes:
            module = importlib.import_module(f"trace_tasks.{home}")
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        names: set[str] = set()
        for home in self._homes:
            names.update(dir(importlib.import_module(f"trace_tasks.{home}")))
        return sorted(names)


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the old paths of :data:`MOVED`; every other name is left to the usual finders."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != "trace_tasks" or name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _MovedModule(spec.name)
        module._homes = MOVED[spec.name.rpartition(".")[2]][1]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        instead = MOVED[module.__name__.rpartition(".")[2]][0]
        warnings.warn(
            f"{module.__name__} is deprecated and will be removed in the next release: import from {instead} instead",
            DeprecationWarning,
            stacklevel=2,
        )


FINDER = _MovedFinder()


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (after the usual finders: no real module is shadowed)."""
    if FINDER not in sys.meta_path:
        sys.meta_path.append(FINDER)
