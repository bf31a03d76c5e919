"""A refusal is an ERROR line even where nothing configured logging (issue 29).

OpenRLHF 0.11.2's reward workers configure no handler for our loggers, so Python's
last-resort handler printed the refusal as a bare stderr line, without its level.
"""

from __future__ import annotations

import logging

import pytest

from trace_tasks.integrations import openrlhf
from trace_tasks.integrations._common import log_error


def _bare_logger(name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.propagate = False  # no handler on the chain: what an unconfigured process has
    log.handlers.clear()
    return log


def test_without_handlers_the_line_names_its_level(capsys: pytest.CaptureFixture[str]) -> None:
    log = _bare_logger("trace_tasks.tests.bare")
    log_error(log, "refused %s", "labels[0]")
    assert capsys.readouterr().err == "ERROR trace_tasks.tests.bare: refused labels[0]\n"


def test_openrlhf_refusal_on_an_unconfigured_worker(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    log = openrlhf.logger
    monkeypatch.setattr(log, "propagate", False)
    monkeypatch.setattr(log, "handlers", [])
    got = openrlhf.make_reward_func()(["p{"], ["p"], ['{"answer_gt": 1, "annotation_gt": 2, "reward_contract": 3, "x": 9}'])
    assert got["extra_logs"]["trace_refused"][0] == 1.0
    err = capsys.readouterr().err
    assert err.startswith("ERROR trace_tasks.integrations.openrlhf: trace_tasks refuses a broken trace instance")
    assert "labels[0] (position 0 in this call)" in err


def test_with_handlers_it_is_plain_logging(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="trace_tasks.tests.handled"):
        log_error(logging.getLogger("trace_tasks.tests.handled"), "refused")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.ERROR, "refused")]
