"""Speed of ``score_trace_response`` per workload shape, against the floor, before and after.

Run from the repository root::

    uv run python benchmarks/bench_shapes.py                          # this tree only
    uv run python benchmarks/bench_shapes.py --baseline OTHER_PYTHON  # before/after in one run

    # instructions per response of one shape (load-independent): the pass minus the setup
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_shapes.py --count 300 --once setup
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_shapes.py --count 300 --once bare

``OTHER_PYTHON`` is the interpreter of another build of trace_tasks (for example
a virtual environment with an older commit installed in editable mode, see
``benchmarks/README.md``). Both builds score the very same responses: the
workloads are made here once and handed to one long-lived process per build.

Workload shapes (seeded; every annotation type of the resolver table and both
output modes in each, the answers and annotations of ``workload.py``):

* ``bare``: short prose (200 to 1,500 characters), then the final object bare;
* ``fenced``: the final object in a fenced ``json`` block;
* ``tagged``: half in ``<answer>...</answer>`` tags, half truncated generations
  (the last three characters cut: recovery has to look further);
* ``grpo``: GRPO groups, 150 instances with 8 to 16 rollouts each, scored per
  rollout with ``score_trace_response``; ``grpo-compiled`` scores the same groups
  through ``InstanceCache().compile(instance).score_group(rollouts)`` (a fresh
  cache per round, so compiling every instance is in the timing);
* ``mix``: the project's benchmark batch (``workload.make_batch``).

For each shape: the floor (``rfind`` plus one ``json.loads`` per response and
one ``linear_sum_assignment`` per set larger than 1x1: what no scorer avoids),
then each build's median time per response over alternating rounds (builds,
shapes and the floor interleaved, so a change of machine load hits all alike),
its ratio to the floor's median, and the speed-up. The load average is printed before and after.
Before timing, both builds' result dicts are compared on every response of
every shape (a digest per shape) and the difference is reported.

Last, the cost of each stage measured *inside* real calls of this build: the
stage functions of ``trace_tasks.core.reward_scoring`` and of the one pipeline
(``trace_tasks.scoring._pipeline``) are wrapped with timers
that record exclusive time (a stage's own time, its sub-stages excluded), so
the stages plus "rest of the call" add up to the instrumented call. Timers add
their own overhead, printed beside the plain per-call time.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import loadavg, timed
from workload import ANNOTATION_TYPES, MODES, Item, make_batch, make_item

SHAPES = ("bare", "fenced", "tagged", "grpo", "grpo-compiled", "mix")
INSTANCE_FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")
Group = tuple[dict[str, Any], str, list[str]]  # (instance, mode, rollouts)


# ---------------------------------------------------------------- workloads


def _bare(rng: random.Random, payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":") if rng.random() < 0.5 else (", ", ": "))


def _fenced(rng: random.Random, payload: dict[str, Any]) -> str:
    return f"```json\n{_bare(rng, payload)}\n```"


def _tagged(rng: random.Random, payload: dict[str, Any]) -> str:
    body = _bare(rng, payload)
    return f"<answer>{body}</answer>" if rng.random() < 0.5 else body[: max(1, len(body) - 3)]


def _items(count: int, seed: int, final: Callable[[random.Random, dict[str, Any]], str], short: bool) -> list[Item]:
    rng = random.Random(seed)
    combos = [(t, m) for t in ANNOTATION_TYPES for m in MODES]
    return [
        make_item(rng, *combos[i % len(combos)], prose_chars=rng.randint(200, 1500) if short else 1500, final=final)
        for i in range(count)
    ]


def _groups(instances: int, seed: int) -> list[Group]:
    rng = random.Random(seed)
    combos = [(t, m) for t in ANNOTATION_TYPES for m in MODES]
    groups: list[Group] = []
    for i in range(instances):
        annotation_type, mode = combos[i % len(combos)]
        rollouts = [make_item(rng, annotation_type, mode) for _ in range(rng.randint(8, 16))]
        first = rollouts[0]
        instance = {k: first[k] for k in INSTANCE_FIELDS if k in first}
        # Every rollout answers the first item's instance: its own response, one ground truth.
        groups.append((instance, mode, [r["response"] for r in rollouts]))
    return groups


def make_workloads(count: int, seed: int) -> dict[str, Any]:
    groups = _groups(max(count // 12, 12), seed + 3)
    return {
        "bare": _items(count, seed, _bare, short=True),
        "fenced": _items(count, seed + 1, _fenced, short=False),
        "tagged": _items(count, seed + 2, _tagged, short=False),
        "grpo": groups,
        "grpo-compiled": groups,
        "mix": make_batch(count, seed),
    }


def responses_of(shape: str, workload: Any) -> int:
    return sum(len(g[2]) for g in workload) if shape.startswith("grpo") else len(workload)


def items_of(shape: str, workload: Any) -> list[Item]:
    """Every response of a shape as ``score_trace_response`` keyword arguments."""
    if not shape.startswith("grpo"):
        return list(workload)
    return [{"response": r, **inst, "trace_reward_mode": mode} for inst, mode, rs in workload for r in rs]


# ---------------------------------------------------------------- one build (runs in a child process)


def _runner(shape: str, workload: Any) -> Callable[[], list[dict[str, float]]]:
    from trace_tasks import score_trace_response

    if shape == "grpo-compiled":
        from trace_tasks import InstanceCache

        def compiled() -> list[dict[str, float]]:
            cache = InstanceCache()
            out: list[dict[str, float]] = []
            for instance, mode, responses in workload:
                out.extend(cache.compile(instance).score_group(responses, trace_reward_mode=mode))
            return out

        return compiled
    items = items_of(shape, workload)
    forget = _forget_targets()

    def lenient() -> list[dict[str, float]]:
        forget()  # every pass a first look at its instances, as grpo-compiled's fresh InstanceCache
        return [score_trace_response(**item) for item in items]

    return lenient


def _forget_targets() -> Callable[[], None]:
    """What drops the lenient scorer's remembered target parses (issue 28; nothing in older builds).

    Without it, the rounds' repeated passes over the same instances would find every target already parsed:
    a second epoch, not the first look the shapes stand for (``grpo`` still reuses a target within its group).
    """
    try:
        from trace_tasks.scoring import _pipeline
    except ImportError:
        return lambda: None
    memos = [getattr(_pipeline, name) for name in ("_parsed_targets", "_seen_values") if hasattr(_pipeline, name)]
    return lambda: [memo.clear() for memo in memos] and None


def _digest(results: list[dict[str, float]]) -> str:
    # repr keeps every bit of a float and the key order.
    return hashlib.sha256(repr([list(r.items()) for r in results]).encode()).hexdigest()[:16]


def once(shape: str, count: int, seed: int, repeat: int = 1) -> None:
    """Warm up on every shape, then score ``shape`` ``repeat`` more times (nothing more for ``setup``), GC paused."""
    workloads = make_workloads(count, seed)
    runners = {name: _runner(name, workloads[name]) for name in SHAPES}
    for run in runners.values():
        run()
    gc.collect()
    gc.disable()  # counts that do not depend on when collections happen
    if shape != "setup":
        for _ in range(repeat):
            runners[shape]()


def serve(path: str) -> None:
    """Child: load the workloads, then answer ``digest SHAPE`` / ``time SHAPE`` lines on stdin."""
    with open(path, "rb") as f:
        workloads = pickle.load(f)
    runners = {shape: _runner(shape, workloads[shape]) for shape in SHAPES}
    for run in runners.values():
        run()  # warm-up: imports, registry, scipy, caches
    print("ready", flush=True)
    for line in sys.stdin:
        command, shape = line.split()
        if command == "digest":
            answer = _digest(runners[shape]())
        else:
            answer = repr(timed(runners[shape]))
        print(answer, flush=True)


class Build:
    """A long-lived child process scoring with one interpreter's trace_tasks."""

    def __init__(self, name: str, python: str, workload_path: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [python, __file__, "--serve", workload_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        if self._read() != "ready":
            raise SystemExit(f"{name}: the child did not start")

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name}: the child exited (see its traceback above)")
        return line.strip()

    def ask(self, command: str, shape: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{command} {shape}\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


# ---------------------------------------------------------------- floor and stages (this build, in-process)


def floor_runner(shape: str, workload: Any) -> Callable[[], None]:
    """One pass of the floor over a shape's responses (its inputs prepared beforehand, untimed)."""
    from bench_scoring import Floor, Staged

    floor = Floor([Staged(item) for item in items_of(shape, workload)])

    def run() -> None:
        floor.run_extract()
        floor.run_assign()

    return run


#: Stage label -> ``(module, function)`` timed under it: the public face and the one pipeline it runs.
STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "options": (("trace_tasks.core.reward_scoring", "resolve_options"),),
    "target preparation": (("trace_tasks.core.reward_scoring", "prepare_target"),),
    "extraction": (("trace_tasks.scoring._pipeline", "extract"),),
    "answer": (("trace_tasks.scoring._pipeline", "matches_answer_target"),),
    "target and prediction parse": (("trace_tasks.scoring._pipeline", "parse_value"),),
    "image size and context": (
        ("trace_tasks.scoring._pipeline", "find_image_size"),
        ("trace_tasks.scoring._pipeline", "scoring_context"),
    ),
    "matching and scoring": (("trace_tasks.scoring._pipeline", "_score"),),
    "result dict": (("trace_tasks.scoring._pipeline", "compose_result"),),
    "rest of the call": (("trace_tasks.core.reward_scoring", "score_trace_response"),),
}


class StageClock:
    """Exclusive time per stage: a stage's own time, the stages it calls excluded."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self.stack: list[float] = []  # time spent in sub-stages of each open stage

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = time.perf_counter
        stack = self.stack
        seconds = self.seconds

        def timed(*args: Any, **kwargs: Any) -> Any:
            stack.append(0.0)
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = clock() - start
                inner = stack.pop()
                seconds[label] += elapsed - inner
                if stack:
                    stack[-1] += elapsed

        return timed


def stage_costs(shape: str, workload: Any) -> tuple[dict[str, float], float]:
    """(us per response per stage inside instrumented calls, plain us per call)."""
    import importlib

    import trace_tasks
    import trace_tasks.core.reward_scoring as rs

    items = items_of(shape, workload)
    plain = min(timed(lambda: [trace_tasks.score_trace_response(**i) for i in items]) for _ in range(3))
    clock = StageClock()
    saved: dict[tuple[Any, str], Any] = {}
    for label, places in STAGES.items():
        for module_name, name in places:
            module = importlib.import_module(module_name)
            if hasattr(module, name):
                saved[module, name] = getattr(module, name)
                setattr(module, name, clock.wrap(label, saved[module, name]))
    try:
        call = rs.score_trace_response
        best: dict[str, float] | None = None
        for _ in range(3):
            clock.seconds.update(dict.fromkeys(STAGES, 0.0))
            gc.collect()
            gc.disable()
            try:
                for item in items:
                    call(**item)
            finally:
                gc.enable()
            if best is None or sum(clock.seconds.values()) < sum(best.values()):
                best = dict(clock.seconds)
    finally:
        for (module, name), fn in saved.items():
            setattr(module, name, fn)
    assert best is not None
    n = len(items)
    return {label: s / n * 1e6 for label, s in best.items()}, plain / n * 1e6


# ---------------------------------------------------------------- report


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="PYTHON", help="interpreter of the build to compare against")
    parser.add_argument("--count", type=int, default=2400, help="responses per shape (GRPO: about as many)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds; medians are reported")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated subset of " + ",".join(SHAPES))
    parser.add_argument("--no-stages", action="store_true", help="skip the per-stage breakdown")
    parser.add_argument(
        "--once",
        metavar="SHAPE",
        help="build the workloads, score every shape once (warm-up), then score SHAPE once more, untimed, and exit: "
        "for instruction counters such as callgrind ('setup' scores nothing more, to subtract)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="with --once: score SHAPE K times after the warm-up; (K=3 minus K=1) / 2 is one pass without the start-up noise",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    return parser


def _timed_rounds(
    builds: list[Build], shapes: list[str], workloads: dict[str, Any], rounds: int
) -> dict[tuple[str, str], list[float]]:
    """Seconds per round, by (build name or "floor", shape): the builds alternate order every round."""
    if len(builds) == 2:
        for shape in shapes:
            a, b = (build.ask("digest", shape) for build in builds)
            print(f"results {shape:<14} {'identical' if a == b else 'DIFFER'} ({a} / {b})")
    print(f"load average before: {loadavg()}")
    floors = {shape: floor_runner(shape, workloads[shape]) for shape in shapes}
    times: dict[tuple[str, str], list[float]] = {(b.name, s): [] for b in builds for s in shapes}
    for shape in shapes:
        times["floor", shape] = []
    for round_ in range(rounds):
        order = builds if round_ % 2 == 0 else builds[::-1]
        for shape in shapes:
            times["floor", shape].append(timed(floors[shape]))  # in the rounds too: the same load
            for build in order:
                times[build.name, shape].append(float(build.ask("time", shape)))
    print(f"load average after:  {loadavg()}")
    return times


def _print_times(
    builds: list[Build], shapes: list[str], workloads: dict[str, Any], times: dict[tuple[str, str], list[float]], rounds: int
) -> None:
    print(f"\nus per response, median of {rounds} alternating rounds; x floor = median / floor")
    header = f"{'shape':<14} {'floor':>7}"
    for build in builds:
        header += f" {build.name:>11} {'x floor':>8}"
    if len(builds) == 2:
        header += f" {'speed-up':>9}"
    print(header)
    for shape in shapes:
        n = responses_of(shape, workloads[shape])
        floor = statistics.median(times["floor", shape]) / n * 1e6
        line = f"{shape:<14} {floor:7.2f}"
        medians = []
        for build in builds:
            med = statistics.median(times[build.name, shape]) / n * 1e6
            medians.append(med)
            line += f" {med:11.2f} {med / floor:7.2f}x"
        if len(builds) == 2:
            line += f" {medians[0] / medians[1]:8.2f}x"
        print(line)


def _print_stages(shapes: list[str], workloads: dict[str, Any]) -> None:
    print("\nstages inside real calls of this tree (us per response, exclusive time; they add up to the instrumented call)")
    for shape in shapes:
        if shape == "grpo-compiled":
            continue
        costs, plain = stage_costs(shape, workloads[shape])
        total = sum(costs.values())
        parts = ", ".join(f"{label} {us:.1f}" for label, us in costs.items() if us > 0.05)
        print(f"  {shape:<8} instrumented {total:.1f} (plain {plain:.1f}): {parts}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return
    if args.once:
        once(args.once, args.count, args.seed, args.repeat)
        return

    from bench_scoring import machine

    shapes = [s for s in args.shapes.split(",") if s]
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        parser.error(f"unknown shapes {unknown}; choose from {', '.join(SHAPES)}")
    workloads = make_workloads(args.count, args.seed)
    print(f"machine: {machine()}")
    for shape in shapes:
        texts = [i["response"] for i in items_of(shape, workloads[shape])]
        print(f"  {shape:<14} {len(texts):>6,} responses, mean {sum(map(len, texts)) / len(texts):,.0f} chars")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "workloads.pickle")
        with open(path, "wb") as f:
            pickle.dump(workloads, f)
        builds = [Build("this tree", sys.executable, path)]
        if args.baseline:
            builds.insert(0, Build("baseline", args.baseline, path))
        try:
            times = _timed_rounds(builds, shapes, workloads, args.rounds)
        finally:
            for build in builds:
                build.close()

    _print_times(builds, shapes, workloads, times, args.rounds)
    if not args.no_stages:
        _print_stages(shapes, workloads)


if __name__ == "__main__":
    main()
