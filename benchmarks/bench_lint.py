"""The data lint on a million instances: time and peak memory of streaming them through ``DatasetLint``.

Run from the repository root::

    uv run python benchmarks/bench_lint.py                       # 1,000,000 instances, in this process
    uv run python benchmarks/bench_lint.py --group-by metadata.task
    uv run python benchmarks/bench_lint.py --cli                 # the same instances as a file, through `trace-tasks validate -q`

The instances are generated on the fly (nothing is held: the generator yields
one dict at a time) from a fixed seed, cycling through the annotation types
of the three official families with answers of their usual types: counting
sets (``integer`` answers equal to the set's size, 2% off by one), one-key
maps, duplicate items, normalised coordinates, points without an image size,
and an ``image`` path (existing for half of those that name one). Each carries
``metadata.task`` with one of 2,000 task names, so ``--group-by
metadata.task`` makes 2,000 groups (each task holds one kind of instance)
instead of 8.

Each instance goes through :meth:`trace_tasks.data.DatasetLint.add`: the whole
validation (``instance_problems``) and the lint, exactly what ``trace-tasks
validate`` does per line. Peak memory is the process's maximum resident set
(``resource.getrusage(...).ru_maxrss``), printed at start (after imports and a
warm-up) and at the end; with ``--cli`` it is the validate subprocess's
(``RUSAGE_CHILDREN``), and the file is written first (untimed). The load
average before and after is printed: on a shared machine, check it first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import loadavg

from trace_tasks import DatasetLint, resolve_reward_contract

SIZES = ([640, 480], [800, 600], [1024, 768], [1920, 1080])
TASKS = 2_000


def _contract(answer_type: str, annotation_type: str, cache: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    key = (answer_type, annotation_type)
    if key not in cache:
        cache[key] = resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()
    return cache[key]


def _box(rng: random.Random, w: int, h: int) -> list[float]:
    x0, y0 = rng.uniform(0, w - 60), rng.uniform(0, h - 60)
    return [round(x0, 1), round(y0, 1), round(x0 + rng.uniform(10, 59), 1), round(y0 + rng.uniform(10, 59), 1)]


def _point(rng: random.Random, w: int, h: int) -> list[float]:
    return [round(rng.uniform(0, w), 1), round(rng.uniform(0, h), 1)]


def _segment(rng: random.Random, w: int, h: int) -> list[list[float]]:
    return [_point(rng, w, h), _point(rng, w, h)]


def instances(n: int, seed: int, image_dir: str) -> Iterator[dict[str, Any]]:
    """``n`` instance dicts, one at a time (the generator keeps only its own state)."""
    rng = random.Random(seed)
    contracts: dict[tuple[str, str], dict[str, Any]] = {}
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        kind = i % 8
        answer: tuple[str, Any]
        if kind in (0, 1, 2):  # counting sets of boxes, points, segments
            make = (_box, _point, _segment)[kind]
            annotation_type = ("bbox_set", "point_set", "segment_set")[kind]
            count = rng.randint(0, 8)
            items = [make(rng, w, h) for _ in range(count)]
            if rng.random() < 0.01 and items:
                items.append(list(items[0]))  # a duplicate item
                count += 1
            answer = ("integer", count + (1 if rng.random() < 0.02 else 0))
            value: Any = items
        elif kind == 3:
            annotation_type, value, answer = "bbox", _box(rng, w, h), ("option_letter", "ABCD"[i % 4])
            if rng.random() < 0.01:
                value = [round(v / (w if k % 2 == 0 else h), 4) for k, v in enumerate(value)]  # normalised
        elif kind == 4:
            annotation_type, answer = "bbox_map", ("string", "left")
            value = {"source": _box(rng, w, h), "target": _box(rng, w, h)}
            if rng.random() < 0.01:
                value = {"answer_endpoint": value["source"]}  # a one-key map
        elif kind == 5:
            annotation_type, value, answer = "point", _point(rng, w, h), ("number", round(rng.uniform(0, 100), 1))
        elif kind == 6:
            annotation_type, answer = "point_set_map", ("integer", 3)
            value = {"red": [_point(rng, w, h) for _ in range(2)], "blue": [_point(rng, w, h)]}
        else:
            annotation_type, value, answer = "segment", _segment(rng, w, h), ("string", "AB")
        data: dict[str, Any] = {
            "id": f"i{i}",
            "answer_gt": {"type": answer[0], "value": answer[1]},
            "annotation_gt": {"type": annotation_type, "value": value},
            "reward_contract": _contract(answer[0], annotation_type, contracts),
            "metadata": {"task": f"task-{i % TASKS}"},
        }
        if rng.random() > 0.03:  # 3% give no image size
            data["image_size"] = [w, h]
        if i % 10 == 0:
            data["image"] = os.path.join(image_dir, "here.png" if i % 20 == 0 else "gone.png")
        yield data


def rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def run_in_process(n: int, seed: int, group_by: str | None, image_dir: str) -> None:
    warm = DatasetLint(group_by=group_by)
    for data in instances(200, seed + 1, image_dir):
        warm.add(data)
    warm.finish()
    start_rss = rss_mb()
    lint = DatasetLint(group_by=group_by)
    problems = 0
    cpu = time.process_time()
    wall = time.perf_counter()
    for number, data in enumerate(instances(n, seed, image_dir), 1):
        problems += bool(lint.add(data, number).problems)
    grouped = lint.finish()
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    print(f"instances: {lint.lines:,}, problems: {problems:,}, groups: {len(lint._groups):,}, group warnings: {len(grouped):,}")
    print("warnings by rule: " + ", ".join(f"{rule} {count:,}" for rule, count in sorted(lint.counts.items())))
    print(
        f"time: {wall:.1f} s wall, {cpu:.1f} s CPU ({n / wall:,.0f} instances/s, {1e6 * wall / n:.1f} µs each, "
        "generating the instances included)"
    )
    print(f"peak RSS: {rss_mb():.0f} MB (at start, after imports and warm-up: {start_rss:.0f} MB)")


def run_cli(n: int, seed: int, group_by: str | None, image_dir: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as fh:
        for data in instances(n, seed, image_dir):
            fh.write(json.dumps(data) + "\n")
        path = fh.name
    try:
        size = os.path.getsize(path)
        command = [sys.executable, "-m", "trace_tasks.cli", "validate", "-q", path]
        if group_by:
            command[4:4] = ["--group-by", group_by]
        wall = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - wall
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"file: {size / 1e6:,.0f} MB, {n:,} lines; exit {proc.returncode}")
        print(proc.stdout.strip())
        print(f"time: {wall:.1f} s wall, {usage.ru_utime + usage.ru_stime:.1f} s CPU ({n / wall:,.0f} lines/s)")
        print(f"peak RSS of trace-tasks validate: {usage.ru_maxrss / 1024:.0f} MB")
    finally:
        os.unlink(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1_000_000, help="how many instances (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--group-by", default=None, metavar="FIELD", help="DatasetLint's group_by (e.g. metadata.task)")
    parser.add_argument("--cli", action="store_true", help="write the instances to a file and time `trace-tasks validate -q`")
    parser.add_argument("--generate-only", action="store_true", help="time generating the instances alone (what to subtract)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as image_dir:
        Path(image_dir, "here.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        print(f"load average before: {loadavg()}")
        if args.generate_only:
            wall = time.perf_counter()
            count = sum(1 for _ in instances(args.instances, args.seed, image_dir))
            print(f"generating {count:,} instances alone: {time.perf_counter() - wall:.1f} s wall")
        else:
            (run_cli if args.cli else run_in_process)(args.instances, args.seed, args.group_by, image_dir)
        print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
