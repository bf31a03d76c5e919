"""``score_trace_response`` against a Perception-R1-style reward on ``bbox_set`` and ``point_set`` responses.

Run from the repository root::

    uv run python benchmarks/bench_perception.py                          # bbox_set, 2,000 responses, 9 alternating rounds
    uv run python benchmarks/bench_perception.py --annotation-type point_set
    uv run python benchmarks/bench_perception.py --set-size 100 --count 200   # sets of 100 targets x 100 predictions
    .venv-compiled/bin/python benchmarks/bench_perception.py                  # the same with another build's interpreter

    # instructions per response (load-independent), each side counted in one process under callgrind
    uv run python benchmarks/bench_perception.py --callgrind --count 500
    uv run python benchmarks/bench_perception.py --callgrind --annotation-type point_set --set-size 100 --count 50

    # or by hand: a pass minus the setup
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_perception.py --once setup
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_perception.py --once ours
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_perception.py --once theirs

The comparison a user makes: the 30-line reward a GRPO script for detection
or pointing has (Perception-R1 style: ``json.loads`` of the final object, a numpy
similarity matrix, scipy's Hungarian, the matched similarity summed over the
larger count) against this library's scorer on the very same responses. For
``bbox_set`` the matrix is the IoU; for ``point_set`` it is this library's soft
similarity ``exp(-ln 2 * (distance / half_life)^2)`` computed with numpy, the
half-life from the row's image size as docs/contracts.md §5.4 gives it (the image
size is read from the row before timing, as a training script has it at hand).
The responses are ``workload.make_item``'s in ``answer_and_annotation`` mode
(about 1.5 KB of reasoning, sets of 0 to 20 items, jittered, shuffled, with
items dropped and added) or, with ``--set-size N``, sets of exactly N targets
and N predictions (each target jittered, the predictions shuffled, the final
object bare after ``</think>``). The two rewards are not the same number: ours
also checks the format and the answer, refuses hostile payloads, and sums the
reward exactly (``math.fsum``, the pairs chosen on the values it sums); the
figure is the price of those per call.

Rounds alternate the two (and the floor: ``rfind`` plus one ``json.loads``)
so that a change of machine load hits all alike; the medians, their ratio
and the load average before and after are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import CallgrindRequests, callgrind_counts, loadavg, timed
from workload import IMAGE_H, IMAGE_W, MAKERS, Item, _answer, _jitter, make_item, reasoning_prose

from trace_tasks import resolve_reward_contract

ANNOTATION_TYPES = ("bbox_set", "point_set")
SIDES = ("ours", "theirs", "floor")
LN2 = math.log(2.0)
_DECODER = json.JSONDecoder()
ImageSize = tuple[float, float] | None


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


def half_life_px(image_size: ImageSize) -> float:
    """docs/contracts.md §5.4: 3.5% of the image's diagonal within [20, 80] px, 32 px without a size."""
    if image_size is None:
        return 32.0
    return min(max(0.035 * math.hypot(*image_size), 20.0), 80.0)


def perception_r1_style_points(response: str, gt_points: list[list[float]], image_size: ImageSize) -> float:
    """The same reward for points: Hungarian-matched soft similarity over the larger of the two counts."""
    start = response.rfind('{"answer"')  # the final object
    if start < 0:
        return 0.0
    try:
        payload, _ = _DECODER.raw_decode(response, start)
    except ValueError:
        return 0.0
    points = payload.get("annotation") if isinstance(payload, dict) else None
    if not isinstance(points, list):
        return 0.0
    if not points or not gt_points:
        return float(not points and not gt_points)
    try:
        pred = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        return 0.0
    gt = np.asarray(gt_points, dtype=np.float64)
    distance = np.hypot(pred[:, None, 0] - gt[None, :, 0], pred[:, None, 1] - gt[None, :, 1])
    ratio = distance / half_life_px(image_size)
    similarity = np.exp(-LN2 * ratio * ratio)
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    return float(similarity[rows, cols].sum() / max(len(pred), len(gt)))


def make_set_item(rng: random.Random, annotation_type: str, size: int) -> Item:
    """A response whose target and prediction both hold ``size`` items: each target jittered, then shuffled."""
    make = MAKERS[annotation_type.split("_")[0]]
    gt = [make(rng) for _ in range(size)]
    pred = [_jitter(rng, item, rng.choice((2.0, 8.0, 30.0))) for item in gt]
    rng.shuffle(pred)
    answer_type, answer_gt, answer_pred = _answer(rng)
    final = json.dumps({"answer": answer_pred, "annotation": pred})
    return {
        "response": f"<think>{reasoning_prose(rng, 1500)}</think>\n{final}\n",
        "answer_gt": {"type": answer_type, "value": answer_gt},
        "annotation_gt": {"type": annotation_type, "value": gt},
        "reward_contract": resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict(),
        "trace_reward_mode": "answer_and_annotation",
        "image_size": [IMAGE_W, IMAGE_H],
    }


