"""The report names the declared frame, and warns about a baseline scored in another frame (issue 35, item 1)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import run_cli

COMBINED = Path(__file__).resolve().parents[2] / "examples" / "data" / "combined.jsonl"


def test_a_baseline_in_another_frame_is_an_option_difference(tmp_path: Path) -> None:
    pixel, framed, html = tmp_path / "p.jsonl", tmp_path / "r.jsonl", tmp_path / "r.html"
    assert run_cli("score", str(COMBINED), "-o", str(pixel), "-q").returncode == 0
    assert run_cli("score", str(COMBINED), "-o", str(framed), "-q", "--prediction-frame", "rel1000").returncode == 0
    assert run_cli("report", str(framed), "--baseline", str(pixel), "-o", str(html)).returncode == 0
    text = html.read_text()
    assert "prediction_frame=rel1000" in text  # the options line
    assert "other scorer options (first scored row of each file): prediction_frame: &#x27;rel1000&#x27; here, " in text
    assert run_cli("report", str(pixel), "--baseline", str(pixel), "-o", str(html)).returncode == 0
    assert "other scorer options" not in html.read_text()
