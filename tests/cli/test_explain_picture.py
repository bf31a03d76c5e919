"""``trace-tasks explain --png`` explains: the reward breakdown in the header, label placement, scaling,
half-life circles, missing and extra keys, a resized ``--image``, third-party families.

The header's text comes from :mod:`trace_tasks.cli._views.breakdown` (tested here
without Pillow); the placement and the scale from pure functions of
:mod:`trace_tasks.cli._views.drawing`; the rest from pictures, pixel by pixel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import instance, write_lines
from tests.cli.test_explain import area_of
from trace_tasks import score_trace_response
from trace_tasks.cli import main
from trace_tasks.cli._views import drawing as _drawing
from trace_tasks.cli._views import layout as _layout
from trace_tasks.cli._views.breakdown import reward_breakdown

Run = Callable[..., tuple[int, str, str]]
HALF_LIFE_RGB = (120, 200, 120)
TARGET_RGB = (0, 160, 0)


@pytest.fixture
def explain(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """``explain(*args)`` -> ``(code, stdout, stderr)``; the last picture's record is ``explain.picture``."""

    real = _drawing.render_image

    def spy(*args: Any, **kwargs: Any) -> Any:
        canvas, picture = real(*args, **kwargs)
        run.picture = picture  # type: ignore[attr-defined]
        return canvas, picture

    monkeypatch.setattr(_drawing, "render_image", spy)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["explain", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _pil() -> Any:
    return pytest.importorskip("PIL.Image", reason="Pillow is the optional extra trace-core[viz]")


def _scores(response: dict[str, Any], **options: Any) -> dict[str, Any]:
    return score_trace_response(
        response=json.dumps(response),
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "bbox_set", "value": [[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]]},
        reward_contract={
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": "bbox_set_soft_iou_v0", "type": "bbox_set"},
        },
        trace_reward_mode=options.pop("mode", "answer_and_annotation"),
        **options,
    )


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", line)]


# --- the header's text, without Pillow ---


def test_breakdown_of_a_gated_reward_recomputes_overall() -> None:
    scores = _scores({"answer": 2, "annotation": [[0, 0, 10, 5], [20, 20, 30, 30]]})
    lines = reward_breakdown(scores, reward_id="bbox_set_soft_iou_v0", formula="(0.5 + 1) / max(2, 3) = 0.5")
    overall, task, answer, annotation, fmt = lines
    assert overall == "overall 0.75 = task 0.75 (format weight 0)"
    assert task == "task 0.75 = answer 1 x (0.5 + 0.5 x annotation 0.5)  [gated]"
    t, ans, w1, w2, ann = _numbers(task)
    assert t == ans * (w1 + w2 * ann) == scores["task_reward_raw"]  # the line is the formula, with its numbers
    assert answer == "answer right (answer_reward 1): gate open, the annotation counts"
    assert annotation == "annotation 0.5 (bbox_set_soft_iou_v0) = (0.5 + 1) / max(2, 3)"  # the denominator shown
    assert fmt == "format 1 (structure yes, JSON yes, schema yes)"


def test_breakdown_of_a_wrong_answer_says_the_gate_closed() -> None:
    scores = _scores({"answer": 3, "annotation": [[0, 0, 10, 10]]})
    lines = reward_breakdown(scores)
    assert lines[0] == "overall 0 = task 0 (format weight 0)"
    assert lines[2] == "answer wrong (answer_reward 0): gated, the annotation earns nothing"
    assert lines[3].startswith("annotation 0.3333")  # scored, but it does not count


def test_breakdown_additive_answer_mode_and_format_weight() -> None:
    additive = _scores({"answer": 3, "annotation": [[0, 0, 10, 10]]}, trace_annotation_reward_formula="additive")
    assert reward_breakdown(additive)[1] == "task 0.1667 = 0.5 x answer 0 + 0.5 x annotation 0.3333  [additive]"
    assert reward_breakdown(additive)[2].endswith("additive, the annotation counts either way")
    answer_only = _scores({"answer": 2}, mode="answer")
    assert reward_breakdown(answer_only)[1].startswith("task 1 = answer 1 (answer mode")
    blended = _scores({"answer": 2, "annotation": [[0, 0, 10, 10]], "extra": 1}, format_weight=0.2)
    overall = reward_breakdown(blended)[0]
    assert overall.startswith("overall ") and "(1 - 0.2) x task" in overall and "+ 0.2 x format 0" in overall
    value, _, _, task, weight, fmt = _numbers(overall)
    assert value == pytest.approx((1 - weight) * task + weight * fmt, abs=1e-3)
    assert reward_breakdown(blended)[4] == "format 0 (structure yes, JSON yes, schema no)"


