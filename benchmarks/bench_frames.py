"""Cost of a declared prediction frame (issue 35): the bench_shapes mix scored in pixels and in a frame.

Every item of the mix gets an image size (a declared frame needs one) and its
predicted annotation rewritten in the frame, so both passes score the same
predictions and reach the same rewards::

    OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/bench_frames.py --count 300 --once pixel   # and: frame, setup

Instructions per response: ``--once pixel`` minus ``--once setup`` (``frame`` minus ``setup-frame``), over the count.
Without ``--once``: the median CPU time per response of both passes over alternating rounds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import make_batch

SIZE = [1920, 1080]


def _rel1000(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _rel1000(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [v / SIZE[i % 2] * 1000 for i, v in enumerate(value)]
    if isinstance(value, list):
        return [_rel1000(v) for v in value]
    return value


def items(count: int, frame: bool) -> list[dict[str, Any]]:
    from trace_tasks.core.reward_scoring import extract_trace_prediction

    out = []
    for item in make_batch(count):
        answer, annotation, found = extract_trace_prediction(item["response"])
        payload = {"answer": answer} if annotation is None else {"answer": answer, "annotation": annotation}
        if frame and annotation is not None:
            payload["annotation"] = _rel1000(annotation)
        scored = {k: v for k, v in item.items() if k not in ("response", "metadata")}
        scored["response"] = json.dumps(payload) if found else item["response"]
        scored["image_size"] = SIZE
        if frame:
            scored["prediction_frame"] = "rel1000"
        out.append(scored)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--once", choices=("setup", "setup-frame", "pixel", "frame"))
    parser.add_argument("--rounds", type=int, default=7, help="without --once: alternating timed rounds, medians")
    args = parser.parse_args()
    from trace_tasks import score_trace_response

    if args.once is None:
        _timed(args.count, args.rounds)
        return

    work = items(args.count, args.once in ("frame", "setup-frame"))
    if args.once.startswith("setup"):
        return
    rewards = [score_trace_response(**item)["annotation_reward"] for item in work]
    print(f"{args.once}: {len(rewards)} responses, mean annotation_reward {sum(rewards) / len(rewards):.6f}")


def _timed(count: int, rounds: int) -> None:
    """Median CPU time per response of each pass over alternating rounds (a load change hits both alike)."""
    import statistics
    import time

    from trace_tasks import score_trace_response

    passes = {"pixel": items(count, False), "frame": items(count, True)}
    times: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(rounds):
        for name, work in passes.items():
            start = time.process_time()
            for item in work:
                score_trace_response(**item)
            times[name].append((time.process_time() - start) / len(work) * 1e6)
    pixel, frame = statistics.median(times["pixel"]), statistics.median(times["frame"])
    print(f"pixel {pixel:.2f} us/response, rel1000 {frame:.2f} us/response: {frame / pixel - 1:+.1%}")


if __name__ == "__main__":
    main()
