"""``trace-tasks audit``: the policies' numbers equal ``score_trace_response`` on the same responses.

The expected numbers are computed here on their own: the groups, majorities,
whole-image annotations and means are rebuilt from the raw instance dicts, and
every response is scored by the public ``score_trace_response``.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import INSTANCES, instance, run_cli, write_lines
from trace_tasks import score_trace_response

SHAPES = {
    "bbox": "scalar",
    "point": "scalar",
    "segment": "scalar",
    "bbox_set": "set",
    "point_set": "set",
    "segment_set": "set",
    "bbox_sequence": "sequence",
    "point_sequence": "sequence",
    "bbox_map": "map",
    "point_map": "map",
    "bbox_set_map": "set_map",
    "point_set_map": "set_map",
}


def _instances(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _majority(values: list[Any]) -> Any:
    counts = collections.Counter(json.dumps(v, sort_keys=True) for v in values)
    top = max(counts.values())
    return next(v for v in values if counts[json.dumps(v, sort_keys=True)] == top)  # first in file order


def _whole(inst: dict[str, Any]) -> Any:
    w, h = inst["image_size"]
    kind = inst["annotation_gt"]["type"]
    item = {"bbox": [0, 0, w, h], "point": [w / 2, h / 2], "segment": [[0, 0], [w, h]]}[kind.split("_")[0]]
    shape, value = SHAPES[kind], inst["annotation_gt"]["value"]
    if shape == "scalar":
        return item
    if shape in ("set", "sequence"):
        return [item]
    if shape == "map":
        return dict.fromkeys(value, item)
    return {key: [item] for key in value}


def _score(inst: dict[str, Any], obj: dict[str, Any], **options: Any) -> dict[str, float]:
    fields = {k: inst.get(k) for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")}
    return score_trace_response(response=json.dumps(obj), **fields, **options)


def expected(instances: list[dict[str, Any]], **options: Any) -> dict[tuple[str, str], tuple[int, float]]:
    """``(annotation type, policy) -> (rows, mean overall)`` for the policies the issue defines."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for inst in instances:
        groups.setdefault((inst["answer_gt"]["type"], inst["annotation_gt"]["type"]), []).append(inst)
    scores: dict[tuple[str, str], list[float]] = {}
    for (_, kind), members in groups.items():
        majority = _majority([m["answer_gt"]["value"] for m in members])
        for m in members:
            own = m["answer_gt"]["value"]
            policies = {
                "majority-answer": {"answer": majority},
                "correct-answer+no-annotation": {"answer": own},
                "majority-answer+whole-image": {"answer": majority, "annotation": _whole(m)},
                "correct-answer+whole-image": {"answer": own, "annotation": _whole(m)},
            }
            if SHAPES[kind] == "set":
                policies["majority-answer+empty"] = {"answer": majority, "annotation": []}
            for policy, obj in policies.items():
                scores.setdefault((kind, policy), []).append(_score(m, obj, **options)["overall"])
    return {key: (len(values), sum(values) / len(values)) for key, values in scores.items()}


def _audit(*args: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli("audit", *args, "--json", "-")
    return result.returncode, json.loads(result.stdout), result.stderr.decode()


def _by_key(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(entry["annotation_type"], entry["policy"]): entry for entry in report["policies"]}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"trace_annotation_reward_formula": "additive", "format_weight": 0.1},
        {"trace_reward_mode": "answer"},
    ],
)
def test_audit_numbers_equal_the_scorer(options: dict[str, Any]) -> None:
    flags = {"trace_annotation_reward_formula": "--formula", "format_weight": "--format-weight", "trace_reward_mode": "--mode"}
    argv = [item for key, value in options.items() for item in (flags[key], str(value))]
    code, report, _ = _audit(str(INSTANCES), *argv)
    got = _by_key(report)
    want = expected(_instances(INSTANCES), **options)
    for key, (rows, mean) in want.items():
        assert got[key]["rows"] == rows, key
        assert got[key]["mean_overall"] == pytest.approx(mean, rel=1e-12, abs=1e-12), key
    # Only the extra policies (mean boxes) are beyond the list; nothing the issue defines is missing.
    assert {key for key in got if not key[1].startswith("majority-answer+mean-box")} == set(want)
    flagged = {key for key, entry in got.items() if entry["flagged"]}
    assert flagged == {key for key, entry in got.items() if key[1].startswith("majority-") and entry["mean_overall"] >= 0.2}
    assert code == (1 if flagged else 0)
    assert report["options"]["trace_annotation_reward_formula"] == options.get("trace_annotation_reward_formula", "gated")


