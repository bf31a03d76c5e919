"""One row's mistake is that row's error, never the batch's silent zero (issue 37, items 7 and 18).

* A bad scorer option in one row's ``extra_info`` (verl) or ``extra_info`` column
  (TRL) raises :class:`OptionError` naming the row; under ``on_invalid="zero"``
  (verl) the row is refused like a broken instance (ERROR line, every key 0,
  ``trace_refused`` 1.0) and the other rows are scored.
* A response that is not text (a list, ``None``, bytes) was scored 0 with no
  error or flag by verl, OpenRLHF and EasyR1: it now raises
  :class:`ResponseTypeError` naming the row, or, where the adapter has
  ``on_invalid="zero"`` (verl, OpenRLHF), is refused and flagged the same way.
  TRL names the position of a ``None`` completion.

The calling conventions are those of the adapters' own tests (verl's
``compute_score(data_source, solution_str, ground_truth, extra_info)``, TRL's
keyword columns, OpenRLHF's ``reward_func(queries, prompts, labels)``, EasyR1's
list of ``{"response", "response_length", "ground_truth"}``), which cite the
frameworks' code.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from trace_tasks.errors import OptionError, ResponseTypeError
from trace_tasks.integrations import easyr1, openrlhf, trl, verl
from trace_tasks.integrations._common import REFUSED_KEY

from .helpers import INSTANCES, RESPONSES, as_json, reference

GOOD = RESPONSES[0]
TRUTH = as_json(INSTANCES[0])
BAD_OPTION = {"index": 7, "trace_reward_mode": "everything"}  # not a mode
NOT_TEXT: list[Any] = [["a", "list"], None, b'{"answer": 1}', 3]


# -- verl ------------------------------------------------------------------------------------------


def test_verl_a_bad_option_in_extra_info_names_the_row() -> None:
    with pytest.raises(
        OptionError, match=r"ground_truth \(dataset row extra_info\['index'\]=7\): a scorer option of this row.*got 'everything'"
    ):
        verl.make_compute_score()("trace", GOOD, TRUTH, extra_info=BAD_OPTION)
    batch = verl.make_compute_score_batch()
    with pytest.raises(OptionError, match=r"ground_truths\[1\] \(position 1 in this call\): a scorer option.*got 'everything'"):
        batch(["t", "t"], [GOOD, GOOD], [TRUTH, TRUTH], [None, {"trace_reward_mode": "everything"}])


def test_verl_on_invalid_zero_refuses_only_the_row(caplog: pytest.LogCaptureFixture) -> None:
    batch = verl.make_compute_score_batch(on_invalid="zero")
    with caplog.at_level(logging.ERROR, logger=verl.logger.name):
        rows = batch(["t"] * 3, [GOOD, GOOD, GOOD], [TRUTH] * 3, [None, BAD_OPTION, None])
    expected = reference(GOOD, INSTANCES[0])["overall"]
    assert [row[REFUSED_KEY] for row in rows] == [0.0, 1.0, 0.0]  # type: ignore[index]
    assert [row["score"] for row in rows] == [expected, 0.0, expected]  # type: ignore[index]
    assert set(rows[1]) == set(rows[0])  # type: ignore[arg-type]
    (record,) = caplog.records
    assert "a bad scorer option of the row" in record.getMessage() and "extra_info['index']=7" in record.getMessage()
    single = verl.make_compute_score(on_invalid="zero", returns="float")
    assert single("trace", GOOD, TRUTH, extra_info=BAD_OPTION) == 0.0


@pytest.mark.parametrize("response", NOT_TEXT)
def test_verl_a_response_that_is_not_text(response: Any, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ResponseTypeError, match=r"ground_truth \(dataset row extra_info\['index'\]=3\): the response must be"):
        verl.make_compute_score()("trace", response, TRUTH, extra_info={"index": 3})
    with caplog.at_level(logging.ERROR, logger=verl.logger.name):
        row = verl.make_compute_score(on_invalid="zero")("trace", response, TRUTH, extra_info={"index": 3})
    assert isinstance(row, dict) and row[REFUSED_KEY] == 1.0 and row["score"] == 0.0
    assert "a response that is not text" in caplog.records[0].getMessage()


# -- TRL -------------------------------------------------------------------------------------------


def _trl_columns(n: int, **extra: Any) -> dict[str, Any]:
    inst = INSTANCES[0]
    return {name: [json.dumps(inst[name])] * n for name in ("answer_gt", "annotation_gt", "reward_contract")} | extra


def test_trl_a_bad_option_in_the_extra_info_column_names_the_position() -> None:
    func = trl.make_reward_func(log_metrics=False, log_extra=False)
    with pytest.raises(OptionError, match=r"position 1 in this call: a scorer option of this row.*got 'everything'"):
        func(completions=[GOOD, GOOD], **_trl_columns(2, extra_info=[None, {"trace_reward_mode": "everything"}]))


@pytest.mark.parametrize("completion", [None, b"bytes", 3.0])
def test_trl_a_completion_that_is_not_text_names_the_position(completion: Any) -> None:
    func = trl.make_reward_func(log_metrics=False, log_extra=False)
    with pytest.raises(ResponseTypeError, match=r"completions\[1\] \(position 1 in this call\) must be a string"):
        func(completions=[GOOD, completion], **_trl_columns(2))


# -- OpenRLHF --------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", NOT_TEXT)
def test_openrlhf_a_query_that_is_not_text(query: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger=openrlhf.logger.name):
        got = openrlhf.make_reward_func()([GOOD, query], ["", ""], [TRUTH, TRUTH])
    refused = [float(v) for v in got["extra_logs"][REFUSED_KEY]]
    assert refused == [0.0, 1.0] and float(got["rewards"][1]) == 0.0
    assert "queries[1] (position 1 in this call)" in caplog.records[0].getMessage()
    with pytest.raises(ResponseTypeError, match=r"queries\[1\] \(position 1 in this call\): a query must be"):
        openrlhf.make_reward_func(on_invalid="raise")([GOOD, query], ["", ""], [TRUTH, TRUTH])
    with pytest.raises(ResponseTypeError, match=r"queries\[0\]"):
        openrlhf.score_queries([query], None, [TRUTH])


# -- EasyR1 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("response", NOT_TEXT)
def test_easyr1_a_response_that_is_not_text_names_the_input(response: Any) -> None:
    inputs = [{"response": GOOD, "response_length": 1, "ground_truth": TRUTH}, {"response": response, "ground_truth": TRUTH}]
    with pytest.raises(ResponseTypeError, match=r"reward_inputs\[1\]\.response \(position 1 in this call\): the response must"):
        easyr1.make_compute_score()(inputs)
    with pytest.raises(ResponseTypeError, match=r"reward_input\.response: the response must"):
        easyr1.make_compute_score()(inputs[1])