def make_items(count: int, seed: int, annotation_type: str = "bbox_set", set_size: int = 0) -> list[Item]:
    """``workload.make_item``'s responses (sets of 0 to 20), or sets of exactly ``set_size`` items when it is given."""
    rng = random.Random(seed)
    if set_size:
        return [make_set_item(rng, annotation_type, set_size) for _ in range(count)]
    return [make_item(rng, annotation_type, "answer_and_annotation") for _ in range(count)]


def image_size_of(item: Item) -> ImageSize:
    """The row's image size, where the workload puts it (``image_size`` or ``metadata``), or None."""
    if "image_size" in item:
        width, height = item["image_size"]
        return (width, height)
    size = item.get("metadata", {}).get("source_image_size")
    return (size["width"], size["height"]) if size else None


def runners(items: list[Item]) -> dict[str, Callable[[], Any]]:
    from trace_tasks import score_trace_response

    calls = [(item["response"], {k: v for k, v in item.items() if k != "response"}) for item in items]
    pairs = [(item["response"], item["annotation_gt"]["value"]) for item in items]
    points = items[0]["annotation_gt"]["type"] == "point_set" if items else False
    sizes = [image_size_of(item) for item in items]

    def ours() -> list[float]:
        return [score_trace_response(response=text, **fields)["overall"] for text, fields in calls]

    def theirs() -> list[float]:
        if points:
            return [perception_r1_style_points(text, gt, size) for (text, gt), size in zip(pairs, sizes, strict=True)]
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


def callgrind(args: argparse.Namespace) -> dict[str, float]:
    """Instructions per response of each side: this script again under callgrind, counting its passes itself."""
    command = [sys.executable, __file__, *_workload_args(args), "--repeat", str(args.repeat)]
    counts = callgrind_counts(command)
    return {side: counts[side] / (args.repeat * args.count) for side in SIDES}


def _workload_args(args: argparse.Namespace) -> list[str]:
    return [
        "--count",
        str(args.count),
        "--seed",
        str(args.seed),
        "--annotation-type",
        args.annotation_type,
        "--set-size",
        str(args.set_size),
    ]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="responses (default 2000)")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds (default 9)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--annotation-type", choices=ANNOTATION_TYPES, default="bbox_set")
    parser.add_argument("--set-size", type=int, default=0, help="N: sets of N targets and N predictions (default: 0 to 20)")
    parser.add_argument("--callgrind", action="store_true", help="instructions per response under valgrind instead of time")
    parser.add_argument("--once", choices=("setup", *SIDES), help="one pass of one side, for callgrind")
    parser.add_argument("--repeat", type=int, default=1, help="passes with --once or counted by --callgrind (default 1)")
    parser.add_argument("--callgrind-out", help=argparse.SUPPRESS)  # the child --callgrind runs under valgrind
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    what = f"{args.count} {args.annotation_type} responses" + (
        f", sets of {args.set_size}x{args.set_size}" if args.set_size else ""
    )
    if args.callgrind:
        print(f"trace_tasks build: {build_kind()} ({sys.executable}); {what}; instructions per response (callgrind)")
        counts = callgrind(args)
        for name, count in counts.items():
            print(f"{name:7s} {count / 1000:10.1f}k instructions per response ({args.repeat} pass(es))")
        print(f"ours / theirs: {counts['ours'] / counts['theirs']:.2f}x; ours / floor: {counts['ours'] / counts['floor']:.2f}x")
        return
    items = make_items(args.count, args.seed, args.annotation_type, args.set_size)
    run = runners(items)
    for fn in run.values():  # imports, the registry, scipy: out of every timing and instruction count
        fn()
    if args.callgrind_out:
        requests = CallgrindRequests(args.callgrind_out)
        for side, fn in run.items():
            requests.count(side, lambda: [fn() for _ in range(args.repeat)])
        return
    if args.once:
        for _ in range(args.repeat if args.once != "setup" else 0):
            run[args.once]()
        return
    print(f"trace_tasks build: {build_kind()}; {what}; load average {loadavg()}")
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
