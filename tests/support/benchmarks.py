"""The repository's benchmark scripts, imported from tests (they are scripts in ``benchmarks/``, not a package)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def import_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as a module (``workload``, ``bench_shapes``, ...), with ``benchmarks/`` on the path
    only while it imports (the scripts import their neighbours by bare name)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
