"""Timing helpers shared by the benchmarks (no trace_tasks import: any build can use them)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def timed(fn: Callable[[], Any]) -> float:
    """Seconds of one run of ``fn``, with the cyclic GC collected before and paused during it."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as ``/proc/loadavg`` gives them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"
