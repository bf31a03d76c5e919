"""``score_trace_response`` against a Perception-R1-style reward on ``bbox_set`` responses.

Run from the repository root::

    uv run python benchmarks/bench_perception.py                 # 2,000 responses, 9 alternating rounds
    .venv-compiled/bin/python benchmarks/bench_perception.py     # the same with another build (a compiled one)

    # instructions per response (load-independent): a pass minus the setup
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_perception.py --once setup
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_perception.py --once ours
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_perception.py --once theirs

The comparison a user makes: the 30-line reward a GRPO script for detection
has (Perception-R1 style: ``json.loads`` of the final object, a numpy IoU
matrix, scipy's Hungarian, the matched IoU summed over the larger count)
against this library's scorer on the very same responses
(``workload.make_item`` for ``bbox_set`` in ``answer_and_annotation`` mode:
about 1.5 KB of reasoning, sets of 0 to 20 boxes, jittered, shuffled, with
items dropped and added). The two rewards are not the same number: ours also
checks the format and the answer, refuses hostile payloads, and scores with
the contract's soft IoU; the figure is the price of those per call.

Rounds alternate the two (and the floor: ``rfind`` plus one ``json.loads``)
so that a change of machine load hits all alike; the medians, their ratio
and the load average before and after are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import loadavg, timed
from workload import Item, make_item

_DECODER = json.JSONDecoder()


def perception_r1_style(response: str, gt_boxes: list[list[float]]) -> float:
    """A Perception-R1-style detection reward: Hungarian-matched IoU over the larger of the two counts."""
    start = response.rfind('{"answer"')  # the final object
    if start < 0:
        return 0.0
    try:
        payload, _ = _DECODER.raw_decode(response, start)
    except ValueError:
        return 0.0
    boxes = payload.get("annotation") if isinstance(payload, dict) else None
    if not isinstance(boxes, list):
        return 0.0
    if not boxes or not gt_boxes:
        return float(not boxes and not gt_boxes)
    try:
        pred = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    except (TypeError, ValueError):
        return 0.0
    gt = np.asarray(gt_boxes, dtype=np.float64)
    iw = np.minimum(pred[:, None, 2], gt[None, :, 2]) - np.maximum(pred[:, None, 0], gt[None, :, 0])
    ih = np.minimum(pred[:, None, 3], gt[None, :, 3]) - np.maximum(pred[:, None, 1], gt[None, :, 1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    area_p = (pred[:, 2] - pred[:, 0]) * (pred[:, 3] - pred[:, 1])
    area_g = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])
    union = area_p[:, None] + area_g[None, :] - inter
    iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    rows, cols = linear_sum_assignment(-iou)
    return float(iou[rows, cols].sum() / max(len(pred), len(gt)))


def make_items(count: int, seed: int) -> list[Item]:
    rng = random.Random(seed)
    return [make_item(rng, "bbox_set", "answer_and_annotation") for _ in range(count)]


def runners(items: list[Item]) -> dict[str, Callable[[], Any]]:
    from trace_tasks import score_trace_response

    calls = [(item["response"], {k: v for k, v in item.items() if k != "response"}) for item in items]
    pairs = [(item["response"], item["annotation_gt"]["value"]) for item in items]

    def ours() -> list[float]:
        return [score_trace_response(response=text, **fields)["overall"] for text, fields in calls]

    def theirs() -> list[float]:
        return [perception_r1_style(text, gt) for text, gt in pairs]

    def floor() -> None:
        for text, _ in pairs:
            start = text.rfind('{"answer"')
            if start >= 0:
                with contextlib.suppress(ValueError):
                    _DECODER.raw_decode(text, start)

    return {"ours": ours, "theirs": theirs, "floor": floor}


def build_kind() -> str:
    """Which build of trace_tasks this interpreter runs: ``native`` or ``pure``."""
    import trace_tasks

    return str(getattr(trace_tasks, "__build__", "pure"))  # builds before the compiled one were all pure


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="responses (default 2000)")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds (default 9)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--once", choices=("setup", "ours", "theirs", "floor"), help="one pass of one side, for callgrind")
    parser.add_argument("--repeat", type=int, default=1, help="passes with --once (default 1)")
    args = parser.parse_args(argv)
    items = make_items(args.count, args.seed)
    run = runners(items)
    for fn in run.values():  # imports, the registry, scipy: out of every timing and instruction count
        fn()
    if args.once:
        for _ in range(args.repeat if args.once != "setup" else 0):
            run[args.once]()
        return
    print(f"trace_tasks build: {build_kind()}; {args.count} bbox_set responses; load average {loadavg()}")
    times: dict[str, list[float]] = {name: [] for name in run}
    order = list(run)
    for round_index in range(args.rounds):
        for name in order if round_index % 2 == 0 else reversed(order):
            times[name].append(timed(run[name]) / args.count * 1e6)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:7s} {median:8.2f} us per response (median of {args.rounds}; best {min(times[name]):.2f})")
    print(f"ours / theirs: {medians['ours'] / medians['theirs']:.2f}x; load average {loadavg()}")


if __name__ == "__main__":
    main()
