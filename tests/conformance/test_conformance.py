"""Replay the recorded calls of the original scorer; differ only where docs/contracts.md improves on it."""

from __future__ import annotations

import math
from typing import Any

import pytest

import trace_tasks
from trace_tasks.core import reward_contracts, reward_scoring

from .records import decode_tagged, load, load_deviations

SCORER = load("original-scorer.jsonl")
HELPERS = load("original-helpers.jsonl")
DEVIATIONS = load_deviations()
#: Options the original offered and we deliberately do not (docs/contracts.md, "Compatibility").
RETIRED_OPTIONS = {"trace_answer_scoring", "legacy_strict_scorer", "bbox_iou_threshold"}
RETIRED_KEYS = {"trace_answer_scoring_legacy_strict"}
#: The flag a model-native prediction that does not parse adds (docs/contracts.md §7); the records predate it.
NATIVE_FORMAT_KEY = "annotation_native_format"
TOLERANCE = 1e-6


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= TOLERANCE
    return a == b


def _replayable(record: dict[str, Any]) -> bool:
    return not (RETIRED_OPTIONS & record["kwargs"].keys())


@pytest.mark.parametrize("record", [r for r in SCORER if _replayable(r)], ids=lambda r: r["id"])
def test_scorer_record(record: dict[str, Any]) -> None:
    kwargs = record["kwargs"]
    if record["id"] in DEVIATIONS:
        _check_deviation(record)
        return
    if "exception" in record:
        expected = getattr(__builtins__, record["exception"]["type"], None) or eval_exception(record)
        with pytest.raises(expected):
            trace_tasks.score_trace_response(**kwargs)
        return
    result = trace_tasks.score_trace_response(**kwargs)
    expected = {k: v for k, v in record["result"].items() if k not in RETIRED_KEYS}
    assert list(result) == list(expected)
    diffs = {k: (result[k], v) for k, v in expected.items() if not _same(result[k], v)}
    assert not diffs, diffs


def eval_exception(record: dict[str, Any]) -> type[BaseException]:
    import builtins

    return getattr(builtins, record["exception"]["type"])


def _check_deviation(record: dict[str, Any]) -> None:
    """A deviating record must still behave well: no crash (caller errors aside), finite values."""
    kwargs = record["kwargs"]
    if not isinstance(kwargs.get("response"), str):
        with pytest.raises(TypeError):
            trace_tasks.score_trace_response(**kwargs)
        return
    if NATIVE_FORMAT_KEY in DEVIATIONS[record["id"]]:
        # Only the flag is added (after every recorded key): everything else stays exact.
        result = trace_tasks.score_trace_response(**kwargs)
        expected = {k: v for k, v in record["result"].items() if k not in RETIRED_KEYS}
        assert list(result) == [*expected, NATIVE_FORMAT_KEY] and result[NATIVE_FORMAT_KEY] == 1.0
        assert not {k: (result[k], v) for k, v in expected.items() if not _same(result[k], v)}
        return
    try:
        result = trace_tasks.score_trace_response(**kwargs)
    except ValueError:
        # Only invalid options may raise; the reason column says which improvement.
        assert "ValueError" in DEVIATIONS[record["id"]]
        return
    assert all(isinstance(v, float) and math.isfinite(v) for v in result.values())
    assert 0.0 <= result["overall"] <= 1.0


HELPER_FUNCTIONS = {
    "evaluate_trace_response_format": reward_scoring.evaluate_trace_response_format,
    "extract_trace_prediction": reward_scoring.extract_trace_prediction,
    "resolve_annotation_reward_contract_id": reward_contracts.resolve_annotation_reward_contract_id,
    "resolve_reward_contract": lambda **kw: reward_contracts.resolve_reward_contract(**kw).to_dict(),
    "validate_reward_contract_payload": reward_contracts.validate_reward_contract_payload,
}


def _normalize(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("record", [r for r in HELPERS if r["fn"] in HELPER_FUNCTIONS], ids=lambda r: r["id"])
def test_helper_record(record: dict[str, Any]) -> None:
    fn = HELPER_FUNCTIONS[record["fn"]]
    kwargs = record["kwargs"]
    if record["id"] in DEVIATIONS:
        fn(**kwargs)  # must not raise
        return
    if "exception" in record:
        with pytest.raises(eval_exception(record)):
            fn(**kwargs)
        return
    got = fn(**kwargs)
    expected = decode_tagged(record["result"])
    if isinstance(got, tuple):
        got = list(got)
        expected = list(expected)
    if isinstance(got, dict) and isinstance(expected, dict):
        got = {k: got[k] for k in expected}
    assert _eq_nan(got, expected), (got, expected)


def _eq_nan(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq_nan(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_eq_nan(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b if not isinstance(a, (int, float)) else a == b and type(a) is type(b)
