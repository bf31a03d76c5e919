"""Label placement at scale: the grid index chooses what the all-pairs search chose, looks only nearby, and a
picture labels at most ``MAX_LABELS`` items (and says so).

``test_explain_picture.py`` checks what a placement looks like; here the
:class:`trace_tasks.cli._views.layout.Layout` is compared with :func:`place_label`
(every candidate against every rectangle) on random scenes, its work is
counted (comparisons, never seconds: timing is ``benchmarks/bench_labels.py``'s),
and a crowded picture is drawn.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import instance, write_lines
from trace_tasks.cli import main
from trace_tasks.cli._views import drawing as _drawing
from trace_tasks.cli._views import layout as _layout
from trace_tasks.cli._views.layout import Rect

Job = tuple[Rect, tuple[float, float], bool, list[tuple[float, float]]]


def _scene(rng: random.Random, count: int, area: Rect) -> tuple[list[Job], list[Rect]]:
    """Items of every kind: small boxes, points, long segments, huge boxes and ones reaching past the area."""
    width, height = area[2] - area[0], area[3] - area[1]
    jobs: list[Job] = []
    for n in range(count):
        kind = n % 6
        x, y = area[0] + rng.uniform(-20, width + 20), area[1] + rng.uniform(-20, height + 20)
        if kind == 0:  # a point
            box = (x, y, x, y)
        elif kind == 1:  # a long segment
            box = (x, y, x + rng.uniform(100, 600), y + rng.uniform(-200, 200))
            box = (box[0], min(box[1], box[3]), box[2], max(box[1], box[3]))
        elif kind == 2:  # a huge box, beyond the area on every side
            box = (area[0] - 500, area[1] - 300, area[2] + 400, area[3] + 700)
        else:
            w, h = rng.uniform(1, 80), rng.uniform(1, 80)
            box = (x, y, x + w, y + h)
        size = (rng.choice([20.0, 45.0, 90.0, width + 30]), rng.choice([12.0, 14.0]))  # one wider than the area
        jobs.append((box, size, n % 2 == 1, [(box[0], box[1]), (box[2], box[3])]))
    return jobs, [job[0] for job in jobs]


def _all_pairs(jobs: list[Job], items: list[Rect], area: Rect) -> list[Rect]:
    placed: list[Rect] = []
    for bbox, text, below, near in jobs:
        placed.append(_layout.place_label(bbox, text, below, placed, items, area, near))
    return placed


def _indexed(jobs: list[Job], items: list[Rect], area: Rect) -> list[Rect]:
    layout = _layout.Layout(area, items)
    return [layout.place(bbox, text, below, near) for bbox, text, below, near in jobs]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    ("area", "count"), [((0.0, 0.0, 800.0, 600.0), 120), ((0.0, 0.0, 96.0, 40.0), 40), ((0.0, 0.0, 4000.0, 300.0), 120)]
)
def test_the_grid_chooses_what_comparing_with_everything_chooses(seed: int, area: Rect, count: int) -> None:
    jobs, items = _scene(random.Random(seed), count, area)
    assert _indexed(jobs, items, area) == _all_pairs(jobs, items, area)


def test_many_boxes_across_the_image_are_summed_at_once() -> None:
    rng = random.Random(5)
    area: Rect = (0.0, 0.0, 800.0, 600.0)
    index = _layout.RectIndex(area)
    rects = [(rng.uniform(-50, 100), rng.uniform(-50, 100), rng.uniform(500, 900), rng.uniform(400, 700)) for _ in range(300)]
    rects += [(x, y, x + 20, y + 20) for x, y in ((rng.uniform(0, 780), rng.uniform(0, 580)) for _ in range(300))]
    for rect in rects:
        index.add(rect)
    assert len(index.large) == 300 > _layout.MAX_EXACT_LARGE
    for _ in range(100):
        x, y = rng.uniform(-20, 800), rng.uniform(-20, 600)
        probe = (x, y, x + 40, y + 13)
        assert index.overlap_sum(probe) == pytest.approx(sum(_layout.overlap(probe, r) for r in rects), rel=1e-12, abs=1e-9)


def test_overlapping_rectangles_always_share_a_cell() -> None:
    rng = random.Random(7)
    index = _layout.RectIndex((0.0, 0.0, 500.0, 300.0))
    rects = []
    for _ in range(300):
        x, y = rng.uniform(-100, 600), rng.uniform(-100, 400)
        rects.append((x, y, x + rng.uniform(0, 120), y + rng.uniform(0, 120)))
        index.add(rects[-1])
    for _ in range(300):
        x, y = rng.uniform(-100, 600), rng.uniform(-100, 400)
        probe = (x, y, x + rng.uniform(1, 60), y + rng.uniform(1, 30))
        near = index.near(probe)
        assert near == [r for r in rects if r in near]  # in the order added, each once
        assert {r for r in rects if _layout.overlap(probe, r) > 0} <= set(near)


def _comparisons(monkeypatch: pytest.MonkeyPatch, place: Callable[[], Any]) -> int:
    calls = 0
    real = _layout.overlap

    def counted(a: Rect, b: Rect) -> float:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(_layout, "overlap", counted)
    place()
    monkeypatch.setattr(_layout, "overlap", real)
    return calls


def _spread(count: int) -> tuple[list[Job], list[Rect], Rect]:
    """``count`` small boxes on a grid of their own, at one density whatever the count."""
    side = int(count**0.5) + 1
    area: Rect = (0.0, 0.0, side * 80.0, side * 60.0)
    jobs: list[Job] = []
    for n in range(count):
        x, y = (n % side) * 80.0 + 20, (n // side) * 60.0 + 20
        box = (x, y, x + 30, y + 20)
        jobs.append((box, (28.0, 12.0), n % 2 == 1, [(x, y), (x + 30, y + 20)]))
    return jobs, [job[0] for job in jobs], area


def test_a_label_looks_only_nearby_however_many_there_are(monkeypatch: pytest.MonkeyPatch) -> None:
    per_label = {}
    for count in (100, 1600):
        jobs, items, area = _spread(count)
        per_label[count] = _comparisons(monkeypatch, lambda: _indexed(jobs, items, area)) / count  # noqa: B023
    # The all-pairs search compares each of ~25 candidates with every label and item: 16x more at 16x the labels.
    assert per_label[1600] < 1.5 * per_label[100]
    jobs, items, area = _spread(100)
    assert per_label[100] < _comparisons(monkeypatch, lambda: _all_pairs(jobs, items, area)) / 100 / 10


def test_a_crowded_spot_costs_a_bounded_number_of_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model stuck in a loop repeats one box: 5,000 copies of a small one and 5,000 of one across the image."""
    area: Rect = (0.0, 0.0, 800.0, 600.0)
    small, large = (100.0, 100.0, 130.0, 120.0), (5.0, 5.0, 795.0, 595.0)
    items = [small] * 5000 + [large] * 5000
    jobs: list[Job] = [(small, (40.0, 13.0), n % 2 == 1, [(100.0, 100.0), (130.0, 120.0)]) for n in range(_layout.MAX_LABELS)]
    layout = _layout.Layout(area, items)
    assert len(layout.items.large) == _layout.MAX_LARGE
    assert max(len(bucket) for bucket in layout.items.cells.values()) == _layout.CELL_CAPACITY
    calls = _comparisons(monkeypatch, lambda: [layout.place(*job) for job in jobs])
    candidates = 25  # at most, per label (label_candidates and the points beside two ends)
    cells = 9  # a candidate label of 40 x 13 px touches at most 3 x 2 cells of 32 px; a margin
    assert calls <= _layout.MAX_LABELS * candidates * cells * _layout.CELL_CAPACITY * 2


