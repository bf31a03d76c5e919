"""Standard errors and GRPO group statistics of the run summary, against computations made here by hand.

The expected numbers are computed from the written score rows with numpy and
``statistics`` (never through the summary's own accumulators).
"""

from __future__ import annotations

import itertools
import json
import math
import pickle
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli.helpers import INSTANCES, RESPONSES, instance, run_cli, write_lines
from trace_tasks.runs import Moments, PairedDiffs, Summary

MEANS = ("overall", "answer_reward", "annotation_reward", "format")


def _score(tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    result = run_cli("score", *args, "-q", "-o", str(out), "--summary-json", str(summary))
    assert result.returncode in (0, 1), result.stderr.decode()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return json.loads(summary.read_text()), rows


def _type(row: dict[str, Any]) -> str:
    return next(key[len("annotation_type_") :] for key, v in row.items() if key.startswith("annotation_type_") and v == 1.0)


def _stderr(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


def test_every_mean_has_its_standard_error(tmp_path: Path) -> None:
    summary, rows = _score(tmp_path, str(INSTANCES), "--responses", str(RESPONSES))
    scored = [r for r in rows if "error" not in r]
    cells = {"all": scored} | {kind: [r for r in scored if _type(r) == kind] for kind in {_type(r) for r in scored}}
    for name, members in cells.items():
        got = summary["overall"] if name == "all" else summary["by_annotation_type"][name]
        for key in MEANS:
            values = [float(r[key]) for r in members]
            assert got[f"mean_{key}"] == pytest.approx(statistics.fmean(values), abs=1e-12)
            assert got[f"mean_{key}_stderr"] == pytest.approx(statistics.stdev(values) / math.sqrt(len(values)), abs=1e-12)
            assert got[f"mean_{key}_stderr"] == pytest.approx(_stderr(values), abs=1e-12)
    accuracy = [float(r["accuracy"]) for r in scored]
    assert summary["overall"]["metrics_stderr"]["answer_accuracy"] == pytest.approx(_stderr(accuracy), abs=1e-12)


def test_the_table_shows_mean_and_standard_error(tmp_path: Path) -> None:
    summary, _ = _score(tmp_path, str(INSTANCES), "--responses", str(RESPONSES))
    result = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-o", str(tmp_path / "again.jsonl"))
    table = result.stderr.decode()
    overall = summary["overall"]
    cell = f"{overall['mean_overall']:.3f}±{overall['mean_overall_stderr']:.3f}"
    assert any(line.startswith("all ") and cell in line.split() for line in table.splitlines()), table


def _group_stats(rows: list[dict[str, Any]], answers: list[Any]) -> dict[str, float]:
    """pass@k, group_std_mean, majority@k and the zero-variance causes, computed from the rows by hand."""
    groups = []
    for _, members in itertools.groupby(zip(rows, answers, strict=True), key=lambda pair: pair[0]["id"]):
        members = list(members)
        if len(members) >= 2:
            groups.append(members)
    n = len(groups)
    passed = sum(any(r["accuracy"] == 1.0 for r, _ in g) for g in groups)
    stds = [float(np.std([r["overall"] for r, _ in g])) for g in groups]  # population std (ddof 0)
    majority = []
    for g in groups:
        votes = [a for _, a in g if a is not None]
        if not votes:
            continue
        counts = {a: votes.count(a) for a in votes}
        top = max(counts.values())
        winner = next(a for a in votes if counts[a] == top)  # ties: the first seen
        majority.append(next(r["accuracy"] == 1.0 for r, a in g if a == winner))
    flat = [g for g in groups if len({r["overall"] for r, _ in g}) == 1]
    wrong = sum(all(r["accuracy"] == 0.0 for r, _ in g) for g in flat)
    unparsed = sum(all(r["annotation_parse_ok"] == 0.0 for r, _ in g) for g in flat)
    other = sum(not (all(r["accuracy"] == 0.0 for r, _ in g) or all(r["annotation_parse_ok"] == 0.0 for r, _ in g)) for g in flat)
    return {
        "groups": n,
        "zero_variance_groups_share": len(flat) / n,
        "pass@k": passed / n,
        "group_std_mean": statistics.fmean(stds),
        "majority@k": sum(majority) / len(majority),
        "majority_groups": len(majority),
        "zero_variance_all_wrong_answer": wrong,
        "zero_variance_all_unparsed": unparsed,
        "zero_variance_identical_other": other,
    }


def _row(row_id: str, answer: Any, box: Any = None, response: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"answer": answer}
    if box is not None:
        obj["annotation"] = box
    return {**instance(row_id, 2, "bbox", [0, 0, 10, 10]), "response": json.dumps(obj) if response is None else response}


def test_group_statistics_match_a_hand_computation(tmp_path: Path) -> None:
    good, half, bad = [0, 0, 10, 10], [0, 0, 10, 5], [5, 5, 5, 50]  # bad: zero area, does not parse
    planned = [
        ("a", [(2, good), (2, half), (3, good), (3, good)]),  # correct and wrong: majority 3 (wrong), passes
        ("b", [(3, good), (3, good)]),  # zero variance: all wrong answers
        ("c", [(2, bad), (2, bad), (2, bad)]),  # zero variance: all unparsed (answers right)
        ("d", [(2, good), (2, good)]),  # zero variance: identical, neither cause
        ("e", [(2, good)]),  # one row: no group
        ("f", [(2, half), (3, good), (2, good)]),  # majority 2 (right)
        ("g", [(4, good), (5, good)]),  # a tie: the first seen (4) wins, wrong
    ]
    rows, answers = [], []
    for row_id, members in planned:
        for answer, box in members:
            rows.append(_row(row_id, answer, box))
            answers.append(answer)
    rows.append(_row("h", 2, response="no json here"))
    rows.append(_row("h", 2, response="nor here"))
    answers += [None, None]  # no predicted answer: not a vote (and h has no comparable answer)
    summary, scored = _score(tmp_path, str(write_lines(tmp_path / "in.jsonl", rows)))
    expected = _group_stats(scored, answers)
    got = summary["overall"]["metrics"]
    assert expected["groups"] == 7 and expected["majority_groups"] == 6
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    # one type only: its table is the run's
    assert {key: summary["by_annotation_type"]["bbox"]["metrics"][key] for key in expected} == {key: got[key] for key in expected}


def test_group_statistics_per_type_on_the_example_data(tmp_path: Path) -> None:
    summary, rows = _score(tmp_path, str(INSTANCES), "--responses", str(RESPONSES))
    scored = [r for r in rows if "error" not in r]
    for kind in {_type(r) for r in scored}:
        members = [r for r in scored if _type(r) == kind]
        got = summary["by_annotation_type"][kind]["metrics"]
        groups = [list(g) for _, g in itertools.groupby(members, key=lambda r: r["id"])]
        groups = [g for g in groups if len(g) >= 2]
        assert got["groups"] == len(groups)
        assert got["pass@k"] == pytest.approx(sum(any(r["accuracy"] == 1.0 for r in g) for g in groups) / len(groups))
        assert got["group_std_mean"] == pytest.approx(
            statistics.fmean(statistics.pstdev([r["overall"] for r in g]) for g in groups)
        )


def test_moments_merge_as_one_stream() -> None:
    values = [0.1, 0.9, 0.5, 0.25, 1.0, 0.0, 0.75]
    whole, first, second = Moments(), Moments(), Moments()
    for v in values:
        whole.add(v)
    for v in values[:3]:
        first.add(v)
    for v in values[3:]:
        second.add(v)
    first.merge(second)
    assert first.stderr() == pytest.approx(_stderr(values), abs=1e-12)
    assert whole.stderr() == pytest.approx(_stderr(values), abs=1e-12)
    assert whole.population_std() == pytest.approx(statistics.pstdev(values), abs=1e-12)
    one = Moments()
    one.add(0.5)
    assert one.stderr() is None


def test_summary_with_group_statistics_pickles_and_merges() -> None:
    whole, first, second = Summary(), Summary(), Summary()
    rows = [("a", 1.0, 1.0), ("a", 0.0, 0.0), ("b", 0.5, 1.0), ("b", 0.5, 1.0), ("c", 0.0, 0.0), ("c", 0.0, 0.0)]
    for target, part in ((whole, rows), (first, rows[:4]), (second, rows[4:])):
        for row_id, overall, accuracy in part:
            scores = {"overall": overall, "accuracy": accuracy, "annotation_parse_ok": 1.0}
            target.add_scores("bbox", scores)
            target.add_metrics("bbox", row_id, overall, {"answer_accuracy": accuracy}, scores, json.dumps(accuracy))
    merged = pickle.loads(pickle.dumps(first))
    merged.merge(pickle.loads(pickle.dumps(second)))
    assert merged.to_dict()["overall"]["metrics"] == whole.to_dict()["overall"]["metrics"]
    metrics = whole.to_dict()["overall"]["metrics"]
    assert metrics["pass@k"] == pytest.approx(2 / 3)
    assert metrics["group_std_mean"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert metrics["zero_variance_all_wrong_answer"] == 1 and metrics["zero_variance_identical_other"] == 1


def test_paired_differences_standard_error_and_bootstrap_interval() -> None:
    rng = np.random.default_rng(7)
    diffs = list(rng.normal(0.05, 0.2, size=300))
    paired = PairedDiffs(limit=10_000)
    for d in diffs:
        paired.add(float(d))
    assert paired.mean == pytest.approx(statistics.fmean(diffs), abs=1e-12)
    assert paired.stderr() == pytest.approx(statistics.stdev(diffs) / math.sqrt(len(diffs)), abs=1e-12)
    interval = paired.interval()
    assert interval is not None and interval == paired.interval()  # seeded: reproducible
    # the same resampling, by hand
    boot = np.random.default_rng(0)
    values = np.asarray(diffs)
    means = values[boot.integers(0, len(values), size=(1000, len(values)))].mean(axis=1)
    assert interval == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)
    # and close to the normal interval of the mean
    mean, se = statistics.fmean(diffs), statistics.stdev(diffs) / math.sqrt(len(diffs))
    assert abs(interval[0] - (mean - 1.96 * se)) < 0.5 * se and abs(interval[1] - (mean + 1.96 * se)) < 0.5 * se


def test_paired_reservoir_is_bounded() -> None:
    paired = PairedDiffs(limit=50)
    for i in range(1000):
        paired.add(float(i % 7))
    assert len(paired.reservoir) == 50 and paired.n == 1000
    assert paired.mean == pytest.approx(statistics.fmean(float(i % 7) for i in range(1000)))
