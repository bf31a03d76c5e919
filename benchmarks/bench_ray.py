"""``trace-tasks score --engine ray`` on a real Ray cluster on this machine: one node against two, and the driver's memory.

Run from the repository root::

    .venv/bin/python benchmarks/bench_ray.py            # 4 x 50,000 rows, 3 rounds, then 1,000,000 rows: ~15-20 minutes
    .venv/bin/python benchmarks/bench_ray.py --quick    # small sizes, one round: a smoke check in a minute or two

Every run is the command itself, ``[sys.executable, "-m", "trace_tasks.cli",
"score", ...]`` in a process of its own, as a user runs it; Ray clusters are
``ray.cluster_utils.Cluster`` (a head and, for two nodes, one more node, one
CPU each, on this machine), always stopped with ``cluster.shutdown()``.

1. **Scaling** (``--shards`` x ``--lines`` rows of ``examples/data/combined.jsonl``
   repeated, one directory, ``-o DIR/``): the local engine with ``--workers 1``
   and ``--workers 2`` (the baseline of the same run), then ``--engine ray
   --address ADDR --workers N`` on a fresh one-node cluster (N = 1) and on a
   fresh two-node cluster (N = 2). Each configuration also scores a one-line
   input first (its wall time is the start-up: interpreter, imports, joining
   the cluster, starting the actors, the node check); the "net" rate is the
   rows over the full run's wall time minus that. On a fresh cluster an
   untimed one-line run comes before both (the first job also starts Ray
   Data's own detached actors; reported apart). The configurations alternate
   over ``--rounds`` rounds (order reversed every other round), the figures are
   medians. Each run's outputs must be byte-identical to the first local run's.
2. **Driver memory, two-file layout** (``--instances`` instances built from
   ``examples/data/instances.jsonl`` with ids ``f"{id}-{k}"``, ``--rows``
   responses from ``examples/data/responses.jsonl`` with their ids rewritten to
   instances drawn at random, each split into a few shards): ``--responses
   ... -o DIR/`` on a fresh two-node cluster; the driver's peak RSS must stay
   under ``--bound-mb`` (PASS/FAIL); a 108-row run on the same cluster, first,
   shows what the driver costs with no data at all.

Per run: wall time; the CLI process's CPU seconds (user + sys) and peak RSS
from ``os.wait4`` (they include any child it waited for: the local engine's
worker processes; the Ray driver starts none); for Ray, the CPU seconds of
the cluster's processes (GCS, raylets, workers: the descendants of this
process, sampled from ``/proc`` every 0.25 s); how busy the machine's cores
were (``/proc/stat``), and how many cores other processes used meanwhile
("others": the busy time minus this benchmark's, the CLI's and the
cluster's, over the wall time; a run with others well above 0 was
disturbed). The load average is printed before each part and at the end;
``--wait-load`` waits (up to ``--max-wait`` seconds) for the 1-minute load to
fall below it before each part, ``--quiet-cores`` until other processes use
fewer cores than that before each configuration. The last commit of the
packages is printed at the start, with a warning at the end if they changed
meanwhile (the other sessions of a shared checkout). Generated data lives
in a temporary directory (``--tmp``) removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import loadavg

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "data"
CLK_TCK = os.sysconf("SC_CLK_TCK")
RUN_TIMEOUT_S = 1800
LOCAL_CONFIGS = ("local-1", "local-2")
RAY_CONFIGS = ("ray-1node", "ray-2nodes")


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # user + sys seconds of the CLI process (and the children it waited for)
    rss_mib: float  # peak resident set of the CLI process (or its largest waited-for child), MiB
    cluster_cpu: float  # CPU seconds of this process's other descendants (the Ray cluster) meanwhile, sampled
    busy: float  # share of the machine's CPU time that was busy meanwhile (0-1)
    others: float = 0.0  # cores used meanwhile by processes outside this benchmark (busy time minus ours, over wall)


# --- measuring ---------------------------------------------------------------------------------------


def machine() -> str:
    """The CPU, the cores this process may use, Python and Ray (bench_scoring's ``machine`` needs numpy and scipy)."""
    import platform

    import ray

    cpu = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError):
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    return f"{cpu}, {len(os.sched_getaffinity(0))} cores; Python {platform.python_version()}, Ray {ray.__version__}"


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "TRACE_TASKS_PLUGINS", "TRACE_TASKS_DISABLE_PLUGINS")}
    env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    return env


