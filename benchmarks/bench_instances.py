"""GRPO groups: the lenient scorer per rollout against compiled instances scoring a group.

Run from the repository root::

    uv run python benchmarks/bench_instances.py             # 300 instances x 8 rollouts, 11 alternating rounds
    uv run python benchmarks/bench_instances.py --repeats 3 # quicker

The workload is ``benchmarks/workload.py``'s: 300 instances cycling through every
annotation type and both output modes (answers of every built-in type, sets of
0 to 20 items, image sizes in ``image_size``, ``metadata`` or absent), each with
8 rollouts: ~1.5 KB of reasoning prose and a final object whose annotation is a
fresh jittered, shuffled, thinned prediction of the target (answer right 70% of
the time), as a GRPO group would hold.

Variants, each scoring all 2,400 rollouts:

* ``lenient``: ``score_trace_response(response=r, **instance, ...)`` per rollout
  (parses the ground truth, checks the contract and finds the image size 2,400 times);
* ``group``: ``InstanceCache().compile(instance)`` once per instance (a fresh
  cache every round, so every instance is validated and compiled in the timing)
  and ``CompiledInstance.score_group(rollouts)``;
* ``per-rollout``: one fresh cache per round, ``cache.compile(instance)`` and
  ``.score(r)`` for every rollout (what an adapter scoring one sample at a time
  does: the first rollout compiles, the other 7 hit the cache);
* ``warm``: ``score_group`` with every instance already in the cache (a dataset
  seen again next epoch).

The rounds alternate between variants (lenient, group, per-rollout, warm,
lenient, ...) so a change in machine load hits all of them alike; the median
and the best round are reported, with the load average before and after (on a
shared machine the best round is the least disturbed one). Every variant's
results are first checked to be equal to the lenient scorer's. For figures
that do not depend on the load, count instructions: ``--only VARIANT`` runs one
variant once after the same set-up (``--only setup`` and ``--only warm-setup``
give what to subtract), e.g. under ``PYTHONHASHSEED=0 valgrind --tool=callgrind``.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scoring import machine
from timing import loadavg, timed
from workload import ANNOTATION_TYPES, MAKERS, MODES, _family, _final, _jitter, _predicted_set, make_item, reasoning_prose

from trace_tasks import InstanceCache, score_trace_response

INSTANCE_FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")

Group = tuple[dict[str, Any], str, list[str]]  # (instance, mode, rollouts)


def _prediction(rng: random.Random, annotation_type: str, target: Any) -> Any:
    make = MAKERS[_family(annotation_type)]
    shape = annotation_type[len(_family(annotation_type)) :].lstrip("_") or "scalar"
    if shape == "scalar":
        return _jitter(rng, target, rng.choice((2.0, 8.0, 30.0)))
    if shape in ("set", "sequence"):
        return _predicted_set(rng, target, make, shuffle=shape == "set")
    if shape == "map":
        return {k: _jitter(rng, v, 8.0) for k, v in target.items() if rng.random() > 0.1}
    return {k: _predicted_set(rng, v, make, shuffle=True) for k, v in target.items() if rng.random() > 0.1}


def _rollout(rng: random.Random, instance: dict[str, Any], mode: str) -> str:
    answer = instance["answer_gt"]["value"] if rng.random() < 0.7 else "not it"
    payload: dict[str, Any] = {"answer": answer}
    if mode != "answer":
        payload["annotation"] = _prediction(rng, instance["annotation_gt"]["type"], instance["annotation_gt"]["value"])
    think = reasoning_prose(rng, 1500)
    return f"<think>{think}</think>\n{_final(rng, payload)}\n" if rng.random() < 0.5 else f"{think}\n\n{_final(rng, payload)}"


def make_groups(instances: int, rollouts: int, seed: int = 20260501) -> list[Group]:
    """``instances`` GRPO groups of ``rollouts`` responses, cycling through every annotation type and mode."""
    rng = random.Random(seed)
    combos = [(t, m) for t in ANNOTATION_TYPES for m in MODES]
    groups = []
    for i in range(instances):
        annotation_type, mode = combos[i % len(combos)]
        item = make_item(rng, annotation_type, mode)
        instance = {k: item[k] for k in INSTANCE_FIELDS if k in item}
        groups.append((instance, mode, [_rollout(rng, instance, mode) for _ in range(rollouts)]))
    return groups


def run_lenient(groups: Sequence[Group]) -> list[dict[str, float]]:
    out = []
    for instance, mode, responses in groups:
        for response in responses:
            out.append(score_trace_response(response=response, **instance, trace_reward_mode=mode))
    return out


def run_group(groups: Sequence[Group], cache: InstanceCache | None = None) -> list[dict[str, float]]:
    cache = cache if cache is not None else InstanceCache()
    out = []
    for instance, mode, responses in groups:
        out.extend(cache.compile(instance).score_group(responses, trace_reward_mode=mode))
    return out


def run_per_rollout(groups: Sequence[Group]) -> list[dict[str, float]]:
    cache = InstanceCache()
    out = []
    for instance, mode, responses in groups:
        for response in responses:
            out.append(cache.compile(instance).score(response, trace_reward_mode=mode))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=11, help="alternating rounds; median and best are reported")
    parser.add_argument("--seed", type=int, default=20260501)
    parser.add_argument(
        "--only",
        choices=("setup", "lenient", "group", "per-rollout", "warm-setup", "warm"),
        help="build the workload, warm up, then run one variant once, untimed (for instruction counters such as "
        "callgrind; 'setup' runs none and 'warm-setup' only fills the warm cache, to subtract)",
    )
    args = parser.parse_args(argv)

    groups = make_groups(args.instances, args.rollouts, args.seed)
    warm_cache = InstanceCache()
    variants: dict[str, Callable[[], list[dict[str, float]]]] = {
        "lenient": lambda: run_lenient(groups),
        "group": lambda: run_group(groups),
        "per-rollout": lambda: run_per_rollout(groups),
        "warm": lambda: run_group(groups, warm_cache),
    }
    if args.only:
        run_group(groups[:24], InstanceCache())  # imports, registry, scipy: outside the counted difference
        run_lenient(groups[:24])
        if args.only.startswith("warm"):
            run_group(groups, warm_cache)
        gc.collect()
        gc.disable()  # as in the timed rounds: counts that do not depend on when collections happen
        if args.only in variants:
            variants[args.only]()
        return

    print(f"machine: {machine()}")
    n = sum(len(responses) for _, _, responses in groups)
    print(f"workload: {len(groups)} instances x {args.rollouts} rollouts = {n:,} responses, "
          f"mean length {sum(len(r) for _, _, rs in groups for r in rs) / n:,.0f} chars")  # fmt: skip
    reference = variants["lenient"]()
    for name, fn in variants.items():  # also warms up: registry, scipy, caches, the warm cache
        assert fn() == reference, f"{name} differs from the lenient scorer"
    print("every variant equals score_trace_response on every rollout")

    print(f"load average before: {loadavg()}")
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, fn in variants.items():
            times[name].append(timed(fn))
    print(f"load average after:  {loadavg()}")

    base = statistics.median(times["lenient"])
    base_best = min(times["lenient"])
    print(f"\n{'variant':<12} {'median s':>9} {'us/resp':>8} {'speed-up':>9} {'best s':>8} {'us/resp':>8} {'speed-up':>9}")
    for name, values in times.items():
        med, best = statistics.median(values), min(values)
        print(
            f"{name:<12} {med:9.3f} {med / n * 1e6:8.1f} {base / med:8.2f}x {best:8.3f} {best / n * 1e6:8.1f} {base_best / best:8.2f}x"
        )
    print("rounds (s): " + "; ".join(f"{name} " + " ".join(f"{v:.3f}" for v in values) for name, values in times.items()))


if __name__ == "__main__":
    main()
