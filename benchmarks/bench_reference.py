"""``score_trace_response`` against the scorer existing pipelines use, on the RL mix: results, time, instructions.

That scorer is ``trace_tasks.core.reward_scoring`` of the public repository
https://github.com/maveryn/trace (the *recorded scorer* of docs/contracts.md:
its calls are the records ``tests/conformance`` replays). Nothing of it is
installed or kept here; point ``--reference-src`` at the ``src/`` directory of
a clone::

    git clone https://github.com/maveryn/trace /tmp/maveryn-trace

Run from the repository root::

    # the results compared row by row, then wall-clock rounds (reference, ours, floor alternating)
    uv run python benchmarks/bench_reference.py --reference-src /tmp/maveryn-trace/src

    # instructions per response under callgrind (load-independent): one valgrind run, set-up and warm-up
    # uninstrumented, then each side's pass counted between callgrind's client requests (timing.CallgrindRequests)
    uv run python benchmarks/bench_reference.py --reference-src /tmp/maveryn-trace/src --callgrind

    # another build of trace_tasks (a compiled or native one): its own interpreter, the same script
    OTHER_VENV/bin/python benchmarks/bench_reference.py --reference-src /tmp/maveryn-trace/src --callgrind

    # one side by hand, as the other benchmarks count: (--repeat 3 minus --repeat 1) / 2 / --count
    OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/bench_reference.py --reference-src /tmp/maveryn-trace/src --once reference --repeat 3

**The shim.** The reference's package is also called ``trace_tasks``, and its
``__init__`` imports the whole dataset builder (Pillow, cairosvg, networkx and
more). Only its two scoring modules are loaded, under another name: empty
packages ``_reference_trace_tasks`` and ``_reference_trace_tasks.core`` whose
``__path__`` is the clone's ``src/trace_tasks`` and ``src/trace_tasks/core``,
then ``_reference_trace_tasks.core.reward_scoring`` (its one relative import,
``.reward_contracts``, resolves inside them). They need numpy and scipy,
which trace_tasks needs too, so any interpreter that runs trace_tasks runs both
in one process, each module its own.

**The workload** is ``bench_shapes.py``'s ``mix`` (``workload.make_batch`` with
the same count and seed, so the very responses ``bench_shapes.py --once mix``
scores), called with the default options (``trace_reward_mode`` and the image
size are the instances' own; the reference accepts every keyword of the mix).
Ours is scored as ``bench_shapes.py`` scores it (each pass forgets the
remembered target parses: a first look at every instance); the floor is
``bench_shapes.py``'s: ``rfind`` of the final object, one ``json.loads`` and one
``linear_sum_assignment`` per set larger than 1x1 (matrices built beforehand).

**The comparison**, printed first: per row, ours against the reference. A row is
*identical* (``==`` on the items, key order and every bit, the reference's
retired key ``trace_answer_scoring_legacy_strict`` left out), *within 1e-6*
(the tolerance ``tests/conformance`` replays the records with, same keys in the
same order), or differs where docs/contracts.md improves on the recorded
scorer: *§3.2* when the reference, given the final block alone (the reasoning
cut off at the workload's ``</think>`` or blank line), agrees with ours within
1e-6 (text before the final block never hides it; with several fenced blocks the
last one is final); *§5.5* when a point or segment set (or set-map) differs only
in its assignment's keys (maximum total similarity in float64, where the recorded
scorer took minimum distance in float32). Anything else is printed row by row.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import math
import statistics
import sys
import types
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_shapes import _runner as score_pass  # our side, scored exactly as bench_shapes scores a shape
from bench_shapes import floor_runner
from timing import CallgrindRequests, callgrind_counts, loadavg, timed
from workload import Item, make_batch

ALIAS = "_reference_trace_tasks"
SIDES = ("reference", "ours", "floor")
#: bench_shapes.py's defaults: the same responses as its ``--once mix``.
DEFAULT_COUNT = 2400
DEFAULT_SEED = 20261130
#: The reference's result key for an option this library does not offer (docs/contracts.md, "Compatibility").
RETIRED_KEYS = frozenset({"trace_answer_scoring_legacy_strict"})
#: tests/conformance/test_conformance.py's per-value tolerance.
TOLERANCE = 1e-6
SET_TYPES = frozenset({"point_set", "segment_set", "point_set_map"})
#: What a different assignment of a point or segment set can change (docs/contracts.md §5.5).
ASSIGNMENT_KEYS = frozenset(
    {
        "overall",
        "annotation_reward",
        "annotation_assigned_similarity_mean",
        "task_reward_raw",
        "task_reward_effective",
        "task_reward_gated",
        "zero_reward",
    }
)

Result = dict[str, float]


# ---------------------------------------------------------------- the shim


def load_reference(src: Path) -> types.ModuleType:
    """The reference's ``reward_scoring`` module from a clone's ``src/``, imported as ``_reference_trace_tasks.core``."""
    package = src / "trace_tasks"
    if not (package / "core" / "reward_scoring.py").is_file():
        raise SystemExit(
            f"--reference-src {src}: no trace_tasks/core/reward_scoring.py there; pass the src/ directory of "
            "a clone of https://github.com/maveryn/trace"
        )
    for name, path in ((ALIAS, package), (f"{ALIAS}.core", package / "core")):
        if name not in sys.modules:
            shell = types.ModuleType(name, f"the reference's {path.name} package, its __init__ not run")
            shell.__path__ = [str(path)]
            sys.modules[name] = shell
    module = importlib.import_module(f"{ALIAS}.core.reward_scoring")
    ours = sys.modules.get("trace_tasks")
    if ours is not None and str(src.resolve()) in str(getattr(ours, "__file__", "")):
        raise SystemExit(f"the trace_tasks imported is the reference's ({ours.__file__}): run without it on the path")
    return module


def check_keywords(reference: types.ModuleType, items: Sequence[Item]) -> None:
    """Every keyword the workload passes is one the reference's ``score_trace_response`` takes."""
    accepted = set(inspect.signature(reference.score_trace_response).parameters)
    passed = set().union(*(item.keys() for item in items))
    if not passed <= accepted:
        raise SystemExit(f"the reference does not take {sorted(passed - accepted)}")


