"""``trace-tasks report`` streams: aggregates per row, bounded heaps and reservoir, a per-row join with --baseline.

Each aggregate is checked against an independent computation over the whole
list of rows; the bound is checked by which rows are still alive after the
stream (weak references), and the page's new parts (the paired comparison,
compact cases, sortable tables) through the command.
"""

from __future__ import annotations

import gc
import json
import math
import random
import re
import weakref
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, read_jsonl, run_cli, write_lines
from trace_tasks.cli.report._data import (
    ALL,
    FAILURES,
    Aggregate,
    BaselineIndex,
    Row,
    parse_row,
)
from trace_tasks.runs._jsonl import Line

COMPONENT_KEYS = ("overall", "answer_reward", "annotation_reward", "format")
TYPES = ("bbox", "point", "segment_set")


def _random_rows(count: int, seed: int = 0) -> list[Row]:
    rng = random.Random(seed)
    rows = []
    for n in range(1, count + 1):
        if rng.random() < 0.05:
            rows.append(parse_row(Line(n, {"id": f"e{n}", "line": n, "error": "bad"}), "s"))
            continue
        kind = rng.choice(TYPES)
        overall = rng.choice((0.0, 0.0, 1.0, round(rng.random(), 3)))
        scores = {
            "id": f"i{n % 50}", "line": n, "overall": overall, "answer_reward": float(overall > 0),
            "annotation_reward": rng.random(), "format": rng.choice((0.0, 1.0)), f"annotation_type_{kind}": 1.0,
            "json_found": rng.choice((0.0, 1.0)), "format_structure_ok": 1.0, "format_json_ok": rng.choice((0.0, 1.0)),
            "format_schema_ok": 1.0, "annotation_parse_ok": 1.0,
        }  # fmt: skip
        rows.append(parse_row(Line(n, scores), "s"))
    return rows


def test_the_streamed_table_and_histograms_equal_a_computation_over_all_rows() -> None:
    rows = _random_rows(3000)
    found = Aggregate()
    for row in rows:
        found.add(row)
    table = {s.name: s for s in found.type_table()}
    hist = found.histograms()
    for kind in [*TYPES, ALL]:
        mine = [r for r in rows if kind == ALL or r.type == kind]
        scored = [r for r in mine if r.error is None]
        assert table[kind].rows == len(mine) and table[kind].scored == len(scored)
        for key in COMPONENT_KEYS:
            assert table[kind].means[key] == pytest.approx(math.fsum(r.scores[key] for r in scored) / len(scored))
            if kind != ALL:
                bins = [0] * 10
                for r in scored:
                    bins[min(int(r.scores[key] * 10), 9)] += 1
                assert hist[kind][key] == bins
        for key, _, _, test in FAILURES:
            assert table[kind].failures[key] == sum(1 for r in scored if test(r))
        assert table[kind].failures["not_scored"] == len(mine) - len(scored)


def _worst_by_hand(rows: list[Row], count: int) -> list[int]:
    """Types take turns, within a type the failure kinds do; each list by (overall, line)."""

    def kind_of(row: Row) -> str:
        return next((key for key, _, _, test in FAILURES if test(row)), "none")

    def turns(lists: list[list[Row]]) -> list[Row]:
        lists = sorted((lst for lst in lists if lst), key=lambda lst: (lst[0].scores["overall"], lst[0].number))
        out: list[Row] = []
        for depth in range(max((len(lst) for lst in lists), default=0)):
            out += [lst[depth] for lst in lists if depth < len(lst)]
        return out

    per_type: dict[str, dict[str, list[Row]]] = {}
    for row in sorted((r for r in rows if r.error is None), key=lambda r: (r.scores["overall"], r.number)):
        per_type.setdefault(row.type, {}).setdefault(kind_of(row), []).append(row)
    return [r.number for r in turns([turns(list(kinds.values())) for kinds in per_type.values()])][:count]


@pytest.mark.parametrize("count", [1, 7, 40])
def test_worst_cases_from_bounded_heaps_equal_the_whole_sort(count: int) -> None:
    rows = _random_rows(2000, seed=count)
    found = Aggregate(worst=count)
    for row in rows:
        found.add(row)
    assert [r.number for r in found.worst()] == _worst_by_hand(rows, count)


