"""The trainer adapters log each authoring-rule warning once per process, never per row, and score as before.

A dataset that breaks a rule of the annotation contract (a one-key map, a
point without an image size) is still scored exactly as
``score_trace_response`` scores it; the adapters' shared compile step
(``integrations._common.compile_ground_truth``) logs the rule once, on the
``trace_tasks.integrations._common`` logger, with the first row that broke it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from trace_tasks.integrations import _common, trl, verl

from .helpers import instance, reference

LOGGER = "trace_tasks.integrations._common"
ONE_KEY = instance({"type": "option_letter", "value": "B"}, {"type": "bbox_map", "value": {"k": [0, 0, 100, 50]}})
NO_SIZE = [
    instance({"type": "string", "value": "cat"}, {"type": "point", "value": [10 + n, 20]}, metadata={"n": n}) for n in range(5)
]
CLEAN = instance({"type": "option_letter", "value": "B"}, {"type": "bbox", "value": [0, 0, 100, 50]})
RESPONSE = '{"answer": "B", "annotation": {"k": [0, 0, 100, 50]}}'


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As in a new process: no rule logged yet, no row compiled yet."""
    monkeypatch.setattr(_common, "_logged_rules", set())
    _common.clear_instance_caches()
    yield
    _common.clear_instance_caches()


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_each_rule_is_logged_once_whatever_the_rows(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    score = verl.make_compute_score(returns="dict")
    for _ in range(3):  # epochs: every row again
        for row in [ONE_KEY, *NO_SIZE, CLEAN]:
            score("src", RESPONSE, json.dumps(row))
    messages = _logged(caplog)
    assert len(messages) == 2, messages
    assert messages[0].startswith("ground_truth: warning[single-key-map]: $.annotation_gt.value: a bbox_map with one key ('k')")
    assert messages[1].startswith("ground_truth: warning[missing-image-size]: $.image_size: ")
    assert all("logged once per process" in m for m in messages)


def test_a_clean_dataset_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    score = verl.make_compute_score(returns="dict")
    for n in range(4):
        clean = instance({"type": "integer", "value": 2}, {"type": "point_set", "value": [[n, 1], [5, 9]]}, image_size=[64, 48])
        score("src", "2", json.dumps(clean))
    assert _logged(caplog) == []


def test_warnings_never_change_the_reward(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    reward = trl.make_reward_func(log_metrics=False, log_extra=False)
    fields = ("answer_gt", "annotation_gt", "reward_contract", "metadata")
    rows = [ONE_KEY, *NO_SIZE]
    got = reward(
        prompts=["p"] * len(rows),
        completions=[RESPONSE] * len(rows),
        **{name: [json.dumps(row.get(name)) for row in rows] for name in fields},
    )
    assert got == [reference(RESPONSE, row)["overall"] for row in rows]
    assert [m.split(": ")[:2] for m in _logged(caplog)] == [
        ["position 0 in this call", "warning[single-key-map]"],
        ["position 1 in this call", "warning[missing-image-size]"],
    ]
