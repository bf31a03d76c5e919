"""``score_trace_batch``: one worker against N workers with a kept pool, on the mixed workload.

Run from the repository root::

    uv run python benchmarks/bench_batch.py                 # 20,000 responses, 9 alternating rounds
    uv run python benchmarks/bench_batch.py --rounds 5      # quicker

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
from trace_tasks.batch import shutdown_batch_pools


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def timed(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call; the GC stays on (callers run with it), collected before."""
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20_000, help="responses in the batch (default 20,000)")
    parser.add_argument("--workers", type=int, default=2, help="worker count compared with 1 (default 2)")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds per variant (default 9)")
    parser.add_argument("--seed", type=int, default=99)
    args = parser.parse_args(argv)

    print(f"machine: {machine()}")
    items = make_batch(args.count, seed=args.seed)
    print(f"batch: {len(items):,} responses, mean length {sum(len(i['response']) for i in items) / len(items):,.0f} chars")
    print(f"load average before: {load_average()}")

    serial_results = score_trace_batch(items, workers=1)  # warm-up: imports, registry, caches
    shutdown_batch_pools()
    cold = timed(lambda: score_trace_batch(items, workers=args.workers))
    pooled_results = score_trace_batch(items, workers=args.workers)
    if pooled_results != serial_results:
        raise SystemExit(f"workers={args.workers} results differ from workers=1: not comparable")

    times: dict[int, list[float]] = {1: [], args.workers: []}
    order = (1, args.workers, args.workers, 1)
    for round_ in range(args.rounds):
        for workers in order if round_ % 2 == 0 else order[::-1]:
            times[workers].append(timed(lambda w=workers: score_trace_batch(items, workers=w)))  # type: ignore[misc]
    shutdown_batch_pools()
    print(f"load average after:  {load_average()}")

    one, many = times[1], times[args.workers]
    med_one, med_many = statistics.median(one), statistics.median(many)
    ratios = [a / b for a, b in zip(one, many, strict=True)]
    print(f"\n== score_trace_batch, {args.count:,} mixed responses, {len(one)} runs each (alternating)")
    print("                              median     best   responses/s (median)")
    print(f"  workers=1                  {med_one:6.3f} s  {min(one):6.3f} s  {args.count / med_one:10,.0f}")
    print(f"  workers={args.workers}, pool kept       {med_many:6.3f} s  {min(many):6.3f} s  {args.count / med_many:10,.0f}")
    print(f"  workers={args.workers}, first call      {cold:6.3f} s  (spawns and warms the children)")
    print(f"  speed-up (ratio of medians) {med_one / med_many:.2f}x; median of per-round ratios {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