def test_worst_cases_take_turns_across_failure_kinds() -> None:
    def row(n: int, overall: float, **flags: float) -> Row:
        base = {"id": str(n), "line": n, "overall": overall, "annotation_type_bbox": 1.0, "json_found": 1.0}
        return parse_row(Line(n, {**base, **flags}), "s")

    rows = [row(n, 0.0, answer_reward=0.0) for n in range(1, 20)]  # nineteen wrong answers tied at 0
    rows += [row(20, 0.2, json_found=0.0), row(21, 0.3, json_found=0.0)]  # two rows with no JSON, a little higher
    found = Aggregate(worst=4)
    for r in rows:
        found.add(r)
    assert [r.number for r in found.worst()] == [1, 20, 2, 21]


def test_the_stream_keeps_only_the_rows_it_shows() -> None:
    found = Aggregate(worst=3, sample=5, seed=1)
    refs = []
    for row in _random_rows(5000, seed=3):
        refs.append(weakref.ref(row))
        found.add(row)
        del row
    gc.collect()
    alive = sum(ref() is not None for ref in refs)
    # at most 3 per (type, failure kind) and 5 sampled (one first scored row besides)
    assert alive <= 3 * len(TYPES) * (len(FAILURES) + 1) + 5 + 1
    assert len(found.sample()) == 5 and len(found.worst()) == 3


def test_the_reservoir_is_seeded_and_uniform_enough() -> None:
    rows = _random_rows(400)

    def drawn(seed: int, count: int = 20) -> list[int]:
        found = Aggregate(sample=count, seed=seed)
        for row in rows:
            found.add(row)
        return [r.number for r in found.sample()]

    assert drawn(3) == drawn(3) and drawn(3) != drawn(4)
    assert drawn(3) == sorted(drawn(3)) and len(set(drawn(3))) == 20
    assert drawn(0, 1000) == list(range(1, 401))
    # Over many seeds, the second half of the file is drawn about as often as the first.
    late = sum(n > 200 for seed in range(200) for n in drawn(seed))
    assert 0.45 < late / (200 * 20) < 0.55


def _score_row(n: int, row_id: str, overall: float, kind: str = "bbox", line: int | None = None) -> Row:
    data = {"id": row_id, "line": n if line is None else line, "overall": overall, f"annotation_type_{kind}": 1.0}
    return parse_row(Line(n, data), "s")


def test_the_per_row_join_counts_improved_worsened_unchanged() -> None:
    before = [
        _score_row(1, "a", 0.5), _score_row(2, "b", 0.5), _score_row(3, "c", 0.5, "point"),
        _score_row(4, "d", 0.9, line=40),  # another input line: joins by id (the id is on one baseline row)
        _score_row(5, "g", 0.1, line=50), _score_row(6, "g", 0.2, line=60),  # id on two rows: joins only by line
    ]  # fmt: skip
    now = [
        _score_row(1, "a", 0.75), _score_row(2, "b", 0.25), _score_row(3, "c", 0.5, "point"),
        _score_row(4, "d", 0.4, line=4), _score_row(5, "g", 1.0, line=55), _score_row(6, "new", 1.0),
    ]  # fmt: skip
    index = BaselineIndex()
    for row in before:
        index.add(row)
    index.freeze()
    found = Aggregate(baseline=index)
    for row in now:
        found.add(row)
    paired = found.paired()
    assert paired is not None
    everything = paired.by_type[ALL]
    assert (everything.paired, everything.improved, everything.worsened, everything.unchanged) == (4, 1, 2, 1)
    assert everything.mean_delta == pytest.approx((0.25 - 0.25 + 0.0 - 0.5) / 4)
    assert (paired.by_type["point"].paired, paired.by_type["point"].unchanged) == (1, 1)
    assert paired.unpaired == 2 and paired.baseline_rows == 6  # g (ambiguous id, other line) and new
    assert [(c.id, c.delta) for c in paired.worsened] == [("d", pytest.approx(-0.5)), ("b", pytest.approx(-0.25))]
    assert [(c.id, c.before, c.now) for c in paired.improved] == [("a", 0.5, 0.75)]