def descendants_cpu(exclude: int = 0) -> dict[int, int]:
    """CPU ticks (user + sys, own) of every live descendant of this process but ``exclude``'s subtree: the Ray cluster's."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            table[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _) in table.items():
        children[ppid].append(pid)
    found, stack = {}, [pid for pid in children[os.getpid()] if pid != exclude]
    while stack:
        pid = stack.pop()
        found[pid] = table[pid][1]
        stack.extend(children[pid])
    return found


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(values[:8])  # guest time is already in user
    return total - values[3] - values[4], total


def score(args: Sequence[str], log: Path) -> Run:
    """Run ``trace-tasks score ARGS -q`` to completion; its wall time, CPU, peak RSS and what the cluster spent."""
    command = [sys.executable, "-m", "trace_tasks.cli", "score", *args, "-q"]
    before, ticks_before, own = descendants_cpu(), machine_ticks(), time.process_time()
    seen = dict(before)
    with open(log, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=cli_env())
        deadline, sample = start + RUN_TIMEOUT_S, start
        try:
            while True:
                if time.perf_counter() >= sample:  # a process that ends between samples loses its last 0.25 s at most
                    seen.update(descendants_cpu(exclude=proc.pid))
                    sample = time.perf_counter() + 0.25
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() > deadline:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.01)
        except BaseException:  # interrupted (SIGTERM, Ctrl-C): no CLI is left running against a cluster going down
            proc.kill()
            os.wait4(proc.pid, 0)
            raise
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    busy_after, total_after = machine_ticks()
    own = time.process_time() - own
    seen.update(descendants_cpu())
    cluster_cpu = sum(ticks - before.get(pid, 0) for pid, ticks in seen.items()) / CLK_TCK
    if proc.returncode != 0:  # the examples score without an 'error' row; 1 is also what a traceback gives
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"trace-tasks score {' '.join(args)} exited {proc.returncode}:\n{tail}")
    cpu = usage.ru_utime + usage.ru_stime
    busy = (busy_after - ticks_before[0]) / CLK_TCK
    return Run(
        wall=wall,
        cpu=cpu,
        rss_mib=usage.ru_maxrss / 1024,  # kB on Linux
        cluster_cpu=cluster_cpu,
        busy=(busy_after - ticks_before[0]) / max(1, total_after - ticks_before[1]),
        others=max(0.0, busy - own - cpu - cluster_cpu) / wall,
    )


@contextlib.contextmanager
def ray_cluster(nodes: int, object_store_mb: int) -> Iterator[tuple[Any, float]]:
    """A fresh cluster of ``nodes`` one-CPU nodes on this machine (and the seconds it took to start); shut down after."""
    from ray.cluster_utils import Cluster

    start = time.perf_counter()
    node_args = {"num_cpus": 1, "env_vars": cli_env(), "object_store_memory": object_store_mb << 20}
    cluster = Cluster(initialize_head=True, connect=False, head_node_args=node_args)
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        yield cluster, time.perf_counter() - start
    finally:
        cluster.shutdown()


def revision() -> str:
    """The last commit of the code under test (the packages), and its uncommitted changes: it may change meanwhile."""
    packages = ["trace_core", *sorted(p.name for p in ROOT.glob("trace_plugins_*"))]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args, "--", *packages], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        last, dirty = git("log", "-1", "--format=%h"), git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{last}{' with uncommitted changes: ' + ', '.join(line[3:] for line in dirty.splitlines()) if dirty else ''}"


def wait_for_load(threshold: float, max_wait: float) -> None:
    if threshold <= 0 or max_wait <= 0:
        return
    deadline = time.monotonic() + max_wait
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        print(f"  waiting for the load to fall below {threshold} (now {loadavg()})", flush=True)
        time.sleep(min(30.0, max(1.0, deadline - time.monotonic())))
    print(f"load average: {loadavg()}", flush=True)


def others_now(seconds: float = 3.0) -> float:
    """Cores other processes use now: the machine's busy time over ``seconds`` minus this process's and its descendants'."""
    before, ticks, own = descendants_cpu(), machine_ticks()[0], time.process_time()
    time.sleep(seconds)
    after = descendants_cpu()
    ours = sum(t - before.get(pid, 0) for pid, t in after.items()) / CLK_TCK + time.process_time() - own
    return max(0.0, (machine_ticks()[0] - ticks) / CLK_TCK - ours) / seconds


def wait_until_quiet(threshold: float, max_wait: float) -> None:
    """Before each timed configuration: wait (up to ``max_wait`` s) until other processes use under ``threshold`` cores."""
    if threshold <= 0 or max_wait <= 0:
        return
    deadline = time.monotonic() + max_wait
    while (others := others_now()) >= threshold and time.monotonic() < deadline:
        print(f"  waiting: other processes use {others:.2f} cores", flush=True)
        time.sleep(min(20.0, max(0.0, deadline - time.monotonic())))


