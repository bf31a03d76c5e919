"""``trace-tasks report``: one self-contained HTML page from a scores file.

The statistics are checked on rows scored by the real scorer (failure
categories from real flags), the page by reading it back: no network
reference, hostile responses escaped, histogram bars that add up to the rows,
baseline deltas, and clear errors for a file that is not a scores file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import INSTANCES, RESPONSES, instance, run_cli, write_lines
from trace_tasks import score_trace_response
from trace_tasks.cli.report._data import (
    ALL,
    Row,
    deltas,
    failure_counts,
    histogram,
    parse_row,
    row_type,
    sample,
    type_table,
    worst,
)
from trace_tasks.cli.report._html import SCRIPT
from trace_tasks.runs._jsonl import Line


def _score(tmp_path: Path, *args: str, name: str = "scores.jsonl") -> Path:
    out = tmp_path / name
    proc = run_cli("score", *args, "-o", str(out), "--quiet")
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return out


def _report(*args: str) -> tuple[int, str, str]:
    proc = run_cli("report", *args)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.fixture(scope="module")
def example_scores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's example run: 36 instances, 108 responses."""
    return _score(tmp_path_factory.mktemp("scores"), str(INSTANCES), "--responses", str(RESPONSES))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- the page ---


def test_the_example_report_is_self_contained(tmp_path: Path, example_scores: Path) -> None:
    html_path = tmp_path / "report.html"
    code, out, err = _report(
        str(example_scores), "--instances", str(INSTANCES), "--responses", str(RESPONSES), "-o", str(html_path)
    )
    assert code == 0, err
    assert f"wrote {html_path}: 108 rows, 10 worst cases, 10 sampled" in out
    html = html_path.read_text(encoding="utf-8")
    # Nothing a browser would fetch: no remote URL at all, no script file, no stylesheet link, no external image;
    # the one script is the fixed sorting code, inline.
    assert "http://" not in html and "https://" not in html
    assert html.lower().count("<script") == 1 and f"<script>{SCRIPT}</script>" in html and "<link" not in html.lower()
    assert re.findall(r'src="(?!data:image/png;base64,)', html) == []
    for section in ("summary", "types", "histograms", "failures", "worst", "sample"):
        assert f'id="{section}"' in html
    assert 'id="baseline"' not in html
    assert "108: 108 scored, 0 not scored" in html
    # The per-type means are the score command's own summary figures.
    # Each mean now carries its standard error (issue 38): the cell is "0.379 ± s.e.", the mean unchanged.
    assert re.search(
        r'<tr><td>bbox_set_map</td><td class="n">9</td><td class="n">9</td><td class="n est" data-mean="0\.379\d*" '
        r'data-stderr="[\d.]+">0\.379 ± \d\.\d{3}</td>',
        html,
    )
    assert html.count('<div class="case"') == 30  # 10 worst, 10 correct answer worst annotation, 10 sampled
    correct = html.split('id="correct-worst"', 1)[1].split('id="sample"', 1)[0]
    by_line = {r["line"]: r for r in _rows(example_scores)}
    lines = [int(n) for n in re.findall(r"input line (\d+)", correct)]
    assert len(lines) == 10 and all(by_line[n]["answer_reward"] == 1 for n in lines)
    lowest = sorted(r["annotation_reward"] for r in by_line.values() if r.get("answer_reward") == 1)
    assert min(by_line[n]["annotation_reward"] for n in lines) == lowest[0]
    if _has_pillow():
        # every case has its whole overlay, and a crop to its target and prediction when that leaves much out
        assert html.count('<img alt="overlay of ') == 30
        crops = html.count('<img class="crop" ')
        assert 0 < crops <= 30 and html.count('src="data:image/png;base64,') == 30 + crops
    assert "annotation 0.3055" in html or "/ max(" in html  # explanations carry the family's formula


