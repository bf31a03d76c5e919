"""``score --workers N``: each distinct instance of a chunk is sent and compiled once, and a worker scores as this process does.

The pool's chunk (:data:`trace_tasks.runs._engine.Payload`) carries each
distinct instance once; a worker compiles it once per chunk and scores each
row through the in-process call, so the results (metrics included) are the
in-process results. The slow tests in ``test_score.py`` and ``test_metrics.py``
compare real ``--workers 2`` outputs byte for byte.
"""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.cli.helpers import COMBINED
from trace_tasks.data import compile_instance
from trace_tasks.runs import RunSettings, _engine, score_files
from trace_tasks.runs._jsonl import Line
from trace_tasks.runs._metrics import score_compiled_with_metrics
from trace_tasks.runs._rows import Slot, combined_slots
from trace_tasks.scoring import options_from


def _slots() -> list[Slot]:
    lines = [Line(n, json.loads(text)) for n, text in enumerate(COMBINED.read_text().splitlines(), 1)]
    return list(combined_slots(lines))


def test_a_payload_holds_each_distinct_instance_once() -> None:
    slots = _slots()
    instances, rows = _engine.payload(slots)
    distinct = {id(slot.compiled) for slot in slots if slot.compiled is not None}
    assert len(instances) == len(distinct) < len(rows)  # the example file has several responses per instance
    assert [response for _, response in rows] == [slot.item["response"] for slot in slots if slot.item is not None]
    for (index, _), slot in zip(rows, [s for s in slots if s.compiled is not None], strict=True):
        assert slot.compiled is not None and instances[index] is slot.compiled.data


@pytest.mark.parametrize("options", [{}, {"trace_reward_mode": "answer"}, {"format_weight": 0.25}])
@pytest.mark.parametrize("metrics", [False, True])
def test_a_worker_scores_as_this_process_does(monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], metrics: bool) -> None:
    slots = [slot for slot in _slots() if slot.item is not None]
    opts = options_from(options)
    score = score_compiled_with_metrics if metrics else _engine.score_compiled
    expected = [score(slot, opts) for slot in slots]
    chunk = _engine.payload(slots)
    compiled: list[Any] = []
    monkeypatch.setattr(_engine, "compile_instance", lambda data: compiled.append(data) or compile_instance(data))
    assert _engine.score_payload(chunk, options, metrics) == expected
    assert compiled == chunk[0]  # each distinct instance compiled once in the "worker", in order


def test_an_instance_the_worker_cannot_compile_names_its_rows() -> None:
    instances = [{"answer_gt": {"type": "no_such_type", "value": 1}, "annotation_gt": {}, "reward_contract": {}}]
    results = _engine.score_payload((instances, [(0, "x"), (0, "y")]), {})
    assert len(results) == 2 and all(result["error"].startswith("InstanceError") for result in results)


@pytest.mark.parametrize(
    ("cores", "load", "workers", "noted"),
    [
        (2, 0.9, 2, False),  # only this process running: both cores idle
        (2, 1.5, 2, True),  # another process holds half a core
        (2, 3.0, 2, True),  # the other core busy
        (8, 3.0, 4, False),
        (2, 9.0, 1, False),  # one worker: nothing to note
    ],
)
def test_busy_cores_are_noted(monkeypatch: pytest.MonkeyPatch, cores: int, load: float, workers: int, noted: bool) -> None:
    monkeypatch.setattr(_engine.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(_engine.os, "getloadavg", lambda: (load, load, load))
    note = _engine.busy_cores_note(workers)
    assert (note is not None) == noted
    if note is not None:
        assert "\n" not in note and f"--workers {workers}" in note and f"{load:.1f}" in note


def test_no_load_average_no_note(monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(_engine.os, "getloadavg", unknown)
    assert _engine.busy_cores_note(2) is None


class InlineExecutor:
    """A pool that runs each chunk at once in this process (the worker's very call), to keep these tests fast."""

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def test_a_busy_machine_gets_one_note_and_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [json.loads(text) for text in COMBINED.read_text().splitlines()]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(dict(row, id=f"{row['id']}#{k}")) + "\n" for k in range(25) for row in rows))
    monkeypatch.setattr(_engine.os, "getloadavg", lambda: (7.5, 7.5, 7.5))
    monkeypatch.setattr(_engine._Pool, "_start", lambda self: InlineExecutor())
    results = {}
    for workers in (1, 2):
        settings = RunSettings(input=str(source), output=str(tmp_path / f"{workers}.jsonl"), workers=workers)
        results[workers] = score_files(attrs.evolve(settings, summary=str(tmp_path / f"{workers}.json")))
        err = capsys.readouterr().err
        notes = [line for line in err.splitlines() if line.startswith("note: --workers")]
        assert len(notes) == (workers > 1)
    assert (tmp_path / "1.jsonl").read_bytes() == (tmp_path / "2.jsonl").read_bytes()  # 2,700 rows: two chunks
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()
    assert results[1].summary == results[2].summary and results[1].lines == 2700
