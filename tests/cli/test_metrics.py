"""The field metrics of ``score --summary-json``, each against a computation of its own.

The expected values are worked out here from the geometry of hand-made cases
(an IoU written out below, distances against a fixed half-life), never from
the scorer; the scores themselves must not change when metrics are computed.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, instance, read_jsonl, run_cli, two_pool_chunks, write_lines
from trace_tasks.runs._summary import Summary

#: The group statistics under ``metrics`` (overall, and per type with groups).
GROUP_KEYS = (
    "groups",
    "zero_variance_groups_share",
    "pass@k",
    "group_std_mean",
    "majority@k",
    "majority_groups",
    "zero_variance_all_wrong_answer",
    "zero_variance_all_unparsed",
    "zero_variance_identical_other",
)


def _iou(a: list[float], b: list[float]) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def _row(
    id: str, kind: str, target: Any, annotation: Any = None, *, answer: Any = 2, response: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {"answer": answer}
    if annotation is not None:
        obj["annotation"] = annotation
    return {**instance(id, 2, kind, target), "response": json.dumps(obj) if response is None else response}


def _summary(tmp_path: Path, rows: list[dict[str, Any]], *args: str) -> dict[str, Any]:
    path = write_lines(tmp_path / "in.jsonl", rows)
    summary = tmp_path / "summary.json"
    result = run_cli("score", str(path), "-q", "-o", str(tmp_path / "out.jsonl"), "--summary-json", str(summary), *args)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(summary.read_text())  # type: ignore[no-any-return]


def _metrics(summary: dict[str, Any], kind: str) -> dict[str, float]:
    return summary["by_annotation_type"][kind]["metrics"]  # type: ignore[no-any-return]


def test_bbox_accuracy_at_iou(tmp_path: Path) -> None:
    target = [0, 0, 100, 100]
    boxes = [[0, 0, 100, 100], [0, 0, 100, 60], [0, 0, 100, 30]]
    ious = [_iou(b, target) for b in boxes]
    assert ious == [1.0, 0.6, pytest.approx(0.3)]
    rows = [_row(f"b{i}", "bbox", target, box) for i, box in enumerate(boxes)]
    rows.append(_row("b3", "bbox", target, [5, 5, 5, 50]))  # zero area: does not parse, a miss
    rows.append(_row("b4", "bbox", target, response="no json at all"))  # nothing predicted: a miss
    rows.append(_row("b5", "bbox", target, [0, 0, 100, 100], answer=3))  # a wrong answer: the box still counts
    got = _metrics(_summary(tmp_path, rows), "bbox")
    n = len(rows)
    assert got["acc@iou0.5"] == pytest.approx(sum(iou >= 0.5 for iou in [*ious, 0, 0, 1]) / n)
    assert got["acc@iou0.75"] == pytest.approx(sum(iou >= 0.75 for iou in [*ious, 0, 0, 1]) / n)
    assert got["answer_accuracy"] == pytest.approx(4 / 6)  # b4 has no answer, b5 a wrong one
    assert "size_mae" not in got


def _f1(hits: int, predicted: int, targets: int) -> float:
    if predicted == targets == 0:
        return 1.0
    if predicted == 0 or targets == 0:
        return 0.0
    p, r = hits / predicted, hits / targets
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def test_bbox_set_f1_and_size_error(tmp_path: Path) -> None:
    a, b = [0, 0, 10, 10], [50, 50, 60, 60]
    half = [50, 50, 60, 56]  # IoU 0.6 with b: a hit at 0.5, not at 0.75
    far = [200, 200, 210, 210]
    assert _iou(half, b) == pytest.approx(0.6)
    cases = [  # (target, prediction, hits at 0.5, hits at 0.75)
        ([a, b], [a, b], 2, 2),
        ([a, b], [a], 1, 1),
        ([a, b], [a, far], 1, 1),
        ([a, b], [a, half], 2, 1),
        ([a, b], [], 0, 0),
        ([], [], 0, 0),
        ([], [a], 0, 0),
    ]
    rows = [_row(f"s{i}", "bbox_set", t, p) for i, (t, p, _, _) in enumerate(cases)]
    rows.append(_row("s-unparsed", "bbox_set", [a, b], "not boxes"))
    got = _metrics(_summary(tmp_path, rows), "bbox_set")
    n = len(rows)
    f1_50 = [_f1(h, len(p), len(t)) for t, p, h, _ in cases] + [0.0]  # unparsed: nothing predicted
    f1_75 = [_f1(h, len(p), len(t)) for t, p, _, h in cases] + [0.0]
    assert got["f1@iou0.5"] == pytest.approx(sum(f1_50) / n)
    assert got["f1@iou0.75"] == pytest.approx(sum(f1_75) / n)
    sizes = [abs(len(p) - len(t)) for t, p, _, _ in cases]  # the unparsed row has no predicted size
    assert got["size_mae"] == pytest.approx(sum(sizes) / len(sizes))


def test_map_keys_missing_and_extra_count_as_items(tmp_path: Path) -> None:
    a, b = [0, 0, 10, 10], [50, 50, 60, 60]
    target = {"x": a, "y": b}
    cases = [  # (prediction, hits, predicted items, target items)
        ({"x": a, "y": b}, 2, 2, 2),
        ({"x": a}, 1, 1, 2),  # y missing
        ({"x": a, "z": b}, 1, 2, 2),  # y missing, z extra
        ({"x": b, "y": a}, 0, 2, 2),  # swapped: paired by key, no overlap
    ]
    rows = [_row(f"m{i}", "bbox_map", target, p) for i, (p, _, _, _) in enumerate(cases)]
    got = _metrics(_summary(tmp_path, rows), "bbox_map")
    assert got["f1@iou0.5"] == pytest.approx(sum(_f1(h, p, t) for _, h, p, t in cases) / len(cases))


def test_points_hit_within_one_half_life(tmp_path: Path) -> None:
    rows = [
        _row("p0", "point", (100, 100), [103, 104]),  # 5 px
        _row("p1", "point", (100, 100), [130, 140]),  # 50 px
        _row("p2", "point", (100, 100), [100, 100]),
        _row("q0", "point_set", [[0, 0], [100, 100]], [[3, 4], [160, 180]]),  # 5 px and 100 px: one hit of 2 and 2
        _row("q1", "point_set", [[0, 0], [100, 100]], [[0, 0]]),  # one hit, 1 predicted, 2 targets
    ]
    summary = _summary(tmp_path, rows, "--point-half-life-px", "10")
    assert _metrics(summary, "point")["acc@sim0.5"] == pytest.approx(2 / 3)
    got = _metrics(summary, "point_set")
    assert got["f1@sim0.5"] == pytest.approx((_f1(1, 2, 2) + _f1(1, 1, 2)) / 2)
    assert got["size_mae"] == pytest.approx((0 + 1) / 2)


def test_segments_and_their_sets(tmp_path: Path) -> None:
    seg = [[0, 0], [100, 0]]
    rows = [
        _row("g0", "segment", seg, [[0, 2], [100, 2]]),  # ends 2 px away
        _row("g1", "segment", seg, [[0, 80], [100, 80]]),  # 80 px away
        _row("h0", "segment_set", [seg], [[[0, 1], [100, 1]], [[0, 300], [50, 300]]]),
    ]
    summary = _summary(tmp_path, rows, "--point-half-life-px", "10")
    assert _metrics(summary, "segment")["acc@sim0.5"] == pytest.approx(1 / 2)
    assert _metrics(summary, "segment_set")["f1@sim0.5"] == pytest.approx(_f1(1, 2, 1))


def test_zero_variance_groups(tmp_path: Path) -> None:
    box = [0, 0, 10, 10]
    rows = [
        _row("a", "bbox", box, box),
        _row("a", "bbox", box, box),  # a: two equal overall values
        _row("b", "bbox", box, box),
        _row("b", "bbox", box, [0, 0, 10, 5]),  # b: two different ones
        _row("c", "bbox", box, box),  # c: one row, no group
        _row("d", "bbox", box, box, answer=9),
        _row("d", "bbox", box, [0, 0, 5, 5], answer=9),
        _row("d", "bbox", box, response="nothing"),  # d: 0, 0, 0
    ]
    overall = _summary(tmp_path, rows)["overall"]["metrics"]
    assert overall["groups"] == 3
    assert overall["zero_variance_groups_share"] == pytest.approx(2 / 3)
    assert overall["answer_accuracy"] == pytest.approx(5 / 8)


def test_groups_are_consecutive_rows_of_an_id(tmp_path: Path) -> None:
    box = [0, 0, 10, 10]
    rows = [_row(i, "bbox", box, box) for i in ("a", "b", "a", "b")]
    assert _summary(tmp_path, rows)["overall"]["metrics"]["groups"] == 0


def test_scores_are_the_same_with_metrics(tmp_path: Path) -> None:
    plain = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q")
    with_metrics = run_cli(
        "score", str(INSTANCES), "--responses", str(RESPONSES), "-q", "--summary-json", str(tmp_path / "s.json")
    )
    assert plain.stdout == with_metrics.stdout and plain.returncode == with_metrics.returncode == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["overall"]["metrics"]["groups"] == 36  # 3 responses per instance, one after another
    field = {"acc@iou0.5", "acc@iou0.75", "answer_accuracy"}
    assert set(summary["by_annotation_type"]["bbox"]["metrics"]) == field | set(GROUP_KEYS)  # bbox has groups too
    assert set(summary["by_annotation_type"]["bbox"]["metrics_stderr"]) == field


def test_no_metrics_leaves_them_out(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert (
        run_cli(
            "score", str(COMBINED), "-q", "-o", str(tmp_path / "o.jsonl"), "--summary-json", str(out), "--no-metrics"
        ).returncode
        == 0
    )
    summary = json.loads(out.read_text())
    assert "metrics" not in summary["overall"] and "metrics" not in summary["by_annotation_type"]["bbox"]


def _add(summary: Summary, row_id: str, overall: float, kind: str = "bbox") -> None:
    summary.add_scores(kind, {"overall": overall, "accuracy": 1.0})
    summary.add_metrics(kind, row_id, overall, {"answer_accuracy": 1.0, "acc@iou0.5": overall})


def test_summary_merge_is_exact_and_pickles() -> None:
    whole, first, second = Summary(), Summary(), Summary()
    rows = [("a", 1.0), ("a", 1.0), ("b", 0.5), ("b", 0.0), ("c", 0.25), ("c", 0.25)]
    for row_id, overall in rows:
        _add(whole, row_id, overall)
    for row_id, overall in rows[:4]:  # split between groups
        _add(first, row_id, overall)
    for row_id, overall in rows[4:]:
        _add(second, row_id, overall)
    merged = pickle.loads(pickle.dumps(first))
    merged.merge(pickle.loads(pickle.dumps(second)))
    assert merged.to_dict() == whole.to_dict()
    metrics = whole.to_dict()["overall"]["metrics"]
    assert {key: metrics[key] for key in ("answer_accuracy", "groups", "zero_variance_groups_share", "pass@k")} == {
        "answer_accuracy": 1.0,
        "groups": 3,
        "zero_variance_groups_share": 2 / 3,
        "pass@k": 1.0,  # every row has answer_accuracy 1
    }
    assert whole.to_dict() == whole.to_dict()  # reading closes nothing


@pytest.mark.slow
def test_a_process_pool_gives_the_same_metrics(tmp_path: Path) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    source = two_pool_chunks(tmp_path / "many.jsonl", read_jsonl(COMBINED))
    assert run_cli("score", str(source), "-q", "-o", str(tmp_path / "1.jsonl"), "--summary-json", str(one)).returncode == 0
    assert (
        run_cli(
            "score", str(source), "-q", "-o", str(tmp_path / "2.jsonl"), "--summary-json", str(two), "--workers", "2"
        ).returncode
        == 0
    )
    assert json.loads(one.read_text()) == json.loads(two.read_text())
    assert (tmp_path / "1.jsonl").read_bytes() == (tmp_path / "2.jsonl").read_bytes()
