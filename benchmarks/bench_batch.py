"""``score_trace_batch``: one worker against N workers with a kept pool, on the mixed workload.

Run from the repository root::

    uv run python benchmarks/bench_batch.py                 # 20,000 responses, 9 alternating rounds
    uv run python benchmarks/bench_batch.py --rounds 5      # quicker

    # instructions per distinct item (load-independent): --repeat 3 minus --repeat 1, / (2 x --count)
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_batch.py --count 1000 --once batch --repeat 3
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_batch.py --count 1000 --once plain --repeat 3

The batch is ``benchmarks/workload.py``'s mix (every annotation type, both
modes, ~1.6 KB of prose per response). First the pool is started and warmed
(the first call's wall time is reported separately: it pays for spawning the
children) and the results of every worker count are checked to be equal, in
order and value, to one worker's. Then the rounds alternate ``workers=1``,
``workers=N``, ``workers=N``, ``workers=1``, ... so a change in machine load
hits both alike; the median and the best of each are reported with the load
average before and after. The speed-up is the ratio of the medians (and, for a
check, the median of the per-round ratios). Timing on a shared machine is
noisy: compare figures taken in one run only, and state the load with them.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scoring import machine
from workload import make_batch

from trace_tasks import score_trace_batch
from trace_tasks.data import _batch as batch
from trace_tasks.data import shutdown_batch_pools

#: Wall time, this process's CPU seconds, the pool children's CPU seconds (Linux; 0 elsewhere).
Run = tuple[float, float, float]


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def children_cpu() -> float:
    """CPU seconds used so far by the kept pools' children (from /proc; the pool's process table is private)."""
    total = 0.0
    for pool in list(batch._pools.values()):
        for pid in list(getattr(pool, "_processes", None) or {}):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def timed(fn: Callable[[], Any]) -> Run:
    """One call: wall seconds, the caller's CPU seconds, the children's; the GC stays on (callers run with it)."""
    gc.collect()
    children = children_cpu()
    cpu = time.process_time()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    return wall, time.process_time() - cpu, children_cpu() - children


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20_000, help="responses in the batch (default 20,000)")
    parser.add_argument("--workers", type=int, default=2, help="worker count compared with 1 (default 2)")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds per variant (default 9)")
    parser.add_argument("--seed", type=int, default=99)
    parser.add_argument(
        "--once",
        choices=("plain", "batch"),
        help="for callgrind: after a warm-up on other items, score the batch --repeat times in this process, as "
        "plain score_trace_response calls or as one in-process batch share (instance cache cleared each time)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="passes with --once (default 1)")
    args = parser.parse_args(argv)
    if args.once:
        once(args.once, make_batch(args.count, seed=args.seed), args.repeat)
        return

    print(f"machine: {machine()}")
    items = make_batch(args.count, seed=args.seed)
    print(f"batch: {len(items):,} responses, mean length {sum(len(i['response']) for i in items) / len(items):,.0f} chars")
    print(f"load average before: {load_average()}")

    serial_results = score_trace_batch(items, workers=1)  # warm-up: imports, registry, caches
    shutdown_batch_pools()
    cold = timed(lambda: score_trace_batch(items, workers=args.workers))[0]
    pooled_results = score_trace_batch(items, workers=args.workers)
    if pooled_results != serial_results:
        raise SystemExit(f"workers={args.workers} results differ from workers=1: not comparable")

    times: dict[int, list[Run]] = {1: [], args.workers: []}
    order = (1, args.workers, args.workers, 1)
    for round_ in range(args.rounds):
        for workers in order if round_ % 2 == 0 else order[::-1]:
            times[workers].append(timed(lambda w=workers: score_trace_batch(items, workers=w)))  # type: ignore[misc]
    shutdown_batch_pools()
    print(f"load average after:  {load_average()}")

    one, many = [run[0] for run in times[1]], [run[0] for run in times[args.workers]]
    med_one, med_many = statistics.median(one), statistics.median(many)
    ratios = [a / b for a, b in zip(one, many, strict=True)]
    print(f"\n== score_trace_batch, {args.count:,} mixed responses, {len(one)} runs each (alternating)")
    print("                              median     best   responses/s (median)")
    print(f"  workers=1                  {med_one:6.3f} s  {min(one):6.3f} s  {args.count / med_one:10,.0f}")
    print(f"  workers={args.workers}, pool kept       {med_many:6.3f} s  {min(many):6.3f} s  {args.count / med_many:10,.0f}")
    print(f"  workers={args.workers}, first call      {cold:6.3f} s  (spawns and warms the children)")
    print(f"  speed-up (ratio of medians) {med_one / med_many:.2f}x; median of per-round ratios {statistics.median(ratios):.2f}x")
    cpu_report(times[1], times[args.workers], args.workers)


def once(kind: str, items: list[dict[str, Any]], repeat: int) -> None:
    """Score ``items`` ``repeat`` times in-process, every instance distinct: what a distinct item costs.

    Instructions per item: run under callgrind with ``--repeat 3`` and ``--repeat 1``, subtract, divide by
    twice ``--count``. ``batch`` clears the instance cache first, so each item is validated and compiled.
    """
    from trace_tasks import score_trace_response

    calls = [(item["response"], {k: v for k, v in item.items() if k != "response"}) for item in items]
    warm = make_batch(200, seed=7)  # imports, the registry, scipy, the memos' first entries: not counted
    batch._score_chunk(warm, {})
    for item in warm:
        score_trace_response(**item)
    gc.disable()
    for _ in range(repeat):
        if kind == "plain":
            for text, fields in calls:
                score_trace_response(response=text, **fields)
        else:
            batch.INSTANCE_CACHE.clear()
            batch._score_chunk(items, {})


def cpu_report(one: list[Run], many: list[Run], workers: int) -> None:
    """Where the CPU went: a load-independent view of how evenly the work is split.

    Under load the wall-time ratio says little (with the kernel's autogroup
    scheduling, all processes of one session share one session's slice of the
    CPUs, so a second worker gains nothing while other sessions keep both cores
    busy). The CPU seconds of the caller and of the children still show the
    split: with a core each, the call would take about the larger of the two.
    """
    serial = statistics.median(run[1] for run in one)
    caller = statistics.median(run[1] for run in many)
    children = statistics.median(run[2] for run in many)
    busiest = max(caller, children / max(workers - 1, 1))
    print(
        f"  CPU seconds (median): workers=1 {serial:.3f}; workers={workers}: caller {caller:.3f}, "
        f"children {children:.3f} in all; one core each -> {serial / busiest:.2f}x"
    )


if __name__ == "__main__":
    main()