# ---------------------------------------------------------------- the sides


def make_items(count: int, seed: int) -> list[Item]:
    """``bench_shapes.make_workloads(count, seed)["mix"]``, without building its other shapes."""
    return make_batch(count, seed)


def runners(items: list[Item], reference: types.ModuleType | None) -> dict[str, Callable[[], Any]]:
    """One pass of each side over the items (the reference only when it is loaded)."""
    out: dict[str, Callable[[], Any]] = {}
    if reference is not None:
        score = reference.score_trace_response

        def reference_pass() -> list[Result]:
            return [score(**item) for item in items]

        out["reference"] = reference_pass
    out["ours"] = score_pass("mix", items)
    out["floor"] = floor_runner("mix", items)
    return out


# ---------------------------------------------------------------- the comparison


def final_block(response: str) -> str:
    """The response without its reasoning: what follows ``</think>\\n`` or the last blank line (workload.make_item)."""
    _, tag, tail = response.partition("</think>\n")
    return tail if tag else response.rsplit("\n\n", 1)[-1]


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= TOLERANCE


def differing(ours: Result, theirs: Result) -> dict[str, tuple[float | None, float | None]]:
    """Keys whose values differ by more than the tolerance (or are present on one side only)."""
    keys = [*ours, *(k for k in theirs if k not in ours)]
    out: dict[str, tuple[float | None, float | None]] = {}
    for key in keys:
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None or not _close(a, b):
            out[key] = (a, b)
    return out


def classify(item: Item, ours: Result, theirs: Result, reference: types.ModuleType) -> str:
    """Which of the comparison's classes (module docstring) a row falls in."""
    theirs = {k: v for k, v in theirs.items() if k not in RETIRED_KEYS}
    if list(ours.items()) == list(theirs.items()):
        return "identical"
    diff = differing(ours, theirs)
    if not diff and list(ours) == list(theirs):
        return "within 1e-6"
    sets = item["annotation_gt"]["type"] in SET_TYPES
    if sets and diff.keys() <= ASSIGNMENT_KEYS:
        return "§5.5"
    alone = reference.score_trace_response(**{**item, "response": final_block(item["response"])})
    diff = differing(ours, {k: v for k, v in alone.items() if k not in RETIRED_KEYS})
    if not diff:
        return "§3.2"
    if sets and diff.keys() <= ASSIGNMENT_KEYS:
        return "§3.2 and §5.5"
    return "unexplained"


def compare(items: list[Item], reference: types.ModuleType) -> Counter[str]:
    """Score every row with both, print the classes and every unexplained row; return the class counts."""
    from trace_tasks import score_trace_response

    classes: Counter[str] = Counter()
    for index, item in enumerate(items):
        ours, theirs = score_trace_response(**item), reference.score_trace_response(**item)
        label = classify(item, ours, theirs, reference)
        classes[label] += 1
        if label == "unexplained":
            kept = {k: v for k, v in theirs.items() if k not in RETIRED_KEYS}
            print(
                f"  row {index} ({item['annotation_gt']['type']}, {item['trace_reward_mode']}) differs: {differing(ours, kept)}"
            )
    print(f"results against the reference, {len(items)} rows: " + ", ".join(f"{k} {v}" for k, v in classes.most_common()))
    return classes


# ---------------------------------------------------------------- measurements


