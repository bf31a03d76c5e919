"""Which build of trace-core is running: the pure one, or the native one.

The native build (``HATCH_BUILD_HOOKS_ENABLE=1`` when building trace-core; see
``docs/compiled.md``) ships the scoring pipeline's native common path,
``trace_tasks.scoring._native``, as an extension module compiled with Cython; the pure build has no such
module and the pipeline scores everything in Python. A module counts as compiled exactly when the file it
was loaded from is a shared library. Only modules already imported are looked at (``import trace_tasks``
imports the pipeline, which imports the native module when there is one): this reports what runs, not what
happens to lie on disk.
"""

from __future__ import annotations

import importlib.machinery
import sys
from typing import Literal

#: What :func:`build_kind` returns; also ``trace_tasks.__build__``.
BuildKind = Literal["pure", "native"]

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
    """``"native"`` when any imported ``trace_tasks`` module is compiled, else ``"pure"``.

    ``import trace_tasks`` imports the scoring pipeline, so by the time anyone can
    ask, the native module of a native build is among the imported ones.
    """
    return _kind(compiled_modules())


def _kind(modules: tuple[str, ...]) -> BuildKind:
    return "native" if modules else "pure"


def describe_build() -> str:
    """For people: ``pure build`` or ``native build (Cython)``."""
    return "native build (Cython)" if compiled_modules() else "pure build"


def build_to_json() -> dict[str, object]:
    """``{"build": "pure" | "native", "compiled_modules": [...]}`` for machine-readable listings."""
    modules = compiled_modules()
    return {"build": _kind(modules), "compiled_modules": list(modules)}
