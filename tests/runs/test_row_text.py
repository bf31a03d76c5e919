"""``score --workers N`` with a JSON Lines output: a worker sends each row back as its output line.

A worker writes each scored row as the line the command would have written
(:func:`trace_tasks.runs._rows.row_text`) and sends only the scores the summary
reads beside it (:data:`trace_tasks.runs._summary.TALLIED`). Every line must be
the bytes of the in-process path (``dumps`` of :func:`output_record`'s row,
after ``--columns``) and the summary the same to the last bit, whatever the id
and the kept columns hold; a refusal still names its input line.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli.helpers import COMBINED
from trace_tasks.runs import RunSettings, _engine, score_files
from trace_tasks.runs._columns import ALL_COLUMNS, STABLE_COLUMNS, stable_record
from trace_tasks.runs._jsonl import Line, dumps
from trace_tasks.runs._rows import Slot, combined_slots, counted_text, output_record, row_text
from trace_tasks.runs._summary import TALLIED, Summary

#: Values an id or a kept column may hold: a lone surrogate (the whole line is then ASCII-escaped), non-ASCII
#: text, a non-finite number (written as a string), nesting.
ODD_VALUES: list[Any] = [None, "é\ud800", "日本", math.inf, [1.5, -math.inf, {"k": math.nan}], {"deep": ["\udfff"]}, 7]


def _slots() -> list[Slot]:
    lines = [Line(n, json.loads(text)) for n, text in enumerate(COMBINED.read_text().splitlines(), 1)]
    slots = list(combined_slots(lines))
    return [
        attrs.evolve(
            slot, id=ODD_VALUES[n % len(ODD_VALUES)] if n % 3 else slot.id, extra=None if n % 2 else {"step": ODD_VALUES[n % 7]}
        )
        for n, slot in enumerate(slots)
    ]


def _in_a_worker(value: Any) -> Any:
    """What crosses the process boundary: pickled and loaded, as the pool does."""
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


@pytest.mark.parametrize("columns", [ALL_COLUMNS, STABLE_COLUMNS])
@pytest.mark.parametrize("options", [{}, {"trace_reward_mode": "answer"}, {"format_weight": 0.25}])
def test_a_workers_lines_are_the_bytes_and_counts_of_this_process(columns: str, options: dict[str, Any]) -> None:
    slots = _slots()
    scored = [slot for slot in slots if slot.item is not None]
    text = _engine.as_text(scored, columns)
    assert text is not None and len(text.heads) == len(scored)
    dicts = iter(_engine.score_payload(_engine.payload(scored), options))
    lines = iter(_in_a_worker(_engine.score_payload(_in_a_worker(_engine.payload(scored)), options, text=_in_a_worker(text))))
    by_dict, by_text = Summary(), Summary()
    by_dict.group_by = by_text.group_by = "step"
    for slot in slots:
        result, sent = (next(dicts), next(lines)) if slot.item is not None else (None, None)
        record = output_record(slot, result, by_dict)
        expected = dumps(stable_record(record) if columns == STABLE_COLUMNS else record)
        if slot.item is None:
            assert sent is None
            output_record(slot, None, by_text)
            continue
        assert isinstance(sent, tuple)  # every row of the example file is scored, so it comes back as text
        assert set(sent[1]) <= set(TALLIED)
        assert counted_text(slot, sent, by_text) == expected
    assert repr(by_text.to_dict()) == repr(by_dict.to_dict())  # the same totals, bit for bit


def test_a_refusal_comes_back_as_its_dict_and_names_its_line() -> None:
    (state, *_), _ = _engine.payload([slot for slot in _slots() if slot.item is not None])
    unknown = (*state[:3], "no_such_type", *state[4:])
    text = _engine.AsText([("a", 3, None), ("b", 4, {"step": 1})], stable=False)
    results = _engine.score_payload(([unknown], [(0, "x"), (0, "y")]), {}, text=text)
    assert all(isinstance(result, dict) and result["error"].startswith("InstanceError") for result in results)
    slot = Slot(4, "b", extra={"step": 1})
    record = output_record(attrs.evolve(slot, item={"response": "y"}), results[1], Summary())
    assert record["error"].startswith("line 4: InstanceError")


def test_field_metrics_keep_the_dicts() -> None:
    scored = [slot for slot in _slots() if slot.item is not None]
    assert _engine.as_text(scored, ALL_COLUMNS, metrics=True) is None
    text = _engine.as_text(scored, ALL_COLUMNS)
    results = _engine.score_payload(_engine.payload(scored), {}, metrics=True, text=text)
    assert all(isinstance(result, dict) for result in results)


@settings(max_examples=300, deadline=None)
@given(
    scores=st.dictionaries(
        st.sampled_from([*TALLIED, "accuracy", "format_weight", "annotation_type_bbox", "id", "line", "extra"]),
        st.floats(allow_nan=True) | st.sampled_from([0.0, 1.0]),
        min_size=1,
    ),
    head=st.tuples(st.sampled_from(ODD_VALUES), st.integers(1, 10**9), st.sampled_from([None, {"step": "é"}, {"s": math.inf}])),
    stable=st.booleans(),
)
def test_any_scores_give_the_line_and_tally_of_this_process(
    scores: dict[str, float], head: tuple[Any, int, Any], stable: bool
) -> None:
    """Scores named like an output column, non-finite scores: the same line as ``output_record`` writes, the same counts."""
    row_id, line, extra = head
    slot = attrs.evolve(Slot(line, row_id, extra=extra), item={"response": ""})
    by_dict, by_text = Summary(), Summary()
    by_dict.group_by = by_text.group_by = "step"
    record = output_record(slot, dict(scores), by_dict)
    sent = row_text(head, dict(scores), stable)
    assert isinstance(sent, tuple)
    assert counted_text(slot, sent, by_text) == dumps(stable_record(record) if stable else record)
    assert repr(by_text.to_dict()) == repr(by_dict.to_dict())


@pytest.mark.slow
@pytest.mark.parametrize("columns", [ALL_COLUMNS, STABLE_COLUMNS])
def test_two_workers_write_the_bytes_and_summary_of_one(tmp_path: Path, columns: str) -> None:
    source = tmp_path / "in.jsonl"
    lines = COMBINED.read_text().splitlines()
    with source.open("w") as out:
        for number in range(3000):
            row = json.loads(lines[number % len(lines)])
            row["id"] = f"{row['id']}-{number // len(lines)}" if number % 11 else f"é\ud800{number}"
            row["step"] = ODD_VALUES[number % len(ODD_VALUES)]
            out.write(json.dumps(row) + "\n")
        out.write("not json\n")
    outputs = {}
    for workers in (1, 2):
        target, summary = tmp_path / f"out-{workers}.jsonl", tmp_path / f"summary-{workers}.json"
        score_files(
            RunSettings(
                input=str(source),
                output=str(target),
                workers=workers,
                quiet=True,
                keep=("step",),
                group_by="step",
                output_columns=columns,
                summary=str(summary),
                metrics=False,  # with field metrics the rows come back as dicts (test_metrics.py compares those)
            )
        )
        outputs[workers] = (target.read_bytes(), summary.read_bytes())
    assert outputs[2] == outputs[1]