def test_mean_box_is_the_other_instances_mean_and_copies_their_common_size(tmp_path: Path) -> None:
    rows = [
        instance("a", 2, "bbox", (0, 0, 10, 10), image_size=[100, 100]),
        instance("b", 2, "bbox", (20, 20, 40, 40), image_size=[100, 100]),
        instance("c", 3, "bbox", (10, 10, 30, 30), image_size=[100, 100]),
        instance("s1", 2, "bbox_set", [[0, 0, 10, 10], [20, 20, 30, 30]], image_size=[100, 100]),
        instance("s2", 2, "bbox_set", [[50, 50, 70, 70], [0, 0, 20, 20]], image_size=[100, 100]),
        instance("s3", 1, "bbox_set", [[40, 40, 60, 60]], image_size=[100, 100]),
    ]
    path = write_lines(tmp_path / "i.jsonl", rows)
    _, report, _ = _audit(str(path), "--threshold", "1")
    got = _by_key(report)
    # a gets the mean of b and c, and so on (the group's majority answer is 2: a, b come first).
    boxes = {"a": [15, 15, 35, 35], "b": [5, 5, 20, 20], "c": [10, 10, 25, 25]}
    overall = [_score(r, {"answer": 2, "annotation": boxes[r["id"]]})["overall"] for r in rows[:3]]
    assert got[("bbox", "majority-answer+mean-box")]["rows"] == 3
    assert got[("bbox", "majority-answer+mean-box")]["mean_overall"] == pytest.approx(sum(overall) / 3, rel=1e-12)
    # s1: the others' boxes average to [30, 30, 50, 50]; their sizes are 2 and 1 (a tie: the first, 2)
    others = {"s1": ([30, 30, 50, 50], 2), "s2": ([20, 20, 33.33, 33.33], 2), "s3": ([17.5, 17.5, 32.5, 32.5], 2)}
    copies = [_score(r, {"answer": 2, "annotation": [others[r["id"]][0]] * others[r["id"]][1]})["overall"] for r in rows[3:]]
    assert got[("bbox_set", "majority-answer+mean-box-copies")]["mean_overall"] == pytest.approx(sum(copies) / 3, rel=1e-12)


def test_a_group_of_one_has_no_mean_box(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "i.jsonl", [instance("a", 2, "bbox", (0, 0, 10, 10), image_size=[50, 50])])
    code, report, _ = _audit(str(path))
    entry = _by_key(report)[("bbox", "majority-answer+mean-box")]
    assert (entry["rows"], entry["skipped"]) == (0, {"alone_in_group": 1})
    assert code == 1  # majority-answer: the group's own answer, 0.5
    table = run_cli("audit", str(path)).stdout.decode()
    assert "1 instance(s) alone in their group" in table


def test_ties_go_to_the_first_answer_in_file_order(tmp_path: Path) -> None:
    rows = [instance(f"i{n}", answer, "bbox", (0, 0, 10, 10)) for n, answer in enumerate([5, 7, 7, 5, 9])]
    _, report, _ = _audit(str(write_lines(tmp_path / "i.jsonl", rows)))
    assert report["groups"][0]["majority_answer"] == 5
    assert _by_key(report)[("bbox", "majority-answer")]["mean_answer_reward"] == pytest.approx(2 / 5)


def test_whole_image_needs_a_size_and_says_so(tmp_path: Path) -> None:
    rows = [
        instance("a", 2, "bbox", (0, 0, 10, 10), image_size=[40, 40]),
        instance("b", 2, "bbox", (0, 0, 10, 10)),
    ]
    path = write_lines(tmp_path / "i.jsonl", rows)
    _, report, _ = _audit(str(path))
    got = _by_key(report)
    for policy in ("majority-answer+whole-image", "correct-answer+whole-image"):
        assert got[("bbox", policy)]["rows"] == 1
        assert got[("bbox", policy)]["skipped"] == {"no_image_size": 1}
    assert got[("bbox", "majority-answer")]["rows"] == 2
    whole = _score(rows[0], {"answer": 2, "annotation": [0, 0, 40, 40]})["overall"]
    assert got[("bbox", "correct-answer+whole-image")]["mean_overall"] == pytest.approx(whole)
    assert report["groups"][0]["without_image_size"] == 1
    assert "1 instance(s) without an image size, left out" in run_cli("audit", str(path)).stdout.decode()


def test_invalid_instances_are_named_and_left_out(tmp_path: Path) -> None:
    rows: list[Any] = [instance("ok", 2), instance("bad", 2, "bbox", (0, 0, 0, 10)), "not json"]
    code, report, err = _audit(str(write_lines(tmp_path / "i.jsonl", rows)), "--threshold", "1")
    assert code == 1
    assert report["instances"] == 1
    assert any("line 2" in p and "zero-area" in p for p in report["instance_problems"])
    assert "i.jsonl line 2: $.annotation_gt.value" in err
    assert "line 3" in err


def test_threshold_and_exit_code(tmp_path: Path) -> None:
    rows = [instance(f"i{n}", n, "bbox", (0, 0, 10, 10)) for n in range(10)]  # the majority answer is right once in 10
    path = write_lines(tmp_path / "i.jsonl", rows)
    code, report, _ = _audit(str(path))
    assert code == 0 and not report["flagged"]
    assert _by_key(report)[("bbox", "majority-answer")]["mean_overall"] == pytest.approx(0.05)
    code, report, _ = _audit(str(path), "--threshold", "0.05")
    assert code == 1 and _by_key(report)[("bbox", "majority-answer")]["flagged"]
    assert not _by_key(report)[("bbox", "correct-answer+no-annotation")]["flagged"]  # a reference, never flagged


def test_a_combined_file_is_audited_once_per_id(tmp_path: Path) -> None:
    rows = [{**instance("a", 2), "response": "x"}, {**instance("a", 2), "response": "y"}, instance("b", 3)]
    _, report, _ = _audit(str(write_lines(tmp_path / "c.jsonl", rows)))
    assert report["instances"] == 2 and report["repeated_ids_skipped"] == 1


def test_bad_options_exit_2() -> None:
    result = run_cli("audit", str(INSTANCES), "--format-weight", "2")
    assert result.returncode == 2 and b"format_weight" in result.stderr
    assert run_cli("audit", str(INSTANCES), "--threshold", "1.5").returncode == 2


def test_table_on_stdout_json_to_file(tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    result = run_cli("audit", str(INSTANCES), "--json", str(out))
    text = result.stdout.decode()
    assert "bbox_set: 3 instance(s)" in text and "FLAGGED" in text
    assert json.loads(out.read_text())["policies"]
