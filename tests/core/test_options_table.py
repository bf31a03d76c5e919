"""The options table (issue 36, item 5) and options no float holds (issue 37, item 6).

:class:`trace_tasks.ScoringOptions` is the one record of the scorer options and its
fields carry the one table (:data:`trace_tasks.scoring.OPTIONS`): these tests check
that every place that names the options reads it, and that the default result
is what the contract says (helpers.LEADING_KEYS is the independent copy).
"""

from __future__ import annotations

import argparse
import inspect
import math
from fractions import Fraction
from typing import Any

import pytest

import trace_tasks
from trace_tasks import CompiledInstance, OptionError, ScoringOptions, compile_instance, score_trace_batch, score_trace_response
from trace_tasks.cli._options import add_scoring_options, scoring_options
from trace_tasks.cli.report._data import Row, run_options
from trace_tasks.data import SCORE_KEYWORDS
from trace_tasks.integrations._common import SCORER_OPTIONS, scorer_options
from trace_tasks.scoring import NUMBER, OPT_IN_KEYS, OPTION_KEYS, OPTIONS, SWITCH, options_from

from .helpers import LEADING_KEYS, contract

NAMES = [row.name for row in OPTIONS]
CORRECT = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
INSTANCE = {
    "answer_gt": {"type": "integer", "value": 7},
    "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
    "reward_contract": contract(),
    "image_size": [640, 480],  # a declared prediction frame needs it
}
#: A departure from every default, as its API keywords.
DEPARTING = {
    "format_weight": 0.25,
    "trace_reward_mode": "answer",
    "trace_annotation_reward_formula": "additive",
    "answer_weight": 3,
    "annotation_weight": 1,
    "point_half_life_px": 40.0,
    "answer_relative_tolerance": "0.1",  # read as text by the command line, resolved to 0.1
    "trace_recovery": "final_only",
    "format_accept_answer_tag": True,
    "prediction_frame": "rel1000",
    "resize": '{"factor": 32, "min_pixels": 4096, "max_pixels": 524288}',
    "annotation_native": True,
    "tool_call": '{"name": "click", "argument": ["x", "y"]}',  # read as text by the command line
}


def test_the_record_is_public_from_both_doors() -> None:
    assert trace_tasks.ScoringOptions is trace_tasks.scoring.ScoringOptions
    assert "ScoringOptions" in trace_tasks.__all__ and "ScoringOptions" in trace_tasks.scoring.__all__


def test_every_field_is_one_row_and_every_row_a_field() -> None:
    import attrs

    assert [field.name for field in attrs.fields(ScoringOptions)] == NAMES
    assert sorted(DEPARTING) == sorted(NAMES)  # this file departs from every option


def test_the_echo_keys_are_the_contracts() -> None:
    start = LEADING_KEYS.index("format_weight")
    assert LEADING_KEYS[start : LEADING_KEYS.index("format_structure_ok")] == OPTION_KEYS
    assert OPT_IN_KEYS == (
        "trace_answer_relative_tolerance",
        "trace_recovery_lenient",
        "trace_recovery_outside_think",
        "trace_recovery_final_only",
        "format_accept_answer_tag",
    )


def test_the_default_record_is_the_default_call() -> None:
    record = ScoringOptions()
    assert {row.name: getattr(record, row.name) for row in OPTIONS} == {row.name: row.default for row in OPTIONS}
    assert options_from({}) == record


def test_construction_validates_and_canonicalises() -> None:
    record = ScoringOptions(
        trace_reward_mode=" Annotation ", trace_annotation_reward_formula="linear", answer_weight=3, annotation_weight=1
    )
    assert record.trace_reward_mode == "answer_and_annotation"
    assert record.trace_annotation_reward_formula == "additive"
    assert (record.answer_weight, record.annotation_weight) == (0.75, 0.25)
    assert ScoringOptions(answer_weight=2, annotation_weight=2) == ScoringOptions()
    with pytest.raises(OptionError, match="format_weight"):
        ScoringOptions(format_weight=2)


