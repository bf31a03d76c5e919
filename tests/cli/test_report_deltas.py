"""The report page's uncertainty: each mean ± its standard error, and with ``--baseline`` the paired deltas.

The expected numbers are computed here from the two scores files (numpy,
``statistics``), joining rows by (id, line) as the report does; only the
bootstrap interval is taken from the data object (its own computation is
checked in test_report_paired_stats.py).
"""

from __future__ import annotations

import html as html_lib
import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli.helpers import INSTANCES, RESPONSES, run_cli
from trace_tasks.cli.report import stream_scores
from trace_tasks.cli.report._data import ALL, COMPONENTS, Aggregate, BaselineIndex

KEYS = [key for key, _ in COMPONENTS]
CELL = re.compile(
    r'<td class="n delta (?P<cls>[^"]*)" data-key="(?P<key>[^"]+)" data-mean="(?P<mean>[^"]*)" '
    r'data-stderr="(?P<se>[^"]*)" data-low="(?P<low>[^"]*)" data-high="(?P<high>[^"]*)" '
    r'data-noise="(?P<noise>[01])">(?P<text>.*?)</td>'
)


def _scores(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    result = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q", "-o", str(out), "--keep", "quality", *args)
    assert result.returncode == 0, result.stderr.decode()
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _type(row: dict[str, Any]) -> str:
    return next(k[len("annotation_type_") :] for k, v in row.items() if k.startswith("annotation_type_") and v == 1.0)


def _report(tmp_path: Path, scores: Path, *args: str) -> str:
    out = tmp_path / "report.html"
    result = run_cli("report", str(scores), "-o", str(out), *args)
    assert result.returncode == 0, result.stderr.decode()
    return out.read_text(encoding="utf-8")


def _table(page: str, name: str) -> str:
    return page.split(f'<table class="{name} sortable">', 1)[1].split("</table>", 1)[0]


def _table_rows(table: str, attribute: str) -> dict[str, str]:
    return {
        html_lib.unescape(m.group(1)): m.group(2)
        for m in re.finditer(rf'<tr(?: class="all")? data-{attribute}="([^"]*)">(.*?)</tr>', table)
    }


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, Path, str]:
    """This run, a baseline scored with other weights (so overall moves, the components stay), and the page."""
    now = _scores(tmp_path, "now.jsonl")
    before = _scores(tmp_path, "before.jsonl", "--answer-weight", "0.8", "--annotation-weight", "0.2")
    page = _report(tmp_path, now, "--baseline", str(before), "--group-by", "quality")
    return now, before, page


def test_every_delta_on_the_page_matches_a_hand_computation(study: tuple[Path, Path, str]) -> None:
    now, before, page = study
    base = {(r["id"], r["line"]): r for r in _rows(before)}
    cells: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in _rows(now):
        partner = base[(row["id"], row["line"])]
        for cell in (("type", _type(row)), ("type", ALL), ("group", str(row["extra"]["quality"])), ("group", ALL)):
            cells.setdefault(cell, []).append((row, partner))
    index = BaselineIndex()
    stream_scores(str(before), index)
    index.freeze()
    found = Aggregate(group_by="quality", baseline=index)
    stream_scores(str(now), found)
    paired = found.paired()
    assert paired is not None

    shown = {
        "type": _table_rows(_table(page, "deltas deltas-types"), "type"),
        "group": _table_rows(_table(page, "deltas deltas-groups"), "group"),
    }
    assert {(kind, name) for kind, rows in shown.items() for name in rows} == set(cells)
    bounds: list[float] = []
    noise_seen = {True: 0, False: 0}
    for (kind, name), pairs in cells.items():
        parsed = {m["key"]: m for m in CELL.finditer(shown[kind][name])}
        assert list(parsed) == KEYS, (kind, name)
        for key in KEYS:
            diffs = np.array([float(a[key]) - float(b[key]) for a, b in pairs])
            mean = float(diffs.mean())
            m = parsed[key]
            assert float(m["mean"]) == pytest.approx(mean, abs=1e-6)
            assert m["text"].startswith(f"{mean:+.3f}")
            if len(diffs) >= 2:
                se = statistics.stdev(diffs.tolist()) / math.sqrt(len(diffs))
                assert float(m["se"]) == pytest.approx(se, abs=1e-6)
                assert f"{mean:+.3f} ± {se:.3f}" in m["text"]
            interval = (paired.by_type if kind == "type" else paired.by_group)[name].delta(key).interval
            if interval is None:
                assert m["low"] == m["high"] == "" and m["noise"] == "1"
                continue
            low, high = float(m["low"]), float(m["high"])
            assert (low, high) == pytest.approx(interval, abs=1e-6)
            assert low - 1e-9 <= mean <= high + 1e-9  # the interval holds the mean it is of
            assert f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" in m["text"]
            bounds += [abs(low), abs(high)]
            holds_zero = interval[0] <= 0.0 <= interval[1]
            # "within noise" (greyed) exactly when the interval contains 0.
            assert (m["noise"] == "1") == holds_zero
            assert ("within noise" in m["text"]) == holds_zero
            assert ("within-noise muted" in m["cls"]) == holds_zero
            noise_seen[holds_zero] += 1
    assert noise_seen[True] and noise_seen[False]  # the data has both kinds, so the marking is tested both ways
    # Every bar is drawn to the largest |interval bound| shown, not to +-1.
    scale = max(bounds)
    assert f"Bars are drawn to ±{scale:.3f}" in html_lib.unescape(page)
    section = page[page.index('id="deltas"') :]
    bars = re.findall(r'data-change="([-\d.]+)">.*?<rect x="[\d.]+" y="2" width="([\d.]+)"', section)
    assert len(bars) == len(KEYS) * len(cells)
    for change, width in bars:
        assert float(width) == pytest.approx(min(abs(float(change)) / scale, 1.0) * 40, abs=0.06)


def test_the_type_table_shows_each_mean_with_its_standard_error(tmp_path: Path) -> None:
    now = _scores(tmp_path, "now.jsonl")
    page = _report(tmp_path, now)
    rows = _rows(now)
    table = _table(page, "types")
    for name in {_type(r) for r in rows} | {ALL}:
        members = rows if name == ALL else [r for r in rows if _type(r) == name]
        found = re.search(rf"<tr(?: class=\"all\")?><td>{re.escape(name)}</td>(.*?)</tr>", table)
        assert found is not None, name
        cells = re.findall(r'data-mean="([^"]*)" data-stderr="([^"]*)">([^<]*)</td>', found.group(1))
        assert len(cells) == len(KEYS)
        for key, (_, _, text) in zip(KEYS, cells, strict=True):
            values = [float(r[key]) for r in members]
            mean = statistics.fmean(values)
            if len(values) < 2:
                assert text == f"{mean:.3f}"
                continue
            se = statistics.stdev(values) / math.sqrt(len(values))
            assert text == f"{mean:.3f} ± {se:.3f}"


def test_without_a_baseline_the_page_has_no_delta_section(tmp_path: Path) -> None:
    page = _report(tmp_path, _scores(tmp_path, "now.jsonl"))
    assert 'id="types"' in page and 'id="deltas"' not in page and "within noise" not in page
