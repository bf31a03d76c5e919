"""``trace-tasks explain``: the text report and the picture."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, instance, run_cli, write_lines


def test_text_report_of_a_set_with_a_missing_and_a_duplicate_box(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "i.jsonl", [instance("cars", 2, "bbox_set", [[0, 0, 10, 10], [20, 20, 30, 30]])])
    response = 'Two cars.\n```json\n{"answer": "2", "annotation": [[0, 0, 10, 5], [0, 0, 10, 5], [100, 100, 110, 110]]}\n```'
    proc = run_cli("explain", "--instance", str(path), "--id", "cars", "--response", response)
    assert proc.returncode == 0, proc.stderr.decode()
    text = proc.stdout.decode()
    assert 'final block: {"answer": "2"' in text
    assert "format: structure yes, JSON yes, schema yes -> format 1" in text
    assert "candidate used for scoring: the final block" in text
    assert 'predicted "2" -> 2' in text and "expected  2 -> 2" in text and "match: yes" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("  P#", "  (none)"))]
    # Hungarian: one copy of the half box takes T#0 (IoU 0.5); the duplicate and the far box share the rest.
    matched = {r[0]: r for r in rows if "(unmatched)" not in r}
    assert any(r[-1] == "0.5000" and "T#0" in r for r in matched.values())
    assert sum("(unmatched)" in r for r in rows) == 1
    assert "annotation_reward 0.1667" in text  # 0.5 / max(3, 2)
    assert "  Hungarian assignment; IoU" in text
    assert "  formula: (0.5 + 0) / max(3, 2) = 0.1667" in text  # the family's own arithmetic, same result


def test_recovered_candidate_and_schema_diagnostics() -> None:
    response = 'First {"answer": 1}. Then {"answer": 2, "annotation": [0, 0, 10, 10]} and some prose.'
    proc = run_cli("explain", "--instance", str(COMBINED), "--line", "1", "--response", response, "--mode", "answer")
    assert proc.returncode == 0, proc.stderr.decode()
    text = proc.stdout.decode()
    assert "final block: none" in text
    assert "candidate used for scoring: recovered from top-level object 2 of 2" in text


def test_response_from_the_line_and_from_a_file(tmp_path: Path) -> None:
    own = run_cli("explain", "--instance", str(COMBINED), "--line", "1")
    first = json.loads(COMBINED.read_text().splitlines()[0])
    response_file = tmp_path / "r.txt"
    response_file.write_text(first["response"], encoding="utf-8")
    from_file = run_cli("explain", "--instance", str(INSTANCES), "--id", first["id"], "--response", f"@{response_file}")
    assert own.returncode == from_file.returncode == 0
    body = lambda out: out.decode().split("\n", 1)[1]  # noqa: E731 - the first line names the file
    assert body(own.stdout) == body(from_file.stdout)


def test_errors(tmp_path: Path) -> None:
    assert run_cli("explain", "--instance", str(INSTANCES), "--id", "nope", "--response", "x").returncode == 2
    assert run_cli("explain", "--instance", str(INSTANCES), "--line", "1").returncode == 2  # no response anywhere
    assert run_cli("explain", "--instance", str(INSTANCES), "--line", "1", "--response", "x", "--mode", "x").returncode == 2
    bad = instance("bad")
    bad["answer_gt"]["type"] = "integr"
    path = write_lines(tmp_path / "bad.jsonl", [bad])
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--response", "2")
    assert proc.returncode == 1 and b"$.answer_gt.type" in proc.stderr


TARGET_RGB = (0, 160, 0)
PRED_RGB = (220, 30, 30)


def area_of(out: str) -> tuple[int, int, int, int, int]:
    """``(width, height, x, y, scale)`` of the image area, from ``wrote FILE (...; image area WxH at (x, y), scale xS)``."""
    found = re.search(r"image area (\d+)x(\d+) at \((\d+), (\d+)\), scale x(\d+)", out)
    assert found, out
    w, h, x, y, scale = map(int, found.groups())
    return w, h, x, y, scale


def pixel(image: object, out: str, x: float, y: float) -> tuple[int, int, int]:
    """The colour at source pixel ``(x, y)`` of a picture ``explain`` reported in ``out``."""
    _, _, ox, oy, scale = area_of(out)
    return image.convert("RGB").getpixel((round(ox + scale * x), round(oy + scale * y)))  # type: ignore[attr-defined, no-any-return]


def test_png_draws_targets_and_predictions_where_the_boxes_are(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image", reason="Pillow is the optional extra trace-core[viz]")
    path = write_lines(tmp_path / "i.jsonl", [instance("b", 1, "bbox", [100, 100, 200, 200], image_size=[320, 240])])
    png = tmp_path / "out.png"
    response = '{"answer": 1, "annotation": [120, 110, 220, 210]}'
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--response", response, "--png", str(png))
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    # A small canvas is scaled up by a whole factor (320 -> 640) under a header with the reward breakdown.
    assert area_of(out)[0:2] == (640, 480) and area_of(out)[4] == 2
    with pil.open(png) as image:
        assert image.size[0] == 640 and image.size[1] > 480 + area_of(out)[3]
        assert pixel(image, out, 100, 150) == TARGET_RGB  # left edge of the target
        assert pixel(image, out, 150, 200) == TARGET_RGB  # bottom edge of the target
        assert pixel(image, out, 120, 160) == PRED_RGB  # left edge of the prediction
        assert pixel(image, out, 220, 160) == PRED_RGB  # right edge of the prediction
        assert pixel(image, out, 10, 10) == (255, 255, 255)  # blank canvas elsewhere


def test_png_canvas_defaults_and_background_image(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image", reason="Pillow is the optional extra trace-core[viz]")
    path = write_lines(tmp_path / "i.jsonl", [instance("p", 1, "point_set", [[50, 50], [300, 300]])])
    png = tmp_path / "points.png"
    proc = run_cli(
        "explain",
        "--instance",
        str(path),
        "--line",
        "1",
        "--response",
        '{"answer": 1, "annotation": [[52, 50]]}',
        "--png",
        str(png),
    )
    assert proc.returncode == 0, proc.stderr.decode()
    with pil.open(png) as image:
        assert area_of(proc.stdout.decode())[0:2] == (640, 480)  # no image size given
        assert image.size[0] == 640
    background = tmp_path / "bg.png"
    pil.new("RGB", (400, 300), (10, 20, 30)).save(background)
    png2 = tmp_path / "over.png"
    proc = run_cli(
        "explain", "--instance", str(path), "--line", "1", "--response", "{}", "--png", str(png2), "--image", str(background)
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    with pil.open(png2) as image:
        assert area_of(out)[0:2] == (800, 600)  # 400x300 scaled up twice
        assert pixel(image, out, 5, 5) == (10, 20, 30)
        # Nothing predicted: the two targets are still drawn (a circle of radius 6 around each point, 3 px wide).
        _, _, ox, oy, _ = area_of(out)
        assert image.convert("RGB").getpixel((ox + 100 + 5, oy + 100)) == TARGET_RGB


def test_png_without_pillow_names_the_extra(tmp_path: Path) -> None:
    # Pillow failing to import (a None entry in sys.modules, for this call only) stands in for a missing Pillow.
    proc = run_cli(
        "explain",
        "--instance",
        str(COMBINED),
        "--line",
        "1",
        "--png",
        str(tmp_path / "x.png"),
        without=["PIL", "PIL.Image", "PIL.ImageDraw"],
    )
    assert proc.returncode == 2
    assert b"pip install 'trace-core[viz]'" in proc.stderr