@pytest.mark.parametrize(
    "function",
    [score_trace_response, CompiledInstance.score, CompiledInstance.score_group, score_trace_batch],
    ids=lambda f: f.__qualname__,
)
def test_the_signatures_docs_come_from_the_table(function: Any) -> None:
    doc = inspect.getdoc(function) or ""
    for row in OPTIONS:
        line = next(line for line in doc.splitlines() if line.startswith(f":param {row.name}:"))
        assert row.description in line and row.flag in line and repr(row.default) in line


def test_score_trace_response_takes_each_option_with_the_tables_default() -> None:
    parameters = inspect.signature(score_trace_response).parameters
    assert {name: parameters[name].default for name in NAMES} == {row.name: row.default for row in OPTIONS}


def test_the_integrations_and_the_batch_accept_the_tables_names() -> None:
    assert tuple(NAMES) == SCORER_OPTIONS
    assert (*NAMES, "image_sizes", "extra_info") == SCORE_KEYWORDS


def test_the_command_line_flags_come_from_the_table() -> None:
    parser = argparse.ArgumentParser()
    add_scoring_options(parser)
    argv: list[str] = []
    for row in OPTIONS:
        value = DEPARTING[row.name]
        argv += [row.flag] if row.cli == SWITCH else [row.flag, str(value)]
    assert scoring_options(parser.parse_args(argv)) == {
        name: float(value) if OPTIONS[NAMES.index(name)].cli == NUMBER else value for name, value in DEPARTING.items()
    }
    defaults = scoring_options(parser.parse_args([]))
    assert defaults == {row.name: row.default for row in OPTIONS}


@pytest.mark.parametrize(
    "options", [{}, DEPARTING, {"trace_recovery": "outside_think"}, {"answer_weight": 0, "format_weight": 1}]
)
def test_the_echo_decodes_back_to_the_options(options: dict[str, Any]) -> None:
    result = score_trace_response(response=CORRECT, **INSTANCE, **options)
    record = ScoringOptions(**options)
    # The echo says a tool call was declared, not which: the report is told it (report --tool-call).
    decoded = run_options(Row(number=1, id="a", line=1, type="bbox", scores=result), record.tool_call)
    # The half-life is read from the family's diagnostics (the context it scored in), not from the echo.
    assert {k: v for k, v in decoded.items() if k != "point_half_life_px"} == {
        k: v for k, v in record.keywords().items() if k != "point_half_life_px"
    }
    assert options_from(decoded).keywords() == {**record.keywords(), "point_half_life_px": decoded["point_half_life_px"]}