def test_breakdown_of_an_unparsed_annotation_and_a_hostile_row() -> None:
    no_json = _scores({"answer": 2})
    no_json_line = reward_breakdown(score_trace_response(
        response="just prose", answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "bbox", "value": [0, 0, 1, 1]},
        reward_contract={"reward_contract_version": "v0", "answer": {"id": "answer_exact_match_v0", "type": "integer"},
                         "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"}},
        trace_reward_mode="annotation",
    ))[3]  # fmt: skip
    assert no_json_line == "annotation 0: not scored (no JSON found; annotation_parse_ok 0)"
    assert "no annotation predicted, or it does not parse" in reward_breakdown(no_json)[3]
    # A row read from a file can hold anything: never an exception, unknown numbers are '?'.
    lines = reward_breakdown({"overall": "high", "format_weight": None, "answer_reward": float("nan")}, formula=["x"])
    assert lines[0] == "overall ? = task ? (format weight 0)" and "answer_reward ?" in lines[2]


# --- pure layout ---


def test_small_images_are_scaled_up_by_a_whole_factor() -> None:
    assert [_drawing.area_scale(w, h) for w, h in [(320, 240), (120, 90), (480, 100), (4000, 3000), (1, 1), (0, 0)]] == [
        2, 4, 1, 1, 16, 16,
    ]  # fmt: skip


def test_greedy_placement_keeps_labels_apart_and_inside() -> None:
    area = (0.0, 0.0, 200.0, 100.0)
    bbox = (150.0, 0.0, 200.0, 20.0)  # in the top-right corner: above and right are off the area
    placed: list[tuple[float, float, float, float]] = []
    for _ in range(6):  # six labels for the same item compete for the same places
        rect = _layout.place_label(bbox, (40.0, 12.0), False, placed, [bbox], area)
        assert area[0] <= rect[0] and rect[2] <= area[2] and area[1] <= rect[1] and rect[3] <= area[3]
        assert all(_layout.overlap(rect, other) == 0 for other in placed)
        placed.append(rect)
    # The first one goes to the preferred side that fits (below, since above is off the area), next to the item.
    assert placed[0] == (150.0, 28.0, 190.0, 40.0)


def test_a_long_segments_label_goes_by_one_of_its_ends() -> None:
    area = (0.0, 0.0, 800.0, 600.0)
    ends = [(60.0, 370.0), (650.0, 480.0)]  # a long diagonal: its bounding box's corners are far from the line
    bbox = (60.0, 370.0, 650.0, 480.0)
    rect = _layout.place_label(bbox, (90.0, 12.0), True, [], [bbox], area, ends)
    assert min(_layout._distance(rect, end) for end in ends) <= 12


# --- pictures ---


def _instance_file(tmp_path: Path, annotation_type: str, value: Any, **extra: Any) -> Path:
    return write_lines(tmp_path / f"{annotation_type}.jsonl", [instance("x", 1, annotation_type, value, **extra)])


def test_half_life_circles_around_target_points(tmp_path: Path, explain: Run) -> None:
    pil = _pil()
    path = _instance_file(tmp_path, "point", [100, 100], image_size=[400, 300])
    png = tmp_path / "p.png"
    code, out, err = explain(
        "--instance", str(path), "--line", "1", "--response", json.dumps({"answer": 1, "annotation": [130, 100]}),
        "--png", str(png), "--point-half-life-px", "40",
    )  # fmt: skip
    assert code == 0, err
    _, _, ox, oy, scale = area_of(out)
    with pil.open(png) as image:
        rgb = image.convert("RGB")
        # The dashed circle of radius 40 source pixels: its dash at angle 0 is 40 px right of the target.
        x, y = ox + scale * (100 + 40), oy + scale * 100
        near = [rgb.getpixel((x + dx, y + dy)) for dx in (-1, 0, 1) for dy in (-1, 0, 1, 2, 3)]
        assert HALF_LIFE_RGB in near
        legend = [rgb.getpixel((i, j)) for i in range(image.width) for j in range(oy + 300 * scale, image.height)]
        assert HALF_LIFE_RGB in legend  # the legend has its entry
    assert explain.picture.header[1:3] == (  # type: ignore[attr-defined]
        f"overall {_num(out, 'overall')} = task {_num(out, 'task_reward_raw')} (format weight 0)",
        f"task {_num(out, 'task_reward_raw')} = answer 1 x (0.5 + 0.5 x annotation {_num(out, 'annotation_reward')})  [gated]",
    )
    # IoU families get no half-life circle.
    box = _instance_file(tmp_path, "bbox", [10, 10, 50, 50], image_size=[400, 300])
    code, out, _ = explain("--instance", str(box), "--line", "1", "--response", "{}", "--png", str(png))
    with pil.open(png) as image:
        assert HALF_LIFE_RGB not in {colour for _, colour in image.convert("RGB").getcolors(maxcolors=1 << 24)}


