"""The report's numbers with their uncertainty: standard errors of the means, paired deltas against a baseline.

Every expected number is computed here from the two scores files by hand
(numpy, ``statistics``), joining rows by (id, line) as the report does.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli.helpers import INSTANCES, RESPONSES, run_cli
from trace_tasks.cli.report import stream_scores
from trace_tasks.cli.report._data import ALL, COMPONENTS, Aggregate, BaselineIndex

KEYS = [key for key, _ in COMPONENTS]


def _scores(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    result = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q", "-o", str(out), "--keep", "quality", *args)
    assert result.returncode == 0, result.stderr.decode()
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _type(row: dict[str, Any]) -> str:
    return next(k[len("annotation_type_") :] for k, v in row.items() if k.startswith("annotation_type_") and v == 1.0)


def _aggregate(now: Path, before: Path) -> Aggregate:
    index = BaselineIndex()
    stream_scores(str(before), index)
    index.freeze()
    found = Aggregate(group_by="quality", baseline=index)
    stream_scores(str(now), found)
    return found


def test_type_table_has_the_standard_error_of_every_mean(tmp_path: Path) -> None:
    path = _scores(tmp_path, "now.jsonl")
    found = Aggregate()
    stream_scores(str(path), found)
    rows = _rows(path)
    for stats in found.type_table():
        members = rows if stats.name == ALL else [r for r in rows if _type(r) == stats.name]
        for key in KEYS:
            values = [float(r[key]) for r in members]
            assert stats.stderr[key] == pytest.approx(statistics.stdev(values) / math.sqrt(len(values)), abs=1e-12)


def test_paired_deltas_per_type_and_group_match_a_hand_computation(tmp_path: Path) -> None:
    now = _scores(tmp_path, "now.jsonl")
    before = _scores(tmp_path, "before.jsonl", "--answer-weight", "0.8", "--annotation-weight", "0.2")
    paired = _aggregate(now, before).paired()
    assert paired is not None
    base = {(r["id"], r["line"]): r for r in _rows(before)}
    rows = _rows(now)
    cells: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in rows:
        partner = base[(row["id"], row["line"])]
        for cell in (("type", _type(row)), ("type", ALL), ("group", row["extra"]["quality"]), ("group", ALL)):
            cells.setdefault(cell, []).append((row, partner))
    assert set(paired.by_group) == {name for kind, name in cells if kind == "group"}
    for (kind, name), pairs in cells.items():
        totals = (paired.by_type if kind == "type" else paired.by_group)[name]
        assert totals.paired == len(pairs)
        for key in KEYS:
            diffs = np.array([float(a[key]) - float(b[key]) for a, b in pairs])
            got = totals.delta(key)
            assert got.n == len(diffs)
            assert got.mean == pytest.approx(float(diffs.mean()), abs=1e-12)
            if len(diffs) < 2:
                continue
            assert got.stderr == pytest.approx(float(diffs.std(ddof=1) / math.sqrt(len(diffs))), abs=1e-12)
            rng = np.random.default_rng(0)
            means = diffs[rng.integers(0, len(diffs), size=(1000, len(diffs)))].mean(axis=1)
            low, high = np.quantile(means, [0.025, 0.975])
            assert got.interval == pytest.approx((float(low), float(high)), abs=1e-12)
            assert got.contains_zero == (low <= 0.0 <= high)


def test_a_run_against_itself_has_zero_deltas_whose_interval_holds_zero(tmp_path: Path) -> None:
    now = _scores(tmp_path, "now.jsonl")
    paired = _aggregate(now, now).paired()
    assert paired is not None
    for key in KEYS:
        got = paired.by_type[ALL].delta(key)
        assert got.mean == 0.0 and got.stderr == 0.0 and got.interval == (0.0, 0.0) and got.contains_zero


def test_a_planted_change_is_told_from_noise(tmp_path: Path) -> None:
    now = _scores(tmp_path, "now.jsonl")
    before = _scores(tmp_path, "before.jsonl", "--mode", "answer")  # annotation no longer counts: overall moves a lot
    got = _aggregate(now, before).paired()
    assert got is not None
    overall = got.by_type[ALL].delta("overall")
    answer = got.by_type[ALL].delta("answer_reward")
    assert not overall.contains_zero  # a real change
    assert answer.mean == 0.0 and answer.contains_zero  # the answer did not change