def _has_pillow() -> bool:
    try:
        import PIL  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_hostile_response_is_escaped(tmp_path: Path) -> None:
    hostile = '<script>alert(1)</script></pre><img src=x onerror="alert(2)"> {"answer": 2, "annotation": [0, 0, 10, 10]}'
    rows = [{**instance("<b>id</b>", 2, "bbox", [0, 0, 10, 10], image_size=[64, 48]), "response": hostile}]
    combined = write_lines(tmp_path / "c.jsonl", rows)
    scores = _score(tmp_path, str(combined))
    html_path = tmp_path / "r.html"
    code, _, err = _report(str(scores), "--instances", str(combined), "-o", str(html_path), "--sample", "1")
    assert code == 0, err
    html = html_path.read_text(encoding="utf-8")
    assert html.count("<script") == 1 and "alert(" not in html.split("<script>")[1] and "<img src=x" not in html
    assert "<b>id</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/pre&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in html
    assert "&lt;b&gt;id&lt;/b&gt;" in html


def _type_rows(html: str, section: str) -> dict[str, str]:
    body = html.split(f'id="{section}"', 1)[1].split("<h2", 1)[0]
    return dict(re.findall(r'<tr(?: class="all")? data-type="([^"]+)">(.*?)</tr>', body))


def test_histogram_bars_add_up_to_the_scored_rows_of_each_type(tmp_path: Path, example_scores: Path) -> None:
    html_path = tmp_path / "r.html"
    assert _report(str(example_scores), "-o", str(html_path))[0] == 0
    html = html_path.read_text(encoding="utf-8")
    per_type: dict[str, int] = {}
    for row in _rows(example_scores):
        kind = row_type(row)
        per_type[kind] = per_type.get(kind, 0) + 1
    charts = _type_rows(html, "histograms")
    assert set(charts) == set(per_type)
    keys = ("overall", "answer_reward", "annotation_reward", "format")
    for kind, cells in charts.items():
        svgs = re.findall(r"<svg.*?</svg>", cells)
        assert len(svgs) == 4  # overall, answer, annotation, format
        values = {key: [r[key] for r in _rows(example_scores) if row_type(r) == kind] for key in keys}
        for svg, key in zip(svgs, keys, strict=True):
            if set(values[key]) <= {0, 1}:  # a 0/1 component: one bar, the share at 1
                assert 'class="share"' in svg
                assert f'data-ones="{values[key].count(1)}" data-total="{per_type[kind]}"' in svg
                continue
            counts = [int(c) for c in re.findall(r'data-count="(\d+)"', svg)]
            assert len(counts) == 10 and sum(counts) == per_type[kind]
    # The answer and format of this run hold only 0s and 1s: shares, not histograms.
    assert 'data-binary="answer_reward"' in charts["bbox"] and 'data-binary="format"' in charts["bbox"]


def test_histogram_bins() -> None:
    assert histogram([0.0, 0.05, 0.1, 0.95, 1.0, 1.0, -0.5, 2.0, float("nan")]) == [4, 1, 0, 0, 0, 0, 0, 0, 0, 4]
    assert sum(histogram([i / 997 for i in range(998)])) == 998


# --- failures, from real flags ---

ANNOTATION = [0, 0, 10, 10]
FAILURE_RESPONSES = {
    "clean": json.dumps({"answer": 2, "annotation": ANNOTATION}),
    "no_json": "I think there are two.",
    "bad_json": 'Here:\n```json\n{"answer": 2, "annotation": [0, 0, 10, 10]\n```',
    "wrong_keys": json.dumps({"answer": 2, "annotation": ANNOTATION, "why": "because"}),
    "annotation_parse": json.dumps({"answer": 2, "annotation": "top left"}),
    "wrong_answer": json.dumps({"answer": 3, "annotation": ANNOTATION}),
}


def _scored_row(number: int, response: str, **options: Any) -> Row:
    scores = score_trace_response(
        response=response,
        **{k: v for k, v in instance("x", 2, "bbox", ANNOTATION).items() if k != "id"},
        trace_reward_mode="answer_and_annotation",
        **options,
    )
    return parse_row(Line(number, {"id": "x", "line": number, **scores}), "s.jsonl")


