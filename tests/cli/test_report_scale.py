"""``trace-tasks report``: one y scale across charts with labelled axes, worst cases spread across types,
and a visible warning when the baseline was scored with other options.

The expectations are computed here from the scores rows themselves.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, read_jsonl, run_cli, write_lines
from trace_tasks.cli.report._data import parse_row, worst_spread
from trace_tasks.runs._jsonl import Line


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    out = tmp_path / "scores.jsonl"
    assert run_cli("score", str(COMBINED), "-q", "-o", str(out)).returncode == 0
    return out


def _report(*args: str) -> str:
    result = run_cli("report", *args)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def test_histograms_share_one_scale_and_label_their_axes(tmp_path: Path, scores: Path) -> None:
    html_path = tmp_path / "r.html"
    _report(str(scores), "-o", str(html_path))
    html = html_path.read_text(encoding="utf-8")
    section = html[html.index('id="histograms"') : html.index('id="failures"')]
    charts = re.findall(r'<svg class="hist".*?</svg>', section)
    rows = read_jsonl(scores)
    types = sorted(
        {k[len("annotation_type_") :] for r in rows for k, v in r.items() if k.startswith("annotation_type_") and v == 1.0}
    )
    # A 0/1 component of a type is one share bar, not a histogram (and not on the histograms' scale).
    binary = {
        (kind, key)
        for kind in types
        for key in ("overall", "answer_reward", "annotation_reward", "format")
        if {r[key] for r in rows if r.get(f"annotation_type_{kind}") == 1.0} <= {0, 1}
    }
    assert len(charts) == 4 * len(types) - len(binary)
    assert len(re.findall(r'<svg class="share"', section)) == len(binary)
    # The one scale: the largest share of one bin of any histogram, computed from the rows.
    top = 0.0
    for kind in types:
        mine = [r for r in rows if r.get(f"annotation_type_{kind}") == 1.0]
        for key in ("overall", "answer_reward", "annotation_reward", "format"):
            if (kind, key) in binary:
                continue
            bins = [0] * 10
            for r in mine:
                bins[min(math.floor(r[key] * 10), 9)] += 1
            top = max(top, max(bins) / len(mine))
    label = f"{100 * top:.0f}%"
    for svg in charts:
        assert f">{label}</text>" in svg and ">0%</text>" in svg
        assert "share of rows" in svg and "reward (n = 9)" in svg
        counts = [int(c) for c in re.findall(r'data-count="(\d+)"', svg)]
        heights = [float(h) for h in re.findall(r'height="([\d.]+)" fill', svg)]
        tallest = max(heights)
        for count, height in zip(counts, heights, strict=True):
            # every chart on one scale: a bar's height is its share over the page's top share
            assert height / tallest == pytest.approx((count / sum(counts)) / (max(counts) / sum(counts)), abs=0.02)
        plot = 120 - 26 - 6
        assert max(heights) == pytest.approx(plot * (max(counts) / sum(counts)) / top, abs=0.1)
    assert "on one scale for every chart" in section


def _row(number: int, kind: str, overall: float) -> Any:
    return parse_row(Line(number, {"id": str(number), "line": number, "overall": overall, f"annotation_type_{kind}": 1.0}), "s")


def test_worst_cases_take_turns_across_types() -> None:
    rows = [_row(n, "bbox", 0.0) for n in range(1, 8)]  # seven rows tied at 0
    rows += [_row(8, "point", 0.4), _row(9, "point", 0.1), _row(10, "segment", 0.0), _row(11, "segment", 0.9)]
    picked = worst_spread(rows, 6)
    # bbox (lowest 0.0, line 1) first, then segment (0.0, line 10), then point (0.1): then a second round
    assert [r.number for r in picked] == [1, 10, 9, 2, 11, 8]
    assert [r.number for r in worst_spread(rows, 20)][:3] == [1, 10, 9] and len(worst_spread(rows, 20)) == 11


def test_the_page_spreads_its_worst_cases(tmp_path: Path, scores: Path) -> None:
    html_path = tmp_path / "r.html"
    _report(str(scores), "-o", str(html_path), "--worst", "12", "--sample", "0")
    html = html_path.read_text(encoding="utf-8")
    titles = re.findall(r'<div class="case"[^>]*><h3>([^<]*)</h3>', html)
    assert len({title.split(" · ")[0] for title in titles}) == 12  # twelve types, one case each
    assert "taken in turn from each annotation type" in html


def test_a_baseline_with_other_options_is_warned_about(tmp_path: Path, scores: Path) -> None:
    other = tmp_path / "other.jsonl"
    assert run_cli("score", str(COMBINED), "-q", "-o", str(other), "--format-weight", "0.1").returncode == 0
    html_path = tmp_path / "r.html"
    _report(str(scores), "--baseline", str(other), "-o", str(html_path))
    html = html_path.read_text(encoding="utf-8")
    assert html.count('class="warning" role="alert"') == 2  # at the top and in the comparison
    assert "format_weight: 0.0 here, 0.1 in the baseline" in html
    same = tmp_path / "same.jsonl"
    write_lines(same, [json.loads(line) for line in scores.read_text().splitlines()])
    _report(str(scores), "--baseline", str(same), "-o", str(html_path))
    assert 'class="warning"' not in html_path.read_text(encoding="utf-8")


def test_no_json_is_one_definition_in_score_and_report(tmp_path: Path, scores: Path) -> None:
    summary = tmp_path / "s.json"
    assert run_cli("score", str(COMBINED), "-q", "-o", str(tmp_path / "o.jsonl"), "--summary-json", str(summary)).returncode == 0
    by_type = json.loads(summary.read_text())["by_annotation_type"]
    html_path = tmp_path / "r.html"
    _report(str(scores), "-o", str(html_path))
    html = html_path.read_text(encoding="utf-8")
    failures = html[html.index('id="failures"') : html.index('id="worst"')]
    rows = read_jsonl(scores)
    for kind, totals in by_type.items():
        mine = [r for r in rows if r.get(f"annotation_type_{kind}") == 1.0]
        expected = sum(r["json_found"] == 0.0 for r in mine)  # the scorer's own flag
        assert round(totals["no_json_share"] * totals["count"]) == expected
        row = re.search(rf'<tr data-type="{kind}">(.*?)</tr>', failures)
        assert row is not None
        assert re.findall(r'data-count="(\d+)"', row.group(1))[0] == str(expected)
    assert "final block not an object" in failures and "bad JSON" not in html


def test_the_audit_is_a_section_with_instances(tmp_path: Path) -> None:
    scores_path = tmp_path / "s.jsonl"
    assert run_cli("score", str(COMBINED), "-q", "-o", str(scores_path), "--format-weight", "0.1").returncode == 0
    html_path = tmp_path / "r.html"
    _report(str(scores_path), "--instances", str(COMBINED), "-o", str(html_path))
    html = html_path.read_text(encoding="utf-8")
    section = html[html.index('id="audit"') : html.index('id="worst"')]
    audit = json.loads(run_cli("audit", str(COMBINED), "--format-weight", "0.1", "--json", "-").stdout)
    for entry in audit["policies"]:  # the run's options reach the audit: the numbers are audit's own
        found = re.search(
            rf'<tr data-type="{entry["annotation_type"]}" data-policy="{re.escape(entry["policy"])}"[^>]*>(.*?)</tr>', section
        )
        assert found is not None, entry
        cells = re.findall(r'<td class="n">([^<]*)</td>', found.group(1))
        assert cells[0] == str(entry["rows"]) and cells[1] == f"{entry['mean_overall']:.3f}"
        assert ("FLAGGED" in found.group(1)) == entry["flagged"]
    assert 'role="alert"' in section
    _report(str(scores_path), "--instances", str(COMBINED), "-o", str(html_path), "--no-audit")
    assert 'id="audit"' not in html_path.read_text(encoding="utf-8")
    _report(str(scores_path), "-o", str(html_path))
    assert 'id="audit"' not in html_path.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 420])
def test_screenshots_at_two_widths_are_not_blank(tmp_path: Path, scores: Path, width: int) -> None:
    import shutil
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("needs a headless Chromium: sudo apt-get install chromium (Debian's package)")
    pil = pytest.importorskip("PIL.Image", reason="Pillow is the optional extra trace-core[viz]")
    html_path = tmp_path / "r.html"
    _report(str(scores), "--instances", str(COMBINED), "-o", str(html_path))
    shot = tmp_path / "shot.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND"]
    proc = subprocess.run(
        [chromium, *flags, f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},1600", f"--screenshot={shot}", html_path.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    with pil.open(shot) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (width, 1600)
        colours = rgb.getcolors(maxcolors=1 << 24) or []
        white = sum(count for count, colour in colours if colour == (255, 255, 255))
        assert len(colours) > 50 and white < 0.97 * width * 1600


@pytest.mark.parametrize("layout", ["combined", "joined"])
def test_the_report_shows_the_summary_metrics(tmp_path: Path, layout: str) -> None:
    from tests.cli.helpers import INSTANCES, RESPONSES

    inputs = [str(COMBINED)] if layout == "combined" else [str(INSTANCES), "--responses", str(RESPONSES)]
    scores_path, summary_path = tmp_path / "s.jsonl", tmp_path / "summary.json"
    assert run_cli("score", *inputs, "-q", "-o", str(scores_path), "--summary-json", str(summary_path)).returncode == 0
    summary = json.loads(summary_path.read_text())
    html_path = tmp_path / "r.html"
    report_inputs = (
        ["--instances", str(COMBINED)] if layout == "combined" else ["--instances", str(INSTANCES), "--responses", str(RESPONSES)]
    )
    _report(str(scores_path), *report_inputs, "-o", str(html_path))
    html = html_path.read_text(encoding="utf-8")
    section = html[html.index('id="metrics"') : html.index('id="audit"')]
    for kind, totals in summary["by_annotation_type"].items():
        row = re.search(rf'<tr data-type="{kind}">(.*?)</tr>', section)
        assert row is not None
        shown = dict(re.findall(r'data-metric="([^"]+)">([^<]+)<', row.group(1)))
        assert shown == {name: f"{value:.3f}" for name, value in totals["metrics"].items()}
    overall = summary["overall"]["metrics"]
    assert f"{overall['groups']} groups" in section and "other overall" not in section
    # A scores file that disagrees with the inputs is said so.
    rows = [json.loads(line) for line in scores_path.read_text().splitlines()]
    rows[0]["overall"] = 0.123
    write_lines(scores_path, rows)
    _report(str(scores_path), *report_inputs, "-o", str(html_path))
    assert "1 re-scored row(s) got another overall than the scores file" in html_path.read_text(encoding="utf-8")
    _report(str(scores_path), *report_inputs, "-o", str(html_path), "--no-metrics")
    assert 'id="metrics"' not in html_path.read_text(encoding="utf-8")