def test_the_biggest_changes_are_the_largest_of_many(tmp_path: Path) -> None:
    rng = random.Random(5)
    before_values = [rng.random() for _ in range(3000)]
    now_values = [min(max(v + rng.uniform(-0.5, 0.5), 0.0), 1.0) for v in before_values]
    index = BaselineIndex()
    for n, v in enumerate(before_values, start=1):
        index.add(_score_row(n, f"x{n}", v))
    index.freeze()
    found = Aggregate(baseline=index)
    for n, v in enumerate(now_values, start=1):
        found.add(_score_row(n, f"x{n}", v))
    paired = found.paired()
    assert paired is not None
    deltas = [(now - before, n) for n, (before, now) in enumerate(zip(before_values, now_values, strict=True), start=1)]
    assert [c.number for c in paired.improved] == [n for _, n in sorted(deltas, key=lambda d: (-d[0], d[1]))[:10]]
    assert [c.number for c in paired.worsened] == [n for _, n in sorted(deltas, key=lambda d: (d[0], d[1]))[:10]]
    assert paired.by_type[ALL].improved == sum(d > 1e-9 for d, _ in deltas)


# --- through the command ---


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stream") / "scores.jsonl"
    assert run_cli("score", str(COMBINED), "-q", "-o", str(out)).returncode == 0
    return out


def _page(*args: str) -> str:
    proc = run_cli("report", *args, "-o", "-")
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def test_the_page_compares_row_by_row(tmp_path: Path, scores: Path) -> None:
    rows = read_jsonl(scores)
    lowered = [{**r, "overall": max(r["overall"] - 0.25, 0.0)} if r.get("annotation_type_bbox") == 1.0 else r for r in rows]
    rng = random.Random(0)
    rng.shuffle(lowered)  # another order: the join is by (id, line), never by position
    baseline = write_lines(tmp_path / "before.jsonl", lowered)
    html = _page(str(scores), "--baseline", str(baseline))
    section = html[html.index('id="paired"') : html.index('id="worst"')]
    bbox = [r["overall"] for r in rows if r.get("annotation_type_bbox") == 1.0]
    improved = sum(v > 0 for v in bbox)
    row = re.search(r'<tr data-type="bbox">(.*?)</tr>', section)
    assert row is not None
    assert f'data-improved="{improved}"' in row.group(1) and 'data-worsened="0"' in row.group(1)
    assert f'data-unchanged="{len(bbox) - improved}"' in row.group(1)
    everything = re.search(r'<tr class="all" data-type="all">(.*?)</tr>', section)
    assert everything is not None and f'data-unchanged="{len(rows) - improved}"' in everything.group(1)
    assert f"{len(rows)} rows paired; 0 of this run" in section
    # the biggest improvements: bbox rows, by how much they moved (0.25, or their whole overall when below it)
    moved = sorted(((min(v, 0.25), r["line"]) for r, v in ((r, r["overall"]) for r in rows) if r.get("annotation_type_bbox") == 1.0 and v > 0), key=lambda m: (-m[0], m[1]))  # fmt: skip
    listed = re.findall(r'<tr data-line="(\d+)"', section.split("Biggest improvements", 1)[1].split("Biggest drops", 1)[0])
    assert [int(n) for n in listed] == [line for _, line in moved[:10]]
    assert 'Biggest drops</h3><p class="muted">none</p>' in section
    assert "<title>+0.250</title>" in section  # the bars' values on hover


def test_cases_put_predicted_and_expected_up_front(scores: Path) -> None:
    html = _page(str(scores), "--instances", str(COMBINED), "--worst", "12", "--sample", "0")
    inputs = [json.loads(line) for line in COMBINED.read_text().splitlines()]
    worst_section = html.split('id="worst"', 1)[1].split('id="correct-worst"', 1)[0]
    cards = re.findall(r'<div class="case" data-line="\d+"[^>]*>(.*?)</div><details>', worst_section, re.S)
    assert len(cards) == 12
    for card in cards:
        line = int(re.search(r"input line (\d+)", card).group(1))  # type: ignore[union-attr]
        data: dict[str, Any] = inputs[line - 1]
        strip = re.search(r'<tr class="expected">(.*?)</tr>', card)
        assert strip is not None  # before any fold: the card's first <details> ends the match
        expected = re.findall(r"<code>(.*?)</code>", strip.group(1))
        unescape = lambda text: text.replace("&quot;", '"').replace("&#x27;", "'")  # noqa: E731
        assert json.loads(unescape(expected[0])) == data["answer_gt"]["value"]
        assert json.loads(unescape(expected[1])) == data["annotation_gt"]["value"]
        assert '<tr class="predicted">' in card


def test_the_tables_are_sortable_by_an_inline_script(scores: Path) -> None:
    html = _page(str(scores))
    for name in ("types", "failures"):
        assert f'<table class="{name} sortable">' in html
    script = html.split("<script>", 1)[1].split("</script>", 1)[0]
    assert "table.sortable" in script and "src" not in script and "http" not in script