def test_failure_categories_are_read_from_the_flags() -> None:
    rows = [_scored_row(n, text) for n, text in enumerate(FAILURE_RESPONSES.values(), start=1)]
    rows.append(parse_row(Line(7, {"id": "y", "line": 7, "error": "line 7: $.response: required field missing"}), "s.jsonl"))
    counts = failure_counts(rows)
    # Each broken response is in its own category; without a mapping the answer is the whole response (wrong too),
    # and a broken final block with no object recovered elsewhere is "no JSON" too (json_found 0, as score counts it).
    assert counts == {
        "no_json": 2, "bad_json": 1, "wrong_keys": 1, "annotation_parse": 1, "wrong_answer": 3,
        "not_scored": 1, "rows": 7,
    }  # fmt: skip
    single = {name: failure_counts([_scored_row(1, text)]) for name, text in FAILURE_RESPONSES.items()}
    for name, found in single.items():
        flagged = {k for k, v in found.items() if v and k not in ("rows", "not_scored")}
        no_mapping = name in ("no_json", "bad_json")
        expected = {name, "no_json", "wrong_answer"} if no_mapping else set() if name == "clean" else {name}
        assert flagged == expected


def test_failures_table_in_the_page(tmp_path: Path) -> None:
    lines = [{**instance(f"i{n}", 2, "bbox", ANNOTATION), "response": text} for n, text in enumerate(FAILURE_RESPONSES.values())]
    lines.append({"id": "broken"})  # not an instance: an error line in the scores
    combined = write_lines(tmp_path / "c.jsonl", lines)
    scores = _score(tmp_path, str(combined))
    html_path = tmp_path / "r.html"
    assert _report(str(scores), "-o", str(html_path))[0] == 0
    rows = _type_rows(html_path.read_text(encoding="utf-8"), "failures")
    cells = [int(c) for c in re.findall(r'data-count="(\d+)"', rows["bbox"])]
    # no JSON (both without a mapping), final block not an object, wrong keys, annotation parse failure,
    # wrong answer (the two without a mapping, and "3")
    assert cells == [2, 1, 1, 1, 3]
    assert re.findall(r'<td class="n">(\d+)</td>', rows[ALL])[0] == "1"  # the error line: not scored


# --- comparing runs ---


def _rows_of(values: dict[str, list[float]]) -> list[Row]:
    rows = []
    for kind, overall in values.items():
        for v in overall:
            scores = {"overall": v, "answer_reward": v, "annotation_reward": v / 2, "format": 1.0, f"annotation_type_{kind}": 1.0}
            rows.append(Row(len(rows) + 1, "x", len(rows) + 1, kind, scores))
    return rows


def test_baseline_deltas_per_type() -> None:
    now = type_table(_rows_of({"bbox": [1.0, 0.5], "point": [0.25]}))
    before = type_table(_rows_of({"bbox": [0.5, 0.5], "segment": [1.0]}))
    found = {d.name: d for d in deltas(now, before)}
    assert list(found) == ["bbox", "point", "segment", ALL]
    assert found["bbox"].change("overall") == pytest.approx(0.25) and found["bbox"].change("annotation_reward") == pytest.approx(
        0.125
    )
    assert found["bbox"].rows == (2, 2)
    assert found["point"].change("overall") is None and found["point"].rows == (1, 0)
    assert found["segment"].now is None and found["segment"].before == {"overall": 1.0, "answer_reward": 1.0,
                                                                          "annotation_reward": 0.5, "format": 1.0}  # fmt: skip
    assert found[ALL].change("overall") == pytest.approx((1.75 / 3) - (2.0 / 3))