def once(side: str, items: list[Item], reference: types.ModuleType | None, repeat: int) -> None:
    """One warm-up pass of ``side``, then ``repeat`` more with the GC paused (nothing more for ``setup``)."""
    if side == "setup":
        return
    run = runners(items, reference)[side]
    run()  # imports, the registry, scipy, first-call caches: out of the difference
    gc.collect()
    gc.disable()
    for _ in range(repeat):
        run()


def callgrind(args: argparse.Namespace, sides: Sequence[str]) -> dict[str, float]:
    """Instructions per response of each side: this script again under callgrind, counting its passes itself."""
    command = [sys.executable, __file__, "--count", str(args.count), "--seed", str(args.seed), "--repeat", str(args.repeat)]
    if args.reference_src:
        command += ["--reference-src", str(args.reference_src)]
    counts = callgrind_counts(command)
    missing = [side for side in sides if side not in counts]
    if missing:
        raise SystemExit(f"callgrind dumped no count for {missing}")
    return {side: counts[side] / (args.repeat * args.count) for side in sides}


def count_passes(out_file: str, items: list[Item], reference: types.ModuleType | None, repeat: int) -> None:
    """Under :func:`callgrind`: every side warmed up uninstrumented, then ``repeat`` passes of each counted."""
    requests = CallgrindRequests(out_file)
    run = runners(items, reference)
    for fn in run.values():
        fn()
    for side, fn in run.items():
        requests.count(side, lambda: [fn() for _ in range(repeat)])


def wall_clock(run: dict[str, Callable[[], Any]], count: int, rounds: int) -> dict[str, float]:
    """Median us per response of each side over alternating rounds."""
    for fn in run.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in run}
    order = list(run)
    for round_index in range(rounds):
        for name in order if round_index % 2 == 0 else reversed(order):
            times[name].append(timed(run[name]) / count * 1e6)
    return {name: statistics.median(values) for name, values in times.items()}


def print_ratios(figures: dict[str, float], unit: str) -> None:
    for name, value in figures.items():
        print(f"  {name:<9} {value:10.2f} {unit}")
    if "reference" in figures:
        print(f"  reference / ours: {figures['reference'] / figures['ours']:.2f}x (issue 41 target for the native build: >= 10x)")
    print(f"  ours / floor:     {figures['ours'] / figures['floor']:.2f}x (target: <= 3x)")
    if "reference" in figures:
        print(f"  reference / floor: {figures['reference'] / figures['floor']:.2f}x")


def build_kind() -> str:
    import trace_tasks

    return str(getattr(trace_tasks, "__build__", "pure"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--reference-src",
        type=Path,
        metavar="PATH",
        help="the src/ directory of a clone of https://github.com/maveryn/trace (without it: ours and the floor only)",
    )
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"responses (default {DEFAULT_COUNT}, as bench_shapes)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}, as bench_shapes")
    parser.add_argument("--rounds", type=int, default=7, help="alternating wall-clock rounds; medians (default 7)")
    parser.add_argument("--callgrind", action="store_true", help="instructions per response under valgrind instead of time")
    parser.add_argument("--no-compare", action="store_true", help="skip the row-by-row comparison")
    parser.add_argument("--once", choices=("setup", *SIDES), help="build, warm up, score one side --repeat times, exit")
    parser.add_argument("--repeat", type=int, default=1, help="passes with --once or counted by --callgrind (default 1)")
    parser.add_argument("--callgrind-out", help=argparse.SUPPRESS)  # the child --callgrind runs under valgrind
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    reference = load_reference(args.reference_src) if args.reference_src else None
    items = make_items(args.count, args.seed)
    if args.callgrind_out:
        count_passes(args.callgrind_out, items, reference, args.repeat)
        return
    if args.once:
        if args.once == "reference" and reference is None:
            raise SystemExit("--once reference needs --reference-src")
        once(args.once, items, reference, args.repeat)
        return
    print(f"trace_tasks build: {build_kind()} ({sys.executable}); {args.count} mix responses, seed {args.seed}")
    if reference is not None:
        check_keywords(reference, items)
        if not args.no_compare:
            compare(items, reference)
    sides = [s for s in SIDES if reference is not None or s != "reference"]
    if args.callgrind:
        print(f"instructions per response (callgrind, {args.repeat} pass(es) counted in one process; load average {loadavg()})")
        counts = callgrind(args, sides)
        print_ratios({side: count / 1000 for side, count in counts.items()}, "k instructions")
        return
    print(f"wall clock, median of {args.rounds} alternating rounds; load average before {loadavg()}")
    medians = wall_clock(runners(items, reference), args.count, args.rounds)
    print_ratios(medians, "us per response")
    print(f"load average after {loadavg()}")


if __name__ == "__main__":
    main()