@pytest.mark.parametrize(
    ("targets", "predictions", "quota"),
    [
        (3, 4, (3, 4)),
        (100, 100, (100, 100)),
        (600, 600, (100, 100)),
        (30, 600, (30, 170)),
        (600, 10, (190, 10)),
        (0, 900, (0, 200)),
    ],
)
def test_the_label_quota(targets: int, predictions: int, quota: tuple[int, int]) -> None:
    assert _layout.MAX_LABELS == 200
    assert _layout.label_quota(targets, predictions) == quota


def test_a_crowded_picture_labels_the_first_items_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("PIL.Image", reason="Pillow is the optional extra trace-core[viz]")
    pictures: list[Any] = []
    real = _drawing.render_image

    def spy(*args: Any, **kwargs: Any) -> Any:
        canvas, picture = real(*args, **kwargs)
        pictures.append(picture)
        return canvas, picture

    monkeypatch.setattr(_drawing, "render_image", spy)
    rng = random.Random(3)
    targets = {}
    for key in ("a", "b"):  # 2 x 55 targets (one set of 110 would also do; keys keep the assignment small)
        boxes = []
        for _ in range(55):
            x, y = rng.randint(0, 700), rng.randint(0, 500)
            boxes.append([x, y, x + rng.randint(10, 60), y + rng.randint(10, 60)])
        targets[key] = boxes
    predictions = {key: [[v + 2 for v in box] for box in boxes] for key, boxes in targets.items()}
    path = write_lines(tmp_path / "i.jsonl", [instance("crowd", 1, "bbox_set_map", targets, image_size=[800, 600])])
    response = json.dumps({"answer": 1, "annotation": predictions})
    code = main(["explain", "--instance", str(path), "--line", "1", "--response", response, "--png", str(tmp_path / "c.png")])
    out, err = capsys.readouterr()
    assert code == 0, err
    (picture,) = pictures
    assert picture.items == 220
    texts = [text for text, _ in picture.labels]
    assert len(texts) == _layout.MAX_LABELS
    assert sum(t.startswith("T") for t in texts) == sum(t.startswith("P") for t in texts) == 100
    expected = (
        "only the first 100 of 110 targets and the first 100 of 110 predictions are labelled "
        "(at most 200 labels a picture); every item is drawn"
    )
    assert expected in picture.notes
    assert f"note: {expected}" in out