# --- data ------------------------------------------------------------------------------------------


def write_lines(path: Path, lines: Iterator[bytes] | list[bytes]) -> None:
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(line)


def build_scaling_input(directory: Path, shards: int, lines: int) -> None:
    rows = [line + b"\n" for line in (DATA / "combined.jsonl").read_bytes().splitlines() if line.strip()]
    (directory / "in").mkdir(parents=True)
    shard = [rows[i % len(rows)] for i in range(lines)]
    for i in range(shards):
        write_lines(directory / "in" / f"part-{i:02d}.jsonl", shard)
    (directory / "tiny").mkdir()
    write_lines(directory / "tiny" / "part-00.jsonl", rows[:1])


def build_joined_input(directory: Path, instances: int, rows: int, shards: int, seed: int) -> None:
    """``inst/``: ``instances`` distinct ids in ``shards`` files; ``resp/``: ``rows`` responses over them, shuffled."""
    bases = [json.loads(line) for line in (DATA / "instances.jsonl").read_text().splitlines() if line.strip()]
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (DATA / "responses.jsonl").read_text().splitlines():
        if line.strip():
            response = json.loads(line)
            by_id[response["id"]].append(response)
    templates = [by_id[base["id"]] or [r for rs in by_id.values() for r in rs] for base in bases]

    def instance_id(i: int) -> str:
        return f"{bases[i % len(bases)]['id']}-{i // len(bases)}"

    (directory / "inst").mkdir(parents=True)
    (directory / "resp").mkdir()
    per = math.ceil(instances / shards)
    for s in range(shards):
        chunk = range(s * per, min(instances, (s + 1) * per))
        lines = [(json.dumps({**bases[i % len(bases)], "id": instance_id(i)}) + "\n").encode() for i in chunk]
        write_lines(directory / "inst" / f"inst-{s:02d}.jsonl", lines)
    rng = random.Random(seed)
    per = math.ceil(rows / shards)
    for s in range(shards):
        count = min(rows, (s + 1) * per) - s * per
        picks = (rng.randrange(instances) for _ in range(count))
        lines = ((json.dumps({**rng.choice(templates[i % len(bases)]), "id": instance_id(i)}) + "\n").encode() for i in picks)
        write_lines(directory / "resp" / f"resp-{s:02d}.jsonl", lines)
    (directory / "tiny-inst").mkdir()
    (directory / "tiny-resp").mkdir()
    shutil.copy(DATA / "instances.jsonl", directory / "tiny-inst" / "inst-00.jsonl")
    shutil.copy(DATA / "responses.jsonl", directory / "tiny-resp" / "resp-00.jsonl")


def line_count(directory: Path) -> int:
    total = 0
    for path in directory.iterdir():
        with open(path, "rb") as fh:
            total += sum(chunk.count(b"\n") for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""))
    return total


def same_outputs(left: Path, right: Path) -> bool:
    if not right.is_dir():
        return False
    names = sorted(p.name for p in left.iterdir())
    return names == sorted(p.name for p in right.iterdir()) and all(
        filecmp.cmp(left / name, right / name, shallow=False) for name in names
    )


# --- 1. scaling ------------------------------------------------------------------------------------