def test_baseline_section_in_the_page(tmp_path: Path, example_scores: Path) -> None:
    # The baseline: the same run with every bbox row's overall lowered by 0.25 (floored at 0).
    lowered = []
    for row in _rows(example_scores):
        if row.get("annotation_type_bbox") == 1.0:
            row["overall"] = max(row["overall"] - 0.25, 0.0)
        lowered.append(row)
    baseline = write_lines(tmp_path / "before.jsonl", lowered)
    html_path = tmp_path / "r.html"
    code, _, err = _report(str(example_scores), "--baseline", str(baseline), "-o", str(html_path))
    assert code == 0, err
    rows = _type_rows(html_path.read_text(encoding="utf-8"), "baseline")
    now = [r["overall"] for r in _rows(example_scores) if r.get("annotation_type_bbox") == 1.0]
    before = [max(v - 0.25, 0.0) for v in now]
    expected = f"{sum(now) / len(now) - sum(before) / len(before):+.3f}"
    assert re.findall(r'<td class="n (?:pos|neg|)">([+-]\d\.\d{3})</td>', rows["bbox"])[0] == expected
    assert re.findall(r'<td class="n (?:pos|neg|)">([+-]\d\.\d{3})</td>', rows["point"])[0] == "+0.000"


# --- cases ---


def test_worst_and_a_seeded_sample(example_scores: Path) -> None:
    rows = [parse_row(Line(n, value), "s") for n, value in enumerate(_rows(example_scores), start=1)]
    lowest = worst(rows, 5)
    assert [r.scores["overall"] for r in lowest] == sorted(r.scores["overall"] for r in rows)[:5]
    assert sample(rows, 7, 3) == sample(rows, 7, 3) and sample(rows, 7, 3) != sample(rows, 7, 4)
    assert len(sample(rows, 500, 1)) == len(rows) and sample(rows, 0, 1) == []


def test_without_instances_cases_show_the_breakdown_only(tmp_path: Path, example_scores: Path) -> None:
    html_path = tmp_path / "r.html"
    code, _, err = _report(str(example_scores), "-o", str(html_path), "--worst", "2", "--sample", "0")
    assert code == 0, err
    html = html_path.read_text(encoding="utf-8")
    assert html.count('<div class="case"') == 4 and "<img" not in html  # 2 worst, 2 correct answer worst annotation
    assert "No --instances: cases show the reward breakdown only" in html
    assert "answer wrong (answer_reward 0): gated, the annotation earns nothing" in html


# --- mistakes ---


def test_a_scores_file_with_a_bad_line_is_refused_naming_the_line(tmp_path: Path, example_scores: Path) -> None:
    lines = example_scores.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:2], '{"id": "x", "line": 3, "overall": ', *lines[3:]]) + "\n")
    code, out, err = _report(str(broken), "-o", str(tmp_path / "r.html"))
    assert code == 2 and out == ""
    assert err.startswith(f"trace-tasks report: error: {broken} line 3: not valid JSON") and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()
    # An instances file given as the scores: valid JSON, but not scores.
    code, _, err = _report(str(INSTANCES), "-o", str(tmp_path / "r.html"))
    assert code == 2 and f"{INSTANCES} line 1: neither a scores row" in err
    code, _, err = _report(str(example_scores), "--responses", str(RESPONSES), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "--responses needs --instances" in err
    code, _, err = _report(str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "cannot open" in err
    # The report over its own scores file: refused before anything is written.
    before = broken.read_bytes()
    code, _, err = _report(str(broken), "-o", str(broken))
    assert code == 2 and "same file" in err and broken.read_bytes() == before


def test_the_readme_report_line_runs_on_what_the_readme_score_line_writes(tmp_path: Path) -> None:
    """The README's first block: its score command, then its report command on that scores file."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.findall(r"^```bash\n(.*?)^```", readme, flags=re.M | re.S)[0]
    commands = [line.split("trace-tasks ", 1)[1].split() for line in block.splitlines() if "uv run trace-tasks " in line]
    assert [c[0] for c in commands] == ["score", "report"]
    score, report = commands

    def redirected(args: list[str]) -> list[str]:  # outputs go to tmp_path, and the scores file is read from there
        return [str(tmp_path / a) if a in ("scores.jsonl", "report.html") else a for a in args]

    assert run_cli(*redirected(score), "--quiet").returncode == 0
    proc = run_cli(*redirected(report))
    assert proc.returncode == 0, proc.stderr.decode()
    assert "108 rows" in proc.stdout.decode() and (tmp_path / "report.html").stat().st_size > 10_000
