"""``trace-tasks score --workers N`` against ``--workers 1``: total CPU of the process tree and wall clock.

Run from the repository root::

    uv run python benchmarks/bench_workers.py                      # 50,000 rows, workers 1 and 2, 3 rounds
    uv run python benchmarks/bench_workers.py --rows 20000 --rounds 1 --workers 1 2

The input is ``examples/data/combined.jsonl`` repeated with ids made distinct
(``<id>-<k>``), so every row is a distinct instance (no cache hit anywhere).
Every run is the command itself (``python -m trace_tasks.cli score IN -o OUT -q
--workers N``) in a process of its own; its CPU (user + sys) comes from
``os.wait4``, which includes the pool workers it waited for, so it is the CPU of
the whole process tree. The worker counts alternate round by round; medians are
printed with the load average before and after. Every output is checked byte
for byte against the first ``--workers 1`` output. CPU seconds are the reliable
measure on a shared machine; the wall clock depends on what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "data" / "combined.jsonl"


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def make_input(path: Path, rows: int) -> None:
    base = [json.loads(line) for line in SOURCE.read_text().splitlines() if line.strip()]
    with path.open("w") as out:
        for number in range(rows):
            row = dict(base[number % len(base)])
            row["id"] = f"{row['id']}-{number // len(base)}"
            out.write(json.dumps(row) + "\n")


def run(source: Path, output: Path, workers: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys, the command and the workers it waited for) of one command."""
    command = [sys.executable, "-m", "trace_tasks.cli", "score", str(source), "-o", str(output), "-q", "--workers", str(workers)]
    start = time.perf_counter()
    proc = subprocess.Popen(command)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{command} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"cores usable: {len(os.sched_getaffinity(0))}, load average at start: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "in.jsonl"
        make_input(source, args.rows)
        reference: bytes | None = None
        results: dict[int, list[tuple[float, float]]] = {n: [] for n in args.workers}
        for number in range(args.rounds):
            order = args.workers if number % 2 == 0 else list(reversed(args.workers))
            for workers in order:
                output = Path(tmp) / f"out-{workers}.jsonl"
                before = load_average()
                wall, cpu = run(source, output, workers)
                data = output.read_bytes()
                if reference is None:
                    reference = data
                elif data != reference:
                    raise SystemExit(f"--workers {workers}: output differs from the first run's")
                results[workers].append((wall, cpu))
                print(
                    f"round {number + 1} --workers {workers}: wall {wall:.2f} s, CPU {cpu:.2f} s (load {before} -> {load_average()})"
                )
        base_cpu = statistics.median(cpu for _, cpu in results[args.workers[0]])
        base_wall = statistics.median(wall for wall, _ in results[args.workers[0]])
        print(f"\n{args.rows:,} rows, medians of {args.rounds} (outputs identical byte for byte):")
        print("| workers | wall | CPU (process tree) | CPU vs first | wall vs first |")
        print("|---:|---:|---:|---:|---:|")
        for workers, runs in results.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"| {workers} | {wall:.2f} s | {cpu:.2f} s | {cpu / base_cpu:.2f}x | {base_wall / wall:.2f}x |")
        print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
