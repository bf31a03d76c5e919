"""``trace-tasks validate`` warns on the authoring rules: the line format, ``--strict``, ``--json``, ``--group-by``, the summary.

The dataset of issue 26 in small: every breach a new user made (normalised
targets, a count that disagrees with its one box, duplicate points, a one-key
map, a missing image file, points without an image size) is warned by rule id
while the file still validates; the same dataset repaired is silent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.helpers import instance, run_cli, write_lines


def _counting(n: int) -> list[dict[str, Any]]:
    """``n`` counting instances that agree: answer = number of boxes (1 to 3)."""
    rows = []
    for i in range(n):
        size = 1 + i % 3
        boxes = [[20 * k, 20 * k, 20 * k + 10, 20 * k + 10] for k in range(1, size + 1)]
        rows.append(instance(f"count-{i}", answer=size, annotation_type="bbox_set", value=boxes, image_size=[640, 480]))
    return rows


def _breaches(tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "img").mkdir(exist_ok=True)
    (tmp_path / "img" / "there.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return [
        *_counting(12),
        instance("miscount", answer=3, annotation_type="bbox_set", value=[[10, 10, 60, 60]], image_size=[640, 480]),
        instance("normalised", annotation_type="bbox", value=[0.1, 0.2, 0.5, 0.6], image_size=[640, 480]),
        instance("dup", "A", "point_set", [[5, 5], [5, 5], [9, 9]], "option_letter", image_size=[640, 480]),
        instance("one-key", "A", "bbox_map", {"answer_endpoint": [1, 2, 30, 40]}, "option_letter", image_size=[640, 480]),
        instance("no-image", annotation_type="bbox", value=[10, 20, 30, 40], image_size=[640, 480], image="img/gone.png"),
        instance("no-size", "B", "point", [100, 200], "option_letter"),
    ]


def _repaired(tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "img").mkdir(exist_ok=True)
    (tmp_path / "img" / "there.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return [
        *_counting(12),
        instance("miscount", answer=1, annotation_type="bbox_set", value=[[10, 10, 60, 60]], image_size=[640, 480]),
        instance("normalised", annotation_type="bbox", value=[64, 96, 320, 288], image_size=[640, 480]),
        instance("dup", "A", "point_set", [[5, 5], [7, 5], [9, 9]], "option_letter", image_size=[640, 480]),
        instance("one-key", "A", "bbox", [1, 2, 30, 40], "option_letter", image_size=[640, 480]),
        instance("no-image", annotation_type="bbox", value=[10, 20, 30, 40], image_size=[640, 480], image="img/there.png"),
        instance("no-size", "B", "point", [100, 200], "option_letter", image_size=[640, 480]),
    ]


def test_each_breach_is_a_warning_with_file_line_rule_and_path(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    path = write_lines(folder / "bad.jsonl", _breaches(folder))
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0, proc.stdout.decode()
    lines = proc.stdout.decode().splitlines()
    name = str(path)
    expected = [
        f"{name}:14: warning[normalized-coordinates]: $.annotation_gt.value: every coordinate of the target is within [0, 1]",
        f"{name}:15: warning[duplicate-items]: $.annotation_gt.value[1]: equals item [0] of the set",
        f"{name}:16: warning[single-key-map]: $.annotation_gt.value: a bbox_map with one key ('answer_endpoint')",
        f"{name}:17: warning[image-missing]: $.image: 'img/gone.png' names no file",
        f"{name}:18: warning[missing-image-size]: $.image_size: missing, and metadata holds no image size either",
        f"{name}:13: warning[count-mismatch]: $.answer_gt.value: the answer is 3 but the bbox_set target holds 1 item",
    ]
    assert len(lines) == len(expected) + 1, lines
    for got, want in zip(lines, expected, strict=False):
        assert got.startswith(want), (got, want)
    assert "12 of the 13 instances with an integer answer and a bbox_set annotation" in lines[5]
    assert lines[-1] == (
        "18 lines checked in 1 file: 0 problems, 6 warnings (count-mismatch 1, duplicate-items 1, image-missing 1, "
        "missing-image-size 1, normalized-coordinates 1, single-key-map 1)"
    )


def test_the_repaired_dataset_is_silent(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "good.jsonl", _repaired(tmp_path))
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines() == ["18 lines checked in 1 file: 0 problems, 0 warnings"]
    assert run_cli("validate", "--strict", str(path)).returncode == 0


def test_strict_makes_warnings_count_as_problems(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "bad.jsonl", _breaches(tmp_path))
    proc = run_cli("validate", "--strict", "-q", str(path))
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines() == [
        "18 lines checked in 1 file: 0 problems, 6 warnings (count-mismatch 1, duplicate-items 1, image-missing 1, "
        "missing-image-size 1, normalized-coordinates 1, single-key-map 1); --strict: warnings count as problems"
    ]


def test_problems_keep_their_form_beside_warnings(tmp_path: Path) -> None:
    zero_area = instance("zero", value=(5, 0, 5, 10))
    path = write_lines(tmp_path / "mixed.jsonl", [zero_area, instance("norm", value=[0.1, 0.1, 0.2, 0.2], image_size=[640, 480])])
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith(f"{path}:1: $.annotation_gt.value: does not parse as bbox: zero-area box")
    assert lines[1].startswith(f"{path}:2: warning[normalized-coordinates]: $.annotation_gt.value: ")
    assert lines[-1] == "2 lines checked in 1 file: 1 problem on 1 line, 1 warning (normalized-coordinates 1)"


def test_a_group_warning_names_the_file_only(tmp_path: Path) -> None:
    rows = [instance(f"s{i}", "B", "bbox_set", [[i, i, i + 9, i + 9]], "option_letter") for i in range(4)]
    path = write_lines(tmp_path / "sets.jsonl", rows)
    proc = run_cli("validate", str(path))
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith(
        f"{path}: warning[single-item-set]: all 4 instances with an option_letter answer and a bbox_set annotation "
        "have a set target of exactly one item (lines 1, 2, 3, 4)"
    )
    assert lines[-1] == "4 lines checked in 1 file: 0 problems, 1 warning (single-item-set 1)"


def test_json_carries_every_finding_with_its_rule(tmp_path: Path) -> None:
    rows = [*_breaches(tmp_path), instance("zero", value=(5, 0, 5, 10))]
    path = write_lines(tmp_path / "bad.jsonl", rows)
    proc = run_cli("validate", "--json", str(path))
    assert proc.returncode == 1
    records = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    *findings, summary = records
    warnings = [r for r in findings if r["kind"] == "warning"]
    problems = [r for r in findings if r["kind"] == "problem"]
    assert sorted(r["rule"] for r in warnings) == [
        "count-mismatch",
        "duplicate-items",
        "image-missing",
        "missing-image-size",
        "normalized-coordinates",
        "single-key-map",
    ]
    assert all(r["file"] == str(path) and isinstance(r["line"], int) and r["message"] for r in findings)
    assert [(r["line"], r["path"], r["rule"]) for r in problems] == [(19, "$.annotation_gt.value", None)]
    assert summary == {
        "kind": "summary",
        "files": 1,
        "lines": 19,
        "problems": 1,
        "lines_with_problems": 1,
        "warnings": 6,
        "warnings_by_rule": {
            "count-mismatch": 1,
            "duplicate-items": 1,
            "image-missing": 1,
            "missing-image-size": 1,
            "normalized-coordinates": 1,
            "single-key-map": 1,
        },
        "strict": False,
        "passed": False,
    }
    quiet = run_cli("validate", "--json", "-q", "--strict", str(path)).stdout.decode().splitlines()
    assert len(quiet) == 1 and json.loads(quiet[0])["strict"] is True


def test_group_by_compares_instances_of_one_task(tmp_path: Path) -> None:
    counted = [{**row, "metadata": {"task": "count"}} for row in _counting(6)]
    more = [
        instance(f"more-{i}", answer=5 + i, annotation_type="bbox_set", value=boxes, image_size=[640, 480])
        for i, boxes in enumerate(([[1, 1, 9, 9]], [[1, 1, 9, 9], [20, 20, 29, 29]], [[1, 1, 9, 9]]))
    ]
    more = [{**row, "metadata": {"task": "more_than"}} for row in more]
    path = write_lines(tmp_path / "tasks.jsonl", counted + more)
    merged = run_cli("validate", str(path)).stdout.decode().splitlines()
    assert [line.split(": ")[0] for line in merged[:-1]] == [f"{path}:7", f"{path}:8", f"{path}:9"]
    grouped = run_cli("validate", "--group-by", "metadata.task", str(path)).stdout.decode().splitlines()
    assert grouped == ["9 lines checked in 1 file: 0 problems, 0 warnings"]


def test_stdin_looks_for_images_from_the_current_directory(tmp_path: Path) -> None:
    data = (json.dumps(instance("i", image="surely/not/here.png")) + "\n").encode()
    proc = run_cli("validate", "-", stdin=data)
    assert proc.returncode == 0
    first = proc.stdout.decode().splitlines()[0]
    assert first.startswith("<stdin>:1: warning[image-missing]: $.image: 'surely/not/here.png' names no file")
    assert "(tried from the current directory)" in first


def test_prediction_frame_needs_each_instance_image_size(tmp_path: Path) -> None:
    # Issue 35: a frame other than pixel converts predictions with the image size, so validate refuses an instance
    # without one, naming the frame; the default frame (and a sized instance) is unchanged.
    path = write_lines(tmp_path / "d.jsonl", [instance("sized", image_size=[640, 480]), instance("blind")])
    done = run_cli("validate", str(path))
    assert done.returncode == 0 and b"prediction_frame" not in done.stdout
    done = run_cli("validate", str(path), "--prediction-frame", "rel1000")
    out = done.stdout.decode()
    assert done.returncode == 1
    assert f"{path}:2: $.image_size: missing: prediction_frame 'rel1000' needs the image size" in out
    assert ":1:" not in out and "1 problem on 1 line" in out
    done = run_cli("validate", str(path), "--prediction-frame", "rel2")
    assert done.returncode == 2 and b"prediction_frame must be one of" in done.stderr
