"""``trace-tasks score --workers N`` against ``--workers 1``: total CPU of the process tree and wall clock.

Run from the repository root::

    uv run python benchmarks/bench_workers.py                      # 50,000 rows, workers 1 and 2, 3 rounds
    uv run python benchmarks/bench_workers.py --rows 20000 --rounds 1 --workers 1 2
    uv run python benchmarks/bench_workers.py --rows 20000 --rounds 1 --callgrind   # instructions (slow: ~5 min a run)

The input is ``examples/data/combined.jsonl`` repeated with ids made distinct
(``<id>-<k>``: three responses per instance, as in the file), so no instance
is met again in another chunk. Every run is the command itself (``python -m
trace_tasks.cli score IN -o OUT -q --workers N``) in a process of its own.
Its CPU (user + sys) is that of the whole process tree: this process makes
itself the subreaper of its descendants (``PR_SET_CHILD_SUBREAPER``, Linux),
so the fork server and the resource tracker, which outlive the command by a
moment, are reaped here too and counted with the workers they reaped. With
``--callgrind`` every process of the tree runs under valgrind's callgrind
(``--trace-children=yes``; a forked worker's counts start at zero) and the
figure is the sum of their instruction counts: independent of the machine's load, which the CPU seconds are not (on
a machine whose cores are all busy, the same work costs more CPU seconds). Each run also prints every process's
count: the command, the workers forked from it (on Linux, while it runs one Python thread), or a fork server,
the workers it forked and the resource tracker.
The worker counts alternate round by round; medians are printed with the load
average before and after. Every output is checked byte for byte against the
first ``--workers 1`` output.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import resource
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


def become_subreaper() -> None:
    """Orphaned descendants (the fork server, the resource tracker) are handed to this process, so their CPU is counted."""
    PR_SET_CHILD_SUBREAPER = 36
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit(f"prctl(PR_SET_CHILD_SUBREAPER): errno {ctypes.get_errno()}")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_all() -> None:
    """Wait for every descendant handed to this process (the command's helpers exit once it has)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def callgrind_processes(directory: Path) -> dict[int, tuple[str, int]]:
    """Each process of the tree: its pid, the command line callgrind recorded and its instruction count."""
    found: dict[int, tuple[str, int]] = {}
    for name in glob.glob(str(directory / "cg.*")):
        cmd, total = "", 0
        with open(name) as fh:
            for line in fh:
                if line.startswith("cmd:"):
                    cmd = line[4:].strip()
                elif line.startswith(("summary:", "totals:")):
                    total = int(line.split()[1])
                    break
        found[int(name.rsplit(".", 1)[1])] = (cmd, total)
    return found


def breakdown(processes: dict[int, tuple[str, int]], command: int) -> str:
    """The tree's instructions by process, in G: the command, its workers (forked from it, or by a fork server), the rest."""
    own_cmd, own = processes.get(command, ("", 0))
    copies = sorted(total for pid, (cmd, total) in processes.items() if pid != command and cmd == own_cmd)
    parts = [f"command {own / 1e9:.3f}"]
    if copies:
        parts.append("forked from it " + " + ".join(f"{total / 1e9:.3f}" for total in copies))
    for pid, (cmd, total) in sorted(processes.items()):  # a fork server first, then the workers it forked (same cmd)
        if pid != command and cmd != own_cmd:
            name = next((known for known in ("forkserver", "resource_tracker", "spawn_main") if known in cmd), cmd[-30:])
            parts.append(f"{name} {total / 1e9:.3f}")
    return ", ".join(parts)


def run(source: Path, output: Path, workers: int, callgrind: Path | None = None) -> tuple[float, float]:
    """Wall seconds of the command, and CPU seconds (user + sys) or instructions (``callgrind``) of its whole process tree."""
    command = [sys.executable, "-m", "trace_tasks.cli", "score", str(source), "-o", str(output), "-q", "--workers", str(workers)]
    env = None
    if callgrind is not None:
        callgrind.mkdir(parents=True, exist_ok=True)
        for old in glob.glob(str(callgrind / "cg.*")):
            os.remove(old)
        out = f"--callgrind-out-file={callgrind}/cg.%p"
        # A forked worker starts with its fork server's counts: zeroed there, so each process counts only its own work.
        zero = "--zero-before=PyOS_AfterFork_Child"
        command = ["valgrind", "--tool=callgrind", "--trace-children=yes", zero, out, "-q", *command]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # idle BLAS threads spin under valgrind
    before = children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env)
    _, status, _ = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    reap_all()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{command} exited {proc.returncode}")
    if callgrind is not None:
        processes = callgrind_processes(callgrind)
        print(f"  processes (G instructions): {breakdown(processes, proc.pid)}")
        return wall, float(sum(total for _, total in processes.values()))
    return wall, children_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--callgrind", action="store_true", help="count instructions under callgrind instead of CPU seconds")
    args = parser.parse_args()
    become_subreaper()
    unit = "instructions" if args.callgrind else "CPU"
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
                wall, cpu = run(source, output, workers, Path(tmp) / f"cg-{workers}" if args.callgrind else None)
                data = output.read_bytes()
                if reference is None:
                    reference = data
                elif data != reference:
                    raise SystemExit(f"--workers {workers}: output differs from the first run's")
                results[workers].append((wall, cpu))
                figure = f"{cpu:,.0f} instructions" if args.callgrind else f"CPU {cpu:.2f} s"
                print(f"round {number + 1} --workers {workers}: wall {wall:.2f} s, {figure} (load {before} -> {load_average()})")
        base_cpu = statistics.median(cpu for _, cpu in results[args.workers[0]])
        base_wall = statistics.median(wall for wall, _ in results[args.workers[0]])
        print(f"\n{args.rows:,} rows, medians of {args.rounds} (outputs identical byte for byte):")
        print(f"| workers | wall | {unit} (process tree) | {unit} vs first | wall vs first |")
        print("|---:|---:|---:|---:|---:|")
        for workers, runs in results.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            figure = f"{cpu / 1e9:.2f} G" if args.callgrind else f"{cpu:.2f} s"
            print(f"| {workers} | {wall:.2f} s | {figure} | {cpu / base_cpu:.3f}x | {base_wall / wall:.2f}x |")
        print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
