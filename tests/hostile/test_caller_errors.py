"""Caller mistakes still raise, however hostile the response next to them."""

from __future__ import annotations

from typing import Any

import pytest

import trace_plugins_bbox.plugin
from trace_tasks import plugins, score_trace_response
from trace_tasks.errors import MissingFamilyError
from trace_tasks.plugins import _registry as registry_module

from .helpers import check_result

#: Spelled out: resolving it would need the registry that some tests below replace.
BBOX_CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
}
HOSTILE_RESPONSES = ["", "{" * 10_000, '{"answer": 7, "annotation": [0, 0, 10, 10]}', "\ud800\x00```", "[" * 100_000]


def _call(response: Any, **overrides: Any) -> dict[str, float]:
    kwargs: dict[str, Any] = {
        "response": response,
        "answer_gt": {"type": "integer", "value": 7},
        "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
        "reward_contract": BBOX_CONTRACT,
    }
    kwargs.update(overrides)
    return score_trace_response(**kwargs)


@pytest.mark.parametrize(
    "response",
    [None, b'{"answer": 7}', bytearray(b"7"), 7, ["{", '"answer": 7}'], {"answer": 7}, [{"role": "assistant", "content": "7"}]],
    ids=lambda r: type(r).__name__,
)
def test_a_non_string_response_is_a_type_error(response: Any) -> None:
    with pytest.raises(TypeError, match="response must be a str"):
        _call(response)


INVALID_OPTIONS = [
    {"trace_reward_mode": "bogus"},
    {"trace_reward_mode": 1},
    {"trace_annotation_reward_formula": "multiplicative"},
    {"answer_weight": -0.5},
    {"answer_weight": float("nan")},
    {"annotation_weight": float("inf")},
    {"answer_weight": True},
    {"answer_weight": "0.5"},
    {"answer_weight": 0.0, "annotation_weight": 0.0},
    {"format_weight": 1.5},
    {"format_weight": float("nan")},
    {"point_half_life_px": 0},
    {"point_half_life_px": -3},
    {"point_half_life_px": "abc"},
    {"point_half_life_px": float("inf")},
]


@pytest.mark.parametrize("options", INVALID_OPTIONS, ids=lambda o: ",".join(f"{k}={v!r}" for k, v in o.items()))
@pytest.mark.parametrize("response", HOSTILE_RESPONSES, ids=["empty", "braces", "good", "surrogate_nul", "brackets"])
def test_invalid_options_raise_even_with_a_hostile_response(options: dict[str, Any], response: str) -> None:
    with pytest.raises(ValueError):
        _call(response, **options)


@pytest.fixture
def bbox_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry with only the bbox family, as after ``pip install trace-plugins-bbox`` alone."""
    registry = plugins.build_registry([("trace_plugins_bbox", trace_plugins_bbox.plugin.family)], load_entry_points=False)
    monkeypatch.setattr(registry_module, "_current", registry)


@pytest.fixture
def core_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry with no family at all (trace-core alone)."""
    monkeypatch.setattr(registry_module, "_current", plugins.build_registry(load_entry_points=False))


@pytest.mark.parametrize("response", HOSTILE_RESPONSES, ids=["empty", "braces", "good", "surrogate_nul", "brackets"])
@pytest.mark.parametrize(
    ("annotation_type", "package"),
    [("point", "trace-plugins-point"), ("segment_set", "trace-plugins-segment"), ("point_set_map", "trace-plugins-point")],
)
def test_missing_official_family_names_the_package(bbox_only: None, response: str, annotation_type: str, package: str) -> None:
    with pytest.raises(MissingFamilyError, match=f"pip install {package}"):
        _call(
            response,
            annotation_gt={"type": annotation_type, "value": [0, 0]},
            reward_contract={
                "reward_contract_version": "v0",
                "answer": {"id": "answer_exact_match_v0", "type": "integer"},
                "annotation": {"id": f"{annotation_type}_soft_iou_v0", "type": annotation_type},
            },
        )


def test_missing_family_with_core_only_names_the_bbox_package(core_only: None) -> None:
    with pytest.raises(MissingFamilyError, match="pip install trace-plugins-bbox"):
        _call("{" * 10_000)


@pytest.mark.parametrize("response", HOSTILE_RESPONSES, ids=["empty", "braces", "good", "surrogate_nul", "brackets"])
def test_missing_family_in_answer_mode_is_not_scored_and_does_not_raise(core_only: None, response: str) -> None:
    result = _call(response, trace_reward_mode="answer")
    check_result(result)
    assert result["annotation_parse_ok"] == 0.0
    assert not any(key.startswith("annotation_type_") for key in result)


def test_installed_family_still_scores_with_bbox_only(bbox_only: None) -> None:
    result = _call('{"answer": 7, "annotation": [0, 0, 10, 10]}')
    check_result(result)
    assert result["overall"] == 1.0