def _num(out: str, key: str) -> str:
    found = re.search(rf"\b{key} ([0-9.e-]+)", out.split("\nReward\n", 1)[1])
    assert found, key
    return found.group(1)


def test_missing_and_extra_keys_are_marked(tmp_path: Path, explain: Run) -> None:
    _pil()
    path = _instance_file(tmp_path, "bbox_map", {"left": [10, 10, 50, 50], "right": [100, 10, 150, 50]}, image_size=[200, 100])
    response = json.dumps({"answer": 1, "annotation": {"left": [12, 10, 50, 50], "middle": [60, 10, 90, 50]}})
    code, _, err = explain("--instance", str(path), "--line", "1", "--response", response, "--png", str(tmp_path / "m.png"))
    assert code == 0, err
    texts = {text for text, _ in explain.picture.labels}  # type: ignore[attr-defined]
    assert texts == {"T[left]", "T[right] missing key", "P[left] IoU 0.95", "P[middle] extra key"}
    assert any("/ 3 keys" in line for line in explain.picture.header)  # type: ignore[attr-defined]


def test_an_image_of_another_size_is_resized_to_the_instance_frame_and_said(tmp_path: Path, explain: Run) -> None:
    pil = _pil()
    background = tmp_path / "bg.png"
    pil.new("RGB", (200, 150), (10, 20, 30)).save(background)
    path = _instance_file(tmp_path, "bbox", [100, 100, 300, 200], image_size=[400, 300])
    png = tmp_path / "o.png"
    code, out, err = explain(
        "--instance", str(path), "--line", "1", "--response", "{}", "--png", str(png), "--image", str(background)
    )
    assert code == 0, err
    assert "note: the image is 200x150 but the instance's image_size is 400x300: it is drawn resized" in out
    _, _, ox, oy, scale = area_of(out)
    assert area_of(out)[:2] == (800, 600)
    with pil.open(png) as image:
        rgb = image.convert("RGB")
        assert rgb.getpixel((ox + scale * 100, oy + scale * 150)) == TARGET_RGB  # in the instance's frame: not clipped
        assert rgb.getpixel((ox + scale * 390, oy + scale * 290)) == (10, 20, 30)  # the image fills the frame


def test_a_third_party_family_draws_with_the_header_and_the_frame_note(
    tmp_path: Path, explain: Run, register: Any, circle_plugin: Any
) -> None:
    pil = _pil()
    register(circle_plugin, "circle-example")
    path = _instance_file(tmp_path, "circle_set", [[100, 100, 40]], image_size=[320, 240])
    response = json.dumps({"answer": 1, "annotation": [[0.3, 0.4, 0.1]]})
    png = tmp_path / "c.jpg"
    code, out, err = explain("--instance", str(path), "--line", "1", "--response", response, "--png", str(png))
    assert code == 0, err
    assert "note: every predicted coordinate is within [0, 1]: normalised 0-1 coordinates?" in out
    assert png.read_bytes()[:3] == b"\xff\xd8\xff"  # a .jpg name is real JPEG
    picture = explain.picture  # type: ignore[attr-defined]
    assert picture.header[0] == "x: circle_set (circle_set_soft_iou_v0)" and picture.header[4].startswith("annotation 0 (")
    with pil.open(png) as image:
        assert image.format == "JPEG" and image.size[1] == picture.height
