"""Timing helpers shared by the benchmarks (no trace_tasks import: any build can use them)."""

from __future__ import annotations

import ctypes
import gc
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
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


# ---------------------------------------------------------------- instructions under callgrind

_CALLGRIND_REQUESTS = """
#include <valgrind/callgrind.h>
void bench_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void bench_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void bench_zero(void) { CALLGRIND_ZERO_STATS; }
void bench_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


class CallgrindRequests:
    """The client requests of valgrind's ``callgrind.h``, for a process run by :func:`callgrind_counts`.

    They are inline assembly (no Python binding): a four-function helper is built with the C compiler
    (``$CC`` or ``cc``) beside the output file. Outside valgrind they do nothing.
    """

    def __init__(self, out_file: str) -> None:
        folder = Path(out_file).parent
        source, library = folder / "requests.c", folder / "requests.so"
        source.write_text(_CALLGRIND_REQUESTS)
        compiler = os.environ.get("CC", "cc")
        subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
        self._lib = ctypes.CDLL(str(library))

    def count(self, label: str, fn: Callable[[], Any]) -> None:
        """Instructions of one call of ``fn`` (the GC collected before and paused during it), dumped as ``label``."""
        gc.collect()
        gc.disable()
        try:
            self._lib.bench_start()
            self._lib.bench_zero()
            fn()
            self._lib.bench_dump(label.encode())
            self._lib.bench_stop()
        finally:
            gc.enable()


def callgrind_counts(command: Sequence[str]) -> dict[str, int]:
    """Instructions per label: ``command --callgrind-out FILE`` run under callgrind, instrumented only when it asks.

    The command (a benchmark run by this interpreter) does its set-up and warm-up uninstrumented, then counts
    each part with :meth:`CallgrindRequests.count`. Run with ``OPENBLAS_NUM_THREADS=1`` (OpenBLAS's idle
    threads otherwise spin under valgrind) and ``PYTHONHASHSEED=0`` (the same dict probes in every run).
    """
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as folder:
        out_file = str(Path(folder) / "cg.out")
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}"]
        done = subprocess.run([*valgrind, *command, "--callgrind-out", out_file], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"valgrind failed (exit {done.returncode}) on {' '.join(command)}:\n{done.stderr[-3000:]}")
        counts: dict[str, int] = {}
        for dump in Path(folder).glob("cg.out.*"):
            text = dump.read_text()
            label = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.MULTILINE)
            total = re.search(r"^(?:totals|summary): (\d+)", text, re.MULTILINE)
            if label and total:
                counts[label.group(1)] = int(total.group(1))
    return counts
