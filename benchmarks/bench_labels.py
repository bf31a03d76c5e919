"""Label placement of ``explain --png`` and ``report`` pictures: the grid index against the old all-pairs search.

Run from the repository root (needs Pillow, ``trace-core[viz]``)::

    uv run python benchmarks/bench_labels.py                 # 100, 300 and 600 box pairs
    uv run python benchmarks/bench_labels.py --pairs 50 100  # other sizes
    uv run python benchmarks/bench_labels.py --skip-old-above 300

An 800x600 image with N random target boxes (10 to 60 px a side) and a
prediction of N boxes, each a target moved by a few pixels (600
pairs is a ~15 KB response); for the picture they are a ``bbox_set_map`` of
100 boxes a key (validation refuses one set of 600: its assignment budget). Two measures per size, old and new
alternating in one process:

* **placement**: every label of the picture placed, without drawing, by the
  old search (each candidate position compared with every label placed and
  every item: kept below as it was, ``old_place_label``) and by
  :class:`trace_tasks.cli._views.layout.Layout` (the grid index), both labelling
  every item; the rectangles chosen are compared and must be identical;
* **picture**: the whole ``trace-tasks explain --png`` in this process
  (scoring, the assignment, drawing, PNG), with the old placement of every
  label patched in against the new one, which labels at most
  ``MAX_LABELS`` items;
* **repeated boxes** (new placement only): a model stuck in a loop writes one
  box thousands of times; the crowded cells and the boxes across the image
  are bounded (``CELL_CAPACITY``, ``MAX_LARGE``).

The load average is printed before and after: on a shared machine compare
figures of one run only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import loadavg, timed  # type: ignore[import-not-found]

from trace_tasks import resolve_reward_contract
from trace_tasks.cli import main
from trace_tasks.cli._views import drawing as _drawing
from trace_tasks.cli._views import layout as _layout
from trace_tasks.cli._views.explanation import plain
from trace_tasks.cli._views.layout import Rect
from trace_tasks.plugins import extent_points

IMAGE = (800, 600)
#: Boxes per key of the picture's ``bbox_set_map`` instance.
KEY_ITEMS = 100


# --- the old placement, as it was before the grid index ----------------------------------------------


def old_place_label(
    bbox: Rect,
    text: tuple[float, float],
    below_first: bool,
    placed: Sequence[Rect],
    items: Sequence[Rect],
    area: Rect,
    near: Sequence[tuple[float, float]] = (),
) -> Rect:
    tw, th = text
    best: tuple[float, Rect] | None = None
    candidates = [*_layout.label_candidates(bbox, text, below_first), *_layout._beside_points(near, text)]
    for rank, (x, y) in enumerate(candidates):
        cx, cy = _layout._clamp(x, area[0], area[2] - tw), _layout._clamp(y, area[1], area[3] - th)
        rect = (cx, cy, cx + tw, cy + th)
        cost = 1000.0 * sum(_layout.overlap(rect, other) for other in placed)
        cost += sum(_layout.overlap(rect, item) for item in items) + abs(cx - x) + abs(cy - y) + rank
        cost += min((_layout._distance(rect, p) for p in near), default=0.0)
        if best is None or cost < best[0]:
            best = (cost, rect)
    assert best is not None
    return best[1]


def old_captions(
    draw: Any, targets: list[Any], predictions: list[Any], font: Any, scale: int, size: tuple[int, int]
) -> tuple[list[tuple[str, Rect]], list[tuple[str, str]]]:
    """``_drawing._captions`` before the grid index: every item labelled, each candidate against everything."""
    everything = targets + predictions
    area: Rect = (0.0, 0.0, float(size[0]), float(size[1]))
    boxes = [b for b in (_drawing._bbox(f, scale) for f in everything) if b is not None]
    placed: list[tuple[str, Rect]] = []
    for figure in everything:
        bbox = _drawing._bbox(figure, scale)
        if bbox is None or not figure.caption:
            continue
        text = plain(figure.caption, 80)
        near = [(float(x) * scale, float(y) * scale) for s in figure.shapes for x, y in extent_points(s)]
        extent = _drawing._text_size(draw, text, font)
        rect = old_place_label(bbox, extent, figure.below, [r for _, r in placed], boxes, area, near)
        draw.rectangle(rect, fill=_drawing.WHITE)
        _drawing._text(draw, (rect[0], rect[1]), text, figure.colour, font)
        placed.append((text, rect))
    return placed, []


# --- the scene ----------------------------------------------------------------------------------------


def boxes(pairs: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    rng = random.Random(seed)
    targets = []
    for _ in range(pairs):
        w, h = rng.randint(10, 60), rng.randint(10, 60)
        x, y = rng.randint(0, IMAGE[0] - w), rng.randint(0, IMAGE[1] - h)
        targets.append([x, y, x + w, y + h])
    predictions = [[v + rng.randint(-4, 4) for v in box] for box in targets]
    return targets, predictions


@contextlib.contextmanager
def instance_file(pairs: int, seed: int) -> Iterator[tuple[str, str]]:
    targets, predictions = boxes(pairs, seed)
    # Sets of at most KEY_ITEMS boxes per key: one set of 600 is refused by validation (its assignment budget).
    keys = [f"k{n // KEY_ITEMS}" for n in range(pairs)]
    target_map: dict[str, list[list[int]]] = {}
    prediction_map: dict[str, list[list[int]]] = {}
    for key, target, prediction in zip(keys, targets, predictions, strict=True):
        target_map.setdefault(key, []).append(target)
        prediction_map.setdefault(key, []).append(prediction)
    contract = resolve_reward_contract(answer_type="integer", annotation_type="bbox_set_map").to_dict()
    row = {
        "id": f"boxes-{pairs}",
        "answer_gt": {"type": "integer", "value": pairs},
        "annotation_gt": {"type": "bbox_set_map", "value": target_map},
        "reward_contract": contract,
        "image_size": list(IMAGE),
    }
    response = json.dumps({"answer": pairs, "annotation": prediction_map})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "instance.jsonl"
        path.write_text(json.dumps(row) + "\n")
        yield str(path), response


def explain_png(path: str, response: str) -> None:
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        code = main(
            ["explain", "--instance", path, "--line", "1", "--response", response, "--png", str(Path(folder) / "why.png")]
        )
    assert code == 0, code


def label_jobs(
    pairs: int, seed: int
) -> tuple[list[tuple[Rect, tuple[float, float], bool, list[tuple[float, float]]]], list[Rect]]:
    """The labels of the picture as placement sees them: (item box, text size, below, points); and every item box."""
    targets, predictions = boxes(pairs, seed)
    jobs = []
    for prefix, side, below in (("T", targets, False), ("P", predictions, True)):
        for n, (x0, y0, x1, y1) in enumerate(side):
            text = f"{prefix}#{n} IoU 0.{n % 100:02d}" if prefix == "P" else f"{prefix}#{n}"
            size = (7.0 * len(text), 13.0)  # about the default font at size 12
            box = (float(x0), float(y0), float(x1), float(y1))
            jobs.append((box, size, below, [(box[0], box[1]), (box[2], box[3])]))
    return jobs, [job[0] for job in jobs]


def place_old(pairs: int, seed: int) -> list[Rect]:
    jobs, items = label_jobs(pairs, seed)
    area: Rect = (0.0, 0.0, float(IMAGE[0]), float(IMAGE[1]))
    placed: list[Rect] = []
    for bbox, text, below, near in jobs:
        placed.append(old_place_label(bbox, text, below, placed, items, area, near))
    return placed


def place_new(pairs: int, seed: int) -> list[Rect]:
    jobs, items = label_jobs(pairs, seed)
    layout = _layout.Layout((0.0, 0.0, float(IMAGE[0]), float(IMAGE[1])), items)
    return [layout.place(bbox, text, below, near) for bbox, text, below, near in jobs]


def place_repeated(copies: int) -> list[Rect]:
    """A model stuck in a loop: ``copies`` of one small box and ``copies`` of one box across the image, the
    first ``MAX_LABELS`` labelled (as a picture does); the old search would label all ``2 * copies``."""
    small, large = (100.0, 100.0, 130.0, 120.0), (5.0, 5.0, 795.0, 595.0)
    items = [small] * copies + [large] * copies
    layout = _layout.Layout((0.0, 0.0, float(IMAGE[0]), float(IMAGE[1])), items)
    near = [(small[0], small[1]), (small[2], small[3])]
    return [layout.place(small, (70.0, 13.0), n % 2 == 1, near) for n in range(_layout.MAX_LABELS)]


def _time(fn: Callable[[], Any]) -> float:
    return float(timed(fn))


def main_(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, nargs="+", default=[100, 300, 600])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeated", type=int, nargs="*", default=[1000, 10000], help="copies of one box (new placement only)")
    parser.add_argument("--skip-old-above", type=int, default=math.inf, help="no old figures past this many pairs")
    args = parser.parse_args(argv)
    print(f"load average before: {loadavg()}")
    print(f"max labels a picture: {_layout.MAX_LABELS}")
    rows = []
    for pairs in args.pairs:
        old_ok = pairs <= args.skip_old_above
        same = place_old(pairs, args.seed) == place_new(pairs, args.seed) if old_ok else None
        old_place = _time(lambda: place_old(pairs, args.seed)) if old_ok else math.nan
        new_place = _time(lambda: place_new(pairs, args.seed))
        with instance_file(pairs, args.seed) as (path, response):
            explain_png(path, response)  # warm: the registry, the font
            new_picture = _time(lambda: explain_png(path, response))
            old_picture = math.nan
            if old_ok:
                with mock.patch.object(_drawing, "_captions", old_captions):
                    old_picture = _time(lambda: explain_png(path, response))
        rows.append((pairs, old_place, new_place, same, old_picture, new_picture))
        print(
            f"{pairs:>4} pairs: placement old {old_place:7.2f} s, new {new_place:6.3f} s (same rectangles: {same}); "
            f"explain --png old {old_picture:7.2f} s, new {new_picture:6.2f} s",
            flush=True,
        )
    for copies in args.repeated:
        seconds = _time(lambda: place_repeated(copies))
        print(
            f"{copies:>5} copies of a small and of a whole-image box: placement of {_layout.MAX_LABELS} labels, new {seconds:.3f} s"
        )
    print(f"load average after: {loadavg()}")
    print()
    print("| pairs | placement, old s | placement, new s | same rectangles | `explain --png`, old s | `explain --png`, new s |")
    print("|---:|---:|---:|:---:|---:|---:|")
    for pairs, old_place, new_place, same, old_picture, new_picture in rows:
        print(
            f"| {pairs} | {old_place:.2f} | {new_place:.3f} | {'yes' if same else same} | {old_picture:.2f} | {new_picture:.2f} |"
        )


if __name__ == "__main__":
    main_()
