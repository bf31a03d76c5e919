"""``score --workers N``: each row validated once, each distinct instance of a chunk handed over once, a worker scoring as this process does.

The pool's chunk (:data:`trace_tasks.runs._engine.Payload`) carries each
distinct compiled instance once, handed over (:meth:`CompiledInstance.handover`);
a worker rebuilds it without validating it again and scores each row through
the in-process call, so the results (metrics included) are the in-process
results. The handover is checked bit for bit against the compiled instance on
every recorded conformance call. The slow tests in ``test_score.py`` and
``test_metrics.py`` compare real ``--workers 2`` outputs byte for byte.
"""

from __future__ import annotations

import json
import pickle
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.cli.helpers import COMBINED
from tests.conformance.records import load
from trace_tasks import pin_reward_id, resolve_reward_contract, unpin_reward_id
from trace_tasks.data import INSTANCE_FIELDS, CompiledInstance, InstanceError, compile_instance, from_handover
from trace_tasks.data import _compiled as compiled_module
from trace_tasks.plugins import reset_registry
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
        assert slot.compiled is not None and instances[index] == slot.compiled.handover()


def _in_a_worker(chunk: _engine.Payload) -> _engine.Payload:
    """The chunk as a worker receives it: through pickle, as the pool sends it."""
    received: _engine.Payload = pickle.loads(pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
    return received


@pytest.mark.parametrize("options", [{}, {"trace_reward_mode": "answer"}, {"format_weight": 0.25}])
@pytest.mark.parametrize("metrics", [False, True])
def test_a_worker_scores_as_this_process_does_without_validating(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], metrics: bool
) -> None:
    slots = [slot for slot in _slots() if slot.item is not None]
    opts = options_from(options)
    score = score_compiled_with_metrics if metrics else _engine.score_compiled
    expected = [score(slot, opts) for slot in slots]
    chunk = _in_a_worker(_engine.payload(slots))
    rebuilt: list[Any] = []
    monkeypatch.setattr(_engine, "from_handover", lambda state: rebuilt.append(state) or from_handover(state))

    def validated(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker validated an instance again")

    monkeypatch.setattr(compiled_module, "check", validated)
    results = _engine.score_payload(chunk, options, metrics)
    assert repr(results) == repr(expected)  # bit for bit, key order included
    assert rebuilt == chunk[0]  # each distinct instance rebuilt once in the "worker", in order


def test_an_instance_the_worker_cannot_rebuild_names_its_rows() -> None:
    (state, *_), _ = _engine.payload([slot for slot in _slots() if slot.item is not None])
    unknown = (*state[:3], "no_such_type", *state[4:])
    results = _engine.score_payload(([unknown], [(0, "x"), (0, "y")]), {})
    assert len(results) == 2 and all(result["error"].startswith("InstanceError") for result in results)
    assert "'no_such_type' is not installed" in results[0]["error"]
    with pytest.raises(InstanceError):
        from_handover(unknown)


def _outcome(instance: CompiledInstance, response: Any, options: dict[str, Any]) -> str:
    """What scoring gives, as text (repr keeps every bit and the key order), or the error it raises."""
    try:
        return repr(instance.score(response, **options))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


CONFORMANCE = [record for record in load("original-scorer.jsonl") if record["fn"] == "score_trace_response"]


def test_a_handed_over_instance_scores_every_recorded_call_as_the_compiled_one() -> None:
    """Every valid instance of the conformance replay, handed over through pickle, scored with the call's own options.

    The sizes go into the instance where it stays valid with them (its found sizes are handed over), else into the call.
    """
    compared = 0
    for record in CONFORMANCE:
        for fields in (INSTANCE_FIELDS, ("answer_gt", "annotation_gt", "reward_contract")):
            kwargs = dict(record["kwargs"])
            response = kwargs.pop("response", None)
            instance = {k: kwargs.pop(k) for k in fields if k in kwargs}
            try:
                compiled = compile_instance(instance)
            except InstanceError:
                continue
            state = pickle.loads(pickle.dumps(compiled.handover(), protocol=pickle.HIGHEST_PROTOCOL))
            received = from_handover(state)
            assert _outcome(received, response, kwargs) == _outcome(compiled, response, kwargs), record["id"]
            compared += 1
            break
    assert compared > 200  # most records hold a valid instance


def test_a_pinned_relaxed_answer_is_handed_over() -> None:
    """``answer_relaxed_match_v0`` (pinned, as ``TRACE_TASKS_REWARD_IDS`` pins it in every worker): 10.3 matches 10."""
    pin_reward_id("number", "answer_relaxed_match_v0")
    try:
        contract = resolve_reward_contract(answer_type="number", annotation_type="bbox").to_dict()
        instance = {
            "answer_gt": {"type": "number", "value": 10},
            "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
            "reward_contract": contract,
        }
        compiled = compile_instance(instance)
        received = from_handover(pickle.loads(pickle.dumps(compiled.handover())))
        for answer in (10.3, 12, "10"):
            response = json.dumps({"answer": answer, "annotation": [0, 0, 10, 9]})
            assert _outcome(received, response, {}) == _outcome(compiled, response, {})
        assert received.score(json.dumps({"answer": 10.3, "annotation": [0, 0, 10, 10]}))["answer_reward"] == 1.0
    finally:
        unpin_reward_id("number")
        reset_registry()


def test_an_instance_without_an_answer_keeps_its_mode_check() -> None:
    row = json.loads(COMBINED.read_text().splitlines()[0])
    instance = {k: v for k, v in row.items() if k not in ("response", "answer_gt")}
    compiled = compile_instance(instance)
    received = from_handover(pickle.loads(pickle.dumps(compiled.handover())))
    for options in ({}, {"trace_reward_mode": "annotation_only"}):
        assert _outcome(received, row["response"], options) == _outcome(compiled, row["response"], options)
    assert _outcome(received, row["response"], {}).startswith("OptionError")


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
    """A pool that runs each chunk at once in this process (the worker's very call, on what pickle carries), to keep these tests fast."""

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> Future[Any]:
        fn, args, kwargs = pickle.loads(pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL))
        future: Future[Any] = Future()
        future.set_result(pickle.loads(pickle.dumps(fn(*args, **kwargs), protocol=pickle.HIGHEST_PROTOCOL)))
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
