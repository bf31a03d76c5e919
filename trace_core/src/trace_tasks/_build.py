"""Which build of trace-core is running: the pure one, or the one compiled with mypyc.

The compiled build (``HATCH_BUILD_HOOKS_ENABLE=1`` when building trace-core; see
``docs/compiled.md``) ships the per-response hot modules as extension modules
next to their ``.py`` sources. The import system prefers an extension module
over a source file of the same name, so a module is compiled exactly when the
file it was loaded from is a shared library. Only modules already imported are
looked at: this reports what runs, not what happens to lie on disk.
"""

from __future__ import annotations

import importlib.machinery
import sys
from typing import Literal

#: What :func:`build_kind` returns; also ``trace_tasks.__build__``.
BuildKind = Literal["pure", "compiled"]

# ".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so" (".pyd" on Windows).
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def compiled_modules() -> tuple[str, ...]:
    """The imported ``trace_tasks`` modules that were loaded from a shared library, sorted."""
    found = []
    for name, module in list(sys.modules.items()):  # a copy: another thread may be importing
        if name != "trace_tasks" and not name.startswith("trace_tasks."):
            continue
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(_EXTENSION_SUFFIXES):
            found.append(name)
    return tuple(sorted(found))


def build_kind() -> BuildKind:
    """``"compiled"`` when any imported ``trace_tasks`` module is compiled, else ``"pure"``.

    ``import trace_tasks`` imports the scoring pipeline, so by the time anyone can
    ask, the hot modules of a compiled build are among the imported ones.
    """
    return _kind(compiled_modules())


def _kind(modules: tuple[str, ...]) -> BuildKind:
    return "compiled" if modules else "pure"


def describe_build() -> str:
    """For people: ``pure build`` or ``compiled build (mypyc, 14 modules)``."""
    modules = compiled_modules()
    return f"compiled build (mypyc, {len(modules)} modules)" if modules else "pure build"


def build_to_json() -> dict[str, object]:
    """``{"build": "pure" | "compiled", "compiled_modules": [...]}`` for machine-readable listings."""
    modules = compiled_modules()
    return {"build": _kind(modules), "compiled_modules": list(modules)}