def scaling(args: argparse.Namespace, work: Path) -> dict[str, dict[str, list[Run]]]:
    rows = args.shards * args.lines
    build_scaling_input(work, args.shards, args.lines)
    size = sum(p.stat().st_size for p in (work / "in").iterdir())
    print(
        f"\n== 1. scaling: {args.shards} shards x {args.lines:,} lines = {rows:,} rows ({size / 1e6:,.0f} MB), {args.rounds} round(s)"
    )
    wait_for_load(args.wait_load, args.max_wait)
    reference = work / "reference"
    runs: dict[str, dict[str, list[Run]]] = {
        c: {"full": [], "tiny": [], "start": [], "first": []} for c in (*LOCAL_CONFIGS, *RAY_CONFIGS)
    }
    order = (*LOCAL_CONFIGS, *RAY_CONFIGS)
    for round_ in range(args.rounds):
        for config in order if round_ % 2 == 0 else order[::-1]:
            wait_until_quiet(args.quiet_cores, args.max_wait)
            out, tiny_out = work / f"out-{config}", work / f"tiny-{config}"
            if config in LOCAL_CONFIGS:
                workers = config.split("-")[1]
                tiny = score([str(work / "tiny"), "-o", f"{tiny_out}/", "--workers", workers], work / "log")
                full = score([str(work / "in"), "-o", f"{out}/", "--workers", workers], work / "log")
                started = None
            else:
                nodes = 1 if config == "ray-1node" else 2
                with ray_cluster(nodes, args.object_store_mb) as (cluster, started):
                    engine = ["--engine", "ray", "--address", cluster.address, "--workers", str(nodes)]
                    first = score([str(work / "tiny"), "-o", f"{tiny_out}-first/", *engine], work / "log")
                    runs[config]["first"].append(first)
                    shutil.rmtree(f"{tiny_out}-first")
                    tiny = score([str(work / "tiny"), "-o", f"{tiny_out}/", *engine], work / "log")
                    full = score([str(work / "in"), "-o", f"{out}/", *engine], work / "log")
            runs[config]["full"].append(full)
            runs[config]["tiny"].append(tiny)
            if started is not None:
                runs[config]["start"].append(Run(started, 0, 0, 0, 0))
            extra = ""
            if started is not None:
                extra = f", cluster CPU {full.cluster_cpu:.1f} s, cluster start {started:.1f} s, first run {first.wall:.1f} s"
            print(
                f"  round {round_ + 1} {config:<10} {full.wall:7.2f} s ({rows / full.wall:8,.0f} rows/s; tiny {tiny.wall:5.2f} s)"
                f"  driver CPU {full.cpu:6.2f} s, peak RSS {full.rss_mib:5.0f} MiB{extra}, cores busy {full.busy:.0%}"
                f" (others {full.others:.2f} cores), load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            if not reference.exists():
                if line_count(out) != rows:
                    raise SystemExit(f"{config}: {line_count(out):,} output lines, expected {rows:,}")
                out.rename(reference)
            else:
                if not same_outputs(reference, out):
                    raise SystemExit(f"{config}: the outputs differ from the first local run's")
                shutil.rmtree(out)
            shutil.rmtree(tiny_out)
    print(f"load average after part 1: {loadavg()}")
    report_scaling(runs, rows, args)
    shutil.rmtree(work)
    return runs


def median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(run, field) for run in runs)


def report_scaling(runs: dict[str, dict[str, list[Run]]], rows: int, args: argparse.Namespace) -> None:
    base = rows / median(runs["local-1"]["full"], "wall")
    print(f"\nMedians of {args.rounds} round(s), {rows:,} rows ({args.shards} x {args.lines:,}):\n")
    print(
        "| configuration | wall | rows/s | vs local-1 | start-up (1-line run) | net rows/s | driver CPU | driver CPU / wall "
        "| driver peak RSS | cluster CPU | cores busy | others |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    labels = {
        "local-1": "local, `--workers 1`",
        "local-2": "local, `--workers 2`",
        "ray-1node": "ray, 1 node x 1 CPU, `--workers 1`",
        "ray-2nodes": "ray, 2 nodes x 1 CPU, `--workers 2`",
    }
    for config, label in labels.items():
        full, tiny = runs[config]["full"], runs[config]["tiny"]
        wall, startup = median(full, "wall"), median(tiny, "wall")
        net = statistics.median(rows / max(1e-9, f.wall - t.wall) for f, t in zip(full, tiny, strict=True))
        cpu = median(full, "cpu")
        cluster = f"{median(full, 'cluster_cpu'):.1f} s" if config in RAY_CONFIGS else "-"
        print(
            f"| {label} | {wall:.2f} s | {rows / wall:,.0f} | {rows / wall / base:.2f}x | {startup:.2f} s | {net:,.0f} "
            f"| {cpu:.2f} s | {cpu / wall:.0%} | {median(full, 'rss_mib'):.0f} MiB | {cluster} | {median(full, 'busy'):.0%} "
            f"| {median(full, 'others'):.2f} |"
        )
    one, two = median(runs["ray-1node"]["full"], "wall"), median(runs["ray-2nodes"]["full"], "wall")
    starts = [run.wall for c in RAY_CONFIGS for run in runs[c]["start"]]
    print(f"\nray 2 nodes vs 1 node: {one / two:.2f}x (ratio of the median wall times)")
    firsts = [run.wall for c in RAY_CONFIGS for run in runs[c]["first"]]
    print(
        f"not in any figure above: cluster start, median {statistics.median(starts):.1f} s; the first 1-line run on a "
        f"fresh cluster (starts Ray Data's own actors), median {statistics.median(firsts):.1f} s"
    )


# --- 2. driver memory --------------------------------------------------------------------------------


