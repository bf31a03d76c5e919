"""Cost of scoring hostile responses against their length: time per call and per MiB.

Run from the repository root::

    uv run python benchmarks/hostile_scaling.py            # 10 KiB, 100 KiB, 1 MiB
    uv run python benchmarks/hostile_scaling.py --repeat 3 --sizes 10,100,1024,4096

For each response shape (the kinds of output that made earlier scorers slow:
brace and quote floods, backtick runs for a backtracking fence regex, unclosed
tags, many candidate objects, deep nesting) the response is built at each size
and scored with ``score_trace_response`` in answer-and-annotation mode against
a ``bbox_set`` target. Each figure is the best of ``--repeat`` runs (the least
disturbed by other processes). Linear cost shows as a flat time per MiB.
This is a measurement script, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy

from trace_tasks import score_trace_response

KIB = 1024
MIB = 1024 * KIB
FINAL = '{"answer": 7, "annotation": [[0, 0, 10, 10], [20, 20, 30, 30]]}'
CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "bbox_set_soft_iou_v0", "type": "bbox_set"},
}
ANSWER_GT = {"type": "integer", "value": 7}
ANNOTATION_GT = {"type": "bbox_set", "value": [[0, 0, 10, 10], [20, 20, 30, 30]]}


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _nested_answer(size: int) -> str:
    # Issue 24: a valid final object whose answer is small nested lists (~116,000 at
    # 1 MiB); the cyclic garbage collector used to run throughout the decode.
    head, tail = '{"answer": [', '], "annotation": [[0, 0, 10, 10], [20, 20, 30, 30]]}'
    unit = "[[1, 2]]"
    return head + ",".join([unit] * max(1, (size - len(head) - len(tail)) // (len(unit) + 1))) + tail


def _set_map_keys(size: int) -> str:
    # Issue 24: a point_set_map of keys of 15 points each (~9,500 keys, ~140,000 points
    # at 1 MiB); each key was bounded, not their total.
    head, tail = '{"answer": 7, "annotation": {', "}}"
    points = ",".join(f"[{k},1]" for k in range(15))
    parts, total, key = [], len(head) + len(tail), 0
    while True:
        part = f'"{key}":[{points}]'
        if total + len(part) + 1 > size:
            break
        parts.append(part)
        total += len(part) + 1
        key += 1
    return head + ",".join(parts) + tail


def _literal_candidates(size: int) -> str:
    # Distinct Python-literal objects holding 'answer' that fail at their end: each goes
    # to the literal reader until its budget is spent.
    parts, total, tag = [], 0, 0
    while total < size:
        part = "{'answer': %d, 'pad': [%s] x} " % (tag, "(0, 0, 10, 10), " * 250)
        parts.append(part)
        total += len(part)
        tag += 1
    return "".join(parts)[:size] + " x"


#: name -> builder of a response of about ``size`` characters.
SHAPES: dict[str, Callable[[int], str]] = {
    "prose + final object": lambda n: _fill("The box is left of the cup. ", n - len(FINAL)) + FINAL,
    "open braces {": lambda n: _fill("{", n),
    "open braces { + 'answer'": lambda n: _fill("{", n) + " answer",
    "close braces }": lambda n: _fill("}", n),
    "brace pairs {} + 'answer'": lambda n: _fill("{}", n) + " answer",
    'quotes "': lambda n: _fill('"', n),
    "quotes \" + 'answer'": lambda n: _fill('"', n) + " answer",
    "quote-brace \"{ + 'answer'": lambda n: _fill('"{', n) + " answer",
    "backticks `": lambda n: _fill("`", n),
    "unclosed <answer>": lambda n: _fill("<answer>", n),
    "<answer></answer> pairs": lambda n: _fill("<answer>{answer}</answer>", n),
    "many small objects": lambda n: _fill('{"answer": 1} ', n - len(FINAL)) + FINAL,
    "many broken objects": lambda n: _fill("{answer} ", n) + "x",
    "literal candidates": _literal_candidates,
    "deep nesting [": lambda n: '{"answer": ' + "[" * (n // 2) + "]" * (n // 2) + "}",
    'deep nesting {"a":': lambda n: _fill('{"a":', n),
    # Issue 17, items 3 and 4: a Python step per token, and the atomic answer at any length.
    "{} + '\"answer\"}'": lambda n: _fill("{}", n) + '"answer"}',
    "{x[} + '\"answer\"}'": lambda n: _fill("{x[}", n) + '"answer"}',
    "\\{} flood": lambda n: _fill("\\{}", n),
    "escaped quotes in objects": lambda n: _fill('{"\\"": 1}', n - len(FINAL)) + FINAL,
    "backticks + 'answer'": lambda n: _fill("`", n) + " answer",
    "fenced {answer} blocks": lambda n: _fill("```{answer}```", n),
    "atomic JSON list": lambda n: "[" + _fill("1,", n) + "1]",
    "atomic JSON objects": lambda n: "[" + _fill('{"a": 1},', n) + "{}]",
    "atomic text": lambda n: _fill("seven ", n),
    "answer of small nested lists": _nested_answer,
    "point_set_map keys x 15 points": _set_map_keys,
}

#: The opt-in tool-call reading (docs/contracts.md §3.9): the shapes below are scored with this declaration.
TOOL_CALL = {"name": "click", "argument": "geometry"}
#: Floods of what the tool-call reader looks for (the call's name is in the text, so it reads).
TOOL_CALL_SHAPES: dict[str, Callable[[int], str]] = {
    "tool call: unclosed <tool_call>": lambda n: _fill("<tool_call>", n) + "click",
    "tool call: open calls click(": lambda n: _fill("click(", n),
    "tool call: open calls + 16 KiB": lambda n: _fill("click(", min(n, 3072)) + _fill("x", n - min(n, 3072)),
    'tool call: {"name": "click",': lambda n: _fill('{"name": "click", ', n),
    "tool call: <point> + spaces": lambda n: _fill("click(geometry=<point>" + " " * 8000 + "x) ", n),
}
SHAPES.update(TOOL_CALL_SHAPES)

#: Shapes scored against another target than ``ANNOTATION_GT``: (annotation_gt, contract).
SHAPE_TARGETS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "point_set_map keys x 15 points": (
        {"type": "point_set_map", "value": {"0": [[0, 1], [1, 1]]}},
        {**CONTRACT, "annotation": {"id": "point_set_map_soft_distance_v0", "type": "point_set_map"}},
    ),
}


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"CPU: {cpu}\n"
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__}, scipy {scipy.__version__}, {platform.system()} {platform.machine()}"
    )


def _target(shape: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return SHAPE_TARGETS.get(shape, (ANNOTATION_GT, CONTRACT))


def _options(shape: str) -> dict[str, Any]:
    """The scorer options a shape is scored with (the tool-call declaration for its shapes)."""
    return {"tool_call": TOOL_CALL} if shape in TOOL_CALL_SHAPES else {}


def peak_memory(response: str, shape: str = "") -> float:
    """Peak extra memory of one call, in MB (tracemalloc; numpy reports its buffers to it)."""
    import tracemalloc

    annotation_gt, contract = _target(shape)
    tracemalloc.start()
    try:
        score_trace_response(
            response=response, answer_gt=ANSWER_GT, annotation_gt=annotation_gt, reward_contract=contract, **_options(shape)
        )
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def caller_side(repeat: int) -> None:
    """Ground truth that costs per call (issue 17 item 5), with a small response: ms per call."""
    point_contract = {**CONTRACT, "annotation": {"id": "point_soft_distance_v0", "type": "point"}}
    junk = "[" + "0, " * 1300 + "]"  # a 4 KiB literal string under a size key that is no size
    nested = [{"image_size": junk} for _ in range(64)]
    literal_map = {f"k{i}": "(0, 0, 10, 10)" for i in range(10_000)}
    set_map_contract = {**CONTRACT, "annotation": {"id": "bbox_set_map_soft_iou_v0", "type": "bbox_set_map"}}
    cases = {
        "metadata: literal strings, 4 sources": (
            '{"answer": 7, "annotation": [5, 5]}',
            {"type": "point", "value": [5, 5]},
            point_contract,
            {"image_size": nested, "image_sizes": nested, "metadata": nested, "extra_info": nested},
        ),
        "bbox_set_map target: 10,000 literal strings": (
            '{"answer": 7, "annotation": {"k0": [[0, 0, 10, 10]]}}',
            {"type": "bbox_set_map", "value": literal_map},
            set_map_contract,
            {},
        ),
    }
    print(f"\nCaller side (small response): best of {repeat}, ms per call")
    for name, (response, target, contract, extra) in cases.items():
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            score_trace_response(response=response, answer_gt=ANSWER_GT, annotation_gt=target, reward_contract=contract, **extra)
            best = min(best, time.perf_counter() - start)
        print(f"{name:46s}{best * 1e3:10.1f}")


def best_time(response: str, repeat: int, shape: str = "", collector: bool = False) -> float:
    """Best of ``repeat`` timed calls; the garbage collector is off while timing unless ``collector``.

    The collector on is what a trainer's process runs with: the shapes that
    build many objects (issue 24) are timed that way too (``main``).
    """
    annotation_gt, contract = _target(shape)
    options = _options(shape)
    best = float("inf")
    for _ in range(repeat):
        if not collector:
            gc.disable()
        try:
            start = time.perf_counter()
            score_trace_response(
                response=response, answer_gt=ANSWER_GT, annotation_gt=annotation_gt, reward_contract=contract, **options
            )
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best


#: Shapes timed with the garbage collector on (it is what made them slow); the others
#: keep the historical setting (off while timing), so their figures compare with the past.
COLLECTOR_ON = frozenset({"answer of small nested lists", "point_set_map keys x 15 points"})


def parse_volume(repeat: int = 5) -> None:
    """Issue 24 item B: the two shapes before and after, one run, against the worst shape.

    "before" patches the two changes away (no item bound across keys, no
    collector pause around decoding); both are timed with the collector on, as a
    trainer runs, best of ``repeat`` alternating rounds, next to the worst shape
    of the table (quote-brace) measured in the same rounds.
    """
    from unittest import mock

    from trace_tasks.family import _parsing as parsing
    from trace_tasks.reading import _literals as literals

    worst = "quote-brace \"{ + 'answer'"
    cases = [worst, "answer of small nested lists", "point_set_map keys x 15 points"]
    responses = {name: SHAPES[name](MIB) for name in cases}
    before: dict[str, float] = dict.fromkeys(cases, float("inf"))
    after: dict[str, float] = dict.fromkeys(cases, float("inf"))
    print(f"\nIssue 24 item B at 1 MiB, collector on: best of {repeat} alternating rounds, load average {os.getloadavg()[0]:.2f}")
    for _ in range(repeat):
        for name in cases:
            with (
                mock.patch.object(parsing, "MAX_ANNOTATION_ITEMS", 10**12),
                mock.patch.object(literals, "GC_PAUSE_CHARS", 10**12),
            ):
                before[name] = min(before[name], best_time(responses[name], 1, name, collector=True))
            after[name] = min(after[name], best_time(responses[name], 1, name, collector=True))
    print(f"{'shape':32s}{'before ms':>12s}{'after ms':>12s}{'after / worst':>15s}")
    for name in cases:
        print(f"{name:32s}{before[name] * 1e3:12.1f}{after[name] * 1e3:12.1f}{after[name] / after[worst]:15.2f}")
    print(f"load average at end {os.getloadavg()[0]:.2f}")


def degenerate_assignment(repeat: int = 3) -> None:
    """Repetition loops against large target sets (issue 17): the old full solve vs today's, one run.

    "before" is the plain path of ``match_set`` (the whole matrix to scipy, as
    every release before the reduction did), reached by patching the reduction
    threshold and the per-response budget away; "after" is the library as it
    is. Rounds alternate; medians are printed with the load average, and the
    two paths' rewards are compared bit for bit.
    """
    import json
    import os
    import random
    import statistics
    from unittest import mock

    from trace_tasks.family import _assignment as assignment
    from trace_tasks.family import _matching as matching
    from trace_tasks.family import _scoring as shape_scoring

    rng = random.Random(17)
    points = [[rng.uniform(0, 1024), rng.uniform(0, 768)] for _ in range(2000)]
    boxes = []
    for _ in range(1000):
        x, y = rng.uniform(0, 1000), rng.uniform(0, 740)
        boxes.append([x, y, x + rng.uniform(2, 120), y + rng.uniform(2, 90)])
    whole = [0, 0, 1024, 768]
    grid = [[20.0 + 50 * (k % 20), 20.0 + 37 * (k // 20)] for k in range(400)]
    honest = [[x + rng.uniform(-1, 1), y + rng.uniform(-1, 1)] for x, y in grid]
    honest[1] = [honest[0][0] + 0.3, honest[0][1] + 0.2]
    cases = {
        "500 x [512,384] vs 2,000 points": ("point_set", [[512, 384]] * 500, points),
        "1,000 whole-image boxes vs 1,000": ("bbox_set", [whole] * 1000, boxes),
        "bbox_set_map 5 keys x 1,000": (
            "bbox_set_map",
            {f"k{i}": [whole] * 1000 for i in range(5)},
            {f"k{i}": boxes for i in range(5)},
        ),
        "368 jittered points vs 368": ("point_set", [[512 + k * 1e-3, 384] for k in range(368)], points[:368]),
        "400 jittered points vs 400": ("point_set", [[512 + k * 1e-3, 384] for k in range(400)], points[:400]),
        # Issue 24: an honest answer with one near-duplicate (it failed on the old fixed budget).
        "400 honest grid points, 1 near-duplicate": ("point_set", honest, grid),
        "562 jittered vs 562 (largest valid set)": ("point_set", [[512 + k * 1e-3, 384] for k in range(562)], points[:562]),
        "633 jittered vs 562 (largest plausible)": ("point_set", [[512 + k * 1e-3, 384] for k in range(633)], points[:562]),
        "bbox_set_map 4,000 keys x 3 (past the cap)": (
            "bbox_set_map",
            {f"k{i}": [[*b[:2], b[2] + 1, b[3]] for b in boxes[3 * (i % 300) : 3 * (i % 300) + 3]] for i in range(4000)},
            {f"k{i}": boxes[3 * (i % 300) : 3 * (i % 300) + 3] for i in range(4000)},
        ),
    }

    class Unbounded(assignment.AssignmentBudget):
        def __init__(self, cells: int = 10**18, work: int = 10**18) -> None:
            super().__init__(10**18, 10**18)

        @classmethod
        def for_target(cls, set_sizes: object) -> assignment.AssignmentBudget:
            return cls()

    def fixed(cls: type[assignment.AssignmentBudget], set_sizes: object) -> assignment.AssignmentBudget:
        return cls()  # the budget before issue 24: the same for every target

    def call(annotation_type: str, prediction: object, target: object) -> tuple[float, dict[str, float]]:
        response = '{"answer": 7, "annotation": ' + json.dumps(prediction) + "}"
        contract = {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {
                "id": f"{annotation_type}_soft_{'iou' if 'bbox' in annotation_type else 'distance'}_v0",
                "type": annotation_type,
            },
        }
        gc.disable()
        try:
            start = time.perf_counter()
            result = score_trace_response(
                response=response,
                answer_gt=ANSWER_GT,
                annotation_gt={"type": annotation_type, "value": target},
                reward_contract=contract,
                image_size=[1024, 768],
            )
            return time.perf_counter() - start, result
        finally:
            gc.enable()

    def before(*case: object) -> tuple[float, dict[str, float]]:
        with (
            mock.patch.object(matching, "REDUCE_MIN_CELLS", 10**18),
            mock.patch.object(matching, "AssignmentBudget", Unbounded),
            mock.patch.object(shape_scoring, "AssignmentBudget", Unbounded),
        ):
            return call(*case)  # type: ignore[arg-type]

    def fixed_budget(*case: object) -> dict[str, float]:
        with mock.patch.object(assignment.AssignmentBudget, "for_target", classmethod(fixed)):
            return call(*case)[1]  # type: ignore[arg-type]

    print(f"\nDegenerate assignment: median of {repeat} alternating rounds, load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'case':42s}{'before ms':>12s}{'after ms':>12s}{'ratio':>9s}  same reward; on the fixed budget (before issue 24)")
    for name, case in cases.items():
        old, new = [], []
        for _ in range(repeat):
            seconds, old_result = before(*case)
            old.append(seconds)
            seconds, new_result = call(*case)  # type: ignore[arg-type]
            new.append(seconds)
        same = old_result["annotation_reward"] == new_result["annotation_reward"]
        if not same and new_result["annotation_parse_ok"] == 0.0:
            same_text = "past the budget: parse failure"
        else:
            same_text = "yes" if same else f"NO ({old_result['annotation_reward']!r} vs {new_result['annotation_reward']!r})"
        t_old, t_new = statistics.median(old), statistics.median(new)
        was = "scored" if fixed_budget(*case)["annotation_parse_ok"] == 1.0 else "parse failure"
        print(f"{name:42s}{t_old * 1e3:12.1f}{t_new * 1e3:12.1f}{t_old / t_new:9.1f}  {same_text}; {was}")
        sys.stdout.flush()
    print(f"load average at end {os.getloadavg()[0]:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1024", help="response sizes in KiB, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept")
    parser.add_argument("--only", metavar="TEXT", help="time only the shapes whose name holds TEXT (and skip the other tables)")
    args = parser.parse_args(argv)
    sizes = [int(s) * KIB for s in args.sizes.split(",")]

    print("Hostile response scaling: score_trace_response, answer_and_annotation, bbox_set target")
    print(machine())
    print(f"best of {args.repeat} runs per figure; load average {os.getloadavg()[0]:.2f} at start\n")
    # Warm up imports (scipy, the plugin registry) outside the timings.
    best_time(FINAL, 1)
    header = f"{'shape':28s}" + "".join(f"{f'{s // KIB} KiB: ms/call  ms/MiB':>28s}" for s in sizes) + "  peak MB"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, build in SHAPES.items():
        if args.only and args.only not in name:
            continue
        cells = []
        for size in sizes:
            response = build(size)
            seconds = best_time(response, args.repeat, name, collector=name in COLLECTOR_ON)
            per_mib = seconds * MIB / len(response)
            if size >= MIB:
                worst = max(worst, per_mib)
            cells.append(f"{seconds * 1e3:14.2f} {per_mib * 1e3:11.1f}")
        peak = peak_memory(response, name)  # at the largest size
        print(f"{name:28s}" + "".join(f"{c:>28s}" for c in cells) + f"{peak:9.1f}")
        sys.stdout.flush()
    if worst:
        print(f"\nworst time per MiB at >= 1 MiB: {worst * 1e3:.0f} ms (load average {os.getloadavg()[0]:.2f} at end)")
    if args.only:
        return
    caller_side(args.repeat)
    degenerate_assignment()
    parse_volume(args.repeat)


if __name__ == "__main__":
    main()
