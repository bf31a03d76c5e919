"""audit's image-blind policies written in the declared frame (issue 35, item 1).

A model writing ``rel1000`` (or any other frame) writes the whole image as the
frame's extent, not as pixels: the audit writes each whole-image item in the
frame, so every frame's audit earns exactly what the pixel audit earns, on
every official type of the example data. The mean-box policies average other
images' pixel targets, which have no one frame: they are left out, and said so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli

INSTANCES = Path(__file__).resolve().parents[2] / "examples" / "data" / "instances.jsonl"


def _audit(tmp_path: Path, frame: str) -> dict[tuple[str, str], dict[str, object]]:
    out = tmp_path / f"{frame}.json"
    done = run_cli("audit", str(INSTANCES), "--json", str(out), "--prediction-frame", frame)
    assert done.returncode in (0, 1), done.stderr
    return {(e["annotation_type"], e["policy"]): e for e in json.loads(out.read_text())["policies"]}


@pytest.mark.parametrize("frame", ["rel1000", "rel999", "rel1", "resized", "rel1000_yx"])
def test_whole_image_policies_earn_what_they_earn_in_pixels(tmp_path: Path, frame: str) -> None:
    pixel, framed = _audit(tmp_path, "pixel"), _audit(tmp_path, frame)
    whole = [key for key in pixel if "whole-image" in key[1]]
    assert len({key[0] for key in whole}) >= 10  # every official type of the example data
    for key in whole:
        assert framed[key]["rows"] == pixel[key]["rows"]
        assert framed[key]["mean_annotation_reward"] == pytest.approx(pixel[key]["mean_annotation_reward"], abs=1e-9), key
    mean_box = [key for key in framed if "mean-box" in key[1]]
    assert mean_box and all(framed[key]["rows"] == 0 and "pixels_only" in framed[key]["skipped"] for key in mean_box)
    assert any(pixel[key]["rows"] for key in mean_box)