def driver_memory(args: argparse.Namespace, work: Path) -> bool:
    build_joined_input(work, args.instances, args.rows, args.joined_shards, args.seed)
    size = sum(p.stat().st_size for p in (work / "resp").iterdir())
    print(
        f"\n== 2. driver memory, --responses layout: {args.instances:,} instances, {args.rows:,} responses "
        f"({size / 1e6:,.0f} MB) in {args.joined_shards} shards each, a 2-node cluster"
    )
    wait_for_load(args.wait_load, args.max_wait)
    wait_until_quiet(args.quiet_cores, args.max_wait)
    with ray_cluster(2, args.object_store_mb) as (cluster, _):
        engine = ["--engine", "ray", "--address", cluster.address, "--workers", "2"]
        tiny = score(
            [str(work / "tiny-inst"), "--responses", str(work / "tiny-resp"), "-o", f"{work}/tiny-out/", *engine], work / "log"
        )
        full = score([str(work / "inst"), "--responses", str(work / "resp"), "-o", f"{work}/out/", *engine], work / "log")
    lines = line_count(work / "out")
    print(f"load average after part 2: {loadavg()}")
    if lines != args.rows:
        raise SystemExit(f"--responses layout: {lines:,} output lines, expected {args.rows:,}")
    ok = full.rss_mib * 2**20 < args.bound_mb * 10**6
    print("\n| run | wall | rows/s | driver CPU | driver peak RSS | cluster CPU | cores busy | others |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, run, rows in (
        ("108 responses, 36 instances (first run on the cluster)", tiny, 108),
        (f"{args.rows:,} responses, {args.instances:,} instances", full, args.rows),
    ):
        print(
            f"| {label} | {run.wall:.2f} s | {rows / run.wall:,.0f} | {run.cpu:.2f} s | {run.rss_mib:.0f} MiB "
            f"| {run.cluster_cpu:.1f} s | {run.busy:.0%} | {run.others:.2f} |"
        )
    verdict = "PASS" if ok else "FAIL"
    peak = f"{full.rss_mib:.0f} MiB ({full.rss_mib * 2**20 / 1e6:.0f} MB)"
    print(f"\ndriver peak RSS {peak} at {args.rows:,} rows, bound {args.bound_mb} MB: {verdict}")
    shutil.rmtree(work)
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one round, no waiting for the load")
    parser.add_argument("--shards", type=int, default=4, help="part 1: input shards (default 4)")
    parser.add_argument("--lines", type=int, default=50_000, help="part 1: lines per shard (default 50,000)")
    parser.add_argument("--rounds", type=int, default=3, help="part 1: alternating rounds (default 3)")
    parser.add_argument("--instances", type=int, default=50_000, help="part 2: instances (default 50,000)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="part 2: responses (default 1,000,000)")
    parser.add_argument("--joined-shards", type=int, default=4, help="part 2: shards of instances and of responses (default 4)")
    parser.add_argument(
        "--bound-mb",
        type=int,
        default=500,
        help="part 2: the driver's peak RSS must stay below, in MB of 10^6 bytes (default 500)",
    )
    parser.add_argument("--only", choices=("scaling", "memory"), help="run one part only")
    parser.add_argument("--object-store-mb", type=int, default=2048, help="object store per node (default 2048)")
    parser.add_argument(
        "--wait-load", type=float, default=1.0, help="wait for the 1-minute load to fall below this (default 1.0)"
    )
    parser.add_argument(
        "--quiet-cores",
        type=float,
        default=0.25,
        help="before each configuration, wait until other processes use fewer cores (default 0.25)",
    )
    parser.add_argument(
        "--max-wait", type=float, default=1800, help="seconds to wait for either at most, each time (default 1800)"
    )
    parser.add_argument("--tmp", help="where the generated data goes (default: the system's temporary directory)")
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args(argv)
    if args.quick:
        args.lines, args.rounds, args.instances, args.rows, args.max_wait = 5_000, 1, 2_000, 40_000, 0

    print(f"machine: {machine()}")
    print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
    print(f"load average at start: {loadavg()}")
    start_revision = revision()
    print(f"code under test: last changed in {start_revision}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # kill PID: the clusters are shut down, the data removed
    root = Path(tempfile.mkdtemp(prefix="bench_ray.", dir=args.tmp))
    ok = True
    try:
        if args.only in (None, "scaling"):
            scaling(args, root / "scaling")
        if args.only in (None, "memory"):
            ok = driver_memory(args, root / "memory")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nload average at the end: {loadavg()}")
    if revision() != start_revision:
        print(f"WARNING: the code under test changed during the run (now {revision()}): the figures may mix two builds")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