def test_compiled_score_takes_the_record() -> None:
    compiled = compile_instance(INSTANCE)
    record = ScoringOptions(**DEPARTING)
    lenient = score_trace_response(response=CORRECT, **INSTANCE, **DEPARTING)
    assert compiled.score(CORRECT, record) == lenient
    assert compiled.score(CORRECT, options=record) == compiled.score(CORRECT, **DEPARTING)
    assert compiled.score_group([CORRECT, ""], record)[0] == lenient
    # keywords override the record's fields
    assert compiled.score(CORRECT, record, format_weight=0.0) == score_trace_response(
        response=CORRECT, **INSTANCE, **{**DEPARTING, "format_weight": 0.0}
    )
    assert (
        compiled.score(CORRECT, ScoringOptions()) == compiled.score(CORRECT) == score_trace_response(response=CORRECT, **INSTANCE)
    )
    with pytest.raises(OptionError, match="ScoringOptions"):
        compiled.score(CORRECT, {"format_weight": 0.1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword argument 'answer_gt'"):
        compiled.score(CORRECT, answer_gt={})


def test_score_trace_batch_takes_the_record() -> None:
    record = ScoringOptions(**DEPARTING)
    items = [{**INSTANCE, "response": CORRECT}, {**INSTANCE, "response": CORRECT, "format_weight": 0.0}]
    got = score_trace_batch(items, options=record)
    assert got[0] == score_trace_response(response=CORRECT, **INSTANCE, **DEPARTING)
    assert got[1] == score_trace_response(response=CORRECT, **INSTANCE, **{**DEPARTING, "format_weight": 0.0})


# --- issue 37, item 6: options no float holds are OptionErrors naming the option -------------------

HUGE = [10**400, -(10**400), Fraction(10**400), math.inf, -math.inf, math.nan, float("nan")]
NUMERIC = [row.name for row in OPTIONS if row.cli == NUMBER]


@pytest.mark.parametrize("value", HUGE, ids=repr)
@pytest.mark.parametrize("name", NUMERIC)
def test_a_number_no_float_holds_is_an_option_error_naming_the_option(name: str, value: Any) -> None:
    compiled = compile_instance(INSTANCE)
    calls = [
        lambda: score_trace_response(response=CORRECT, **INSTANCE, **{name: value}),
        lambda: compiled.score(CORRECT, **{name: value}),
        lambda: compiled.score_group([CORRECT], **{name: value}),
        lambda: ScoringOptions(**{name: value}),
        lambda: options_from({name: value}),
        lambda: scorer_options({name: value}, strict=True),
        lambda: trace_tasks.score_instance(INSTANCE, CORRECT, **{name: value}),
    ]
    for call in calls:
        with pytest.raises(OptionError, match=name) as caught:
            call()
        assert len(str(caught.value)) < 400  # named, never printed whole


@pytest.mark.parametrize("value", [10**400, math.nan])
def test_a_batch_item_with_such_an_option_is_an_error_row(value: Any) -> None:
    got = score_trace_batch([{**INSTANCE, "response": CORRECT, "answer_weight": value}, {**INSTANCE, "response": CORRECT}])
    assert "OptionError" in str(got[0]["error"]) and "answer_weight" in str(got[0]["error"])
    assert got[1] == score_trace_response(response=CORRECT, **INSTANCE)


@pytest.mark.parametrize("timeout", [10**400, math.nan, -1])
def test_a_batch_timeout_no_float_holds_is_an_option_error(timeout: Any) -> None:
    with pytest.raises(OptionError, match="timeout"):
        score_trace_batch([], timeout=timeout)


def test_weights_that_sum_past_the_largest_float_are_an_option_error() -> None:
    with pytest.raises(OptionError, match="sum to a positive finite value"):
        ScoringOptions(answer_weight=1e308, annotation_weight=1e308)


def test_score_trace_response_hands_the_options_over_in_the_tables_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path passes its keywords positionally (one cache lookup): in exactly the table's order."""
    from trace_tasks.core import reward_scoring

    seen: list[tuple[Any, ...]] = []
    real = reward_scoring.resolve_options

    def spy(*values: Any) -> ScoringOptions:
        seen.append(values)
        return real(*values)

    monkeypatch.setattr(reward_scoring, "resolve_options", spy)
    score_trace_response(response=CORRECT, **INSTANCE, **DEPARTING)
    assert seen == [tuple(DEPARTING[name] for name in NAMES)]


def test_options_from_remembers_a_mapping_by_its_values_and_their_types() -> None:
    """An adapter's options mapping is met on every request: the same record again, and ``1``, ``1.0``, ``True`` kept apart."""
    first = options_from({"trace_reward_mode": "answer", "format_weight": 0.25})
    assert options_from({"trace_reward_mode": "answer", "format_weight": 0.25}) is first
    assert options_from({"format_weight": 0.25, "trace_reward_mode": "answer"}) == first  # another order: an equal record
    one, one_float = options_from({"answer_weight": 1}), options_from({"answer_weight": 1.0})
    assert one == ScoringOptions(answer_weight=1) and one_float == ScoringOptions(answer_weight=1.0)
    with pytest.raises(OptionError, match="format_weight"):
        options_from({"format_weight": True})  # a boolean is no weight, whatever was remembered for 1
    with pytest.raises(OptionError, match=r"unknown scorer option\(s\) \['nope'\]"):
        options_from({"nope": 1})
    assert options_from({"resize": {"factor": 28}}) == options_from({"resize": {"factor": 28}})  # unhashable: no memo
