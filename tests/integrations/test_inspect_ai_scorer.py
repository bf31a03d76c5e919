"""The inspect-ai scorer's per-sample work without inspect-ai (the default environment).

inspect-ai itself runs the scorer in ``tests/frameworks/test_inspect_ai.py``
(opt-in); here :class:`TraceScorer`, which the registered scorer awaits once
per sample with ``state.metadata`` and ``state.output.completion``, is checked
on every pair, so CI covers the values without the 900 MB environment.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import pytest

from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, stable_keys
from trace_tasks.integrations.inspect_ai import TraceScorer, score_keys
from trace_tasks.integrations.lmms_eval import FIELD_METRICS, REWARD_METRICS, make_process_results

from .helpers import INSTANCES, RESPONSES, instance, pairs, reference


def _scorer(**kwargs: Any) -> TraceScorer:
    settings: dict[str, Any] = {"instance_key": None, "on_invalid": "raise", "log_keys": "charted", "metrics": None}
    options = {k: kwargs.pop(k) for k in list(kwargs) if k not in settings}
    settings.update(kwargs)
    return TraceScorer(options=options, **settings)


def test_every_pair_rewards_charted_keys_and_field_metrics() -> None:
    scorer = _scorer(format_weight=0.1)
    fields = make_process_results(format_weight=0.1)
    assert score_keys() == (*REWARD_METRICS, *[k for k in CHARTED_KEYS if k not in REWARD_METRICS], *FIELD_METRICS, REFUSED_KEY)
    for reply, inst in pairs():
        value, result = scorer.score(inst, reply, "sample id=1")
        expected = reference(reply, inst, format_weight=0.1)
        assert result == expected
        assert list(value) == list(score_keys())
        for key in (*REWARD_METRICS, *CHARTED_KEYS):
            assert value[key] == expected[key]
        field = fields(inst, [reply])
        for key in FIELD_METRICS:
            assert math.isnan(value[key]) if field[key] is None else value[key] == field[key]
        assert value[REFUSED_KEY] == 0.0


def test_instance_key_extra_info_log_keys_and_metrics() -> None:
    scorer = _scorer(instance_key="instance", log_keys="all", metrics=["overall", "answer_parse_ok"], trace_reward_mode="answer")
    for i, inst in enumerate(INSTANCES):
        meta: dict[str, Any] = {"instance": json.dumps(inst)}
        mode = "answer"
        if i == 3:
            meta["extra_info"] = {"trace_reward_mode": "annotation"}
            mode = "annotation"
        value, _ = scorer.score(meta, RESPONSES[i], "sample id=1")
        expected = reference(RESPONSES[i], inst, trace_reward_mode=mode)
        assert value == {"overall": expected["overall"], "answer_parse_ok": expected["answer_parse_ok"]}
    assert set(stable_keys()) <= set(score_keys("all"))


BROKEN = instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})


def test_broken_instances_raise_naming_the_sample_or_score_zero(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match=r"sample id='s9' \(epoch 1\): invalid instance"):
        _scorer().score(BROKEN, RESPONSES[1], "sample id='s9' (epoch 1)")
    with caplog.at_level(logging.ERROR, logger="trace_tasks.integrations.inspect_ai"):
        value, result = _scorer(on_invalid="zero").score(BROKEN, RESPONSES[1], "sample id='s9'")
    assert result == {}
    assert value[REFUSED_KEY] == 1.0 and value["overall"] == 0.0 and value["answer_accuracy"] == 0.0
    assert math.isnan(value["f1@iou0.5"])
    assert any("sample id='s9'" in r.getMessage() for r in caplog.records)
    value, _ = _scorer(on_invalid="zero").score(None, RESPONSES[1], "sample id='s10'")  # no metadata at all
    assert value[REFUSED_KEY] == 1.0


def test_settings_are_checked_when_built() -> None:
    for bad in (
        {"on_invalid": "skip"},
        {"log_keys": "some"},
        {"metrics": ["nope"]},
        {"metrics": "overall"},
        {"format_weigth": 0.1},
    ):
        with pytest.raises(ValueError):
            _scorer(**bad)
