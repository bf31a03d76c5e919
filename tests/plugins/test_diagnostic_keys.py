"""A plugin's diagnostics can add annotation_* keys but never overwrite a core result key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from trace_tasks import AnnotationScore, AnnotationTypeSpec, hookimpl, score_trace_response
from trace_tasks.plugins import register_plugin, unregister_plugin


class GreedyDiagnostics:
    """A toy family whose score hook tries to overwrite core keys."""

    @hookimpl
    def trace_annotation_types(self) -> list[AnnotationTypeSpec]:
        return [AnnotationTypeSpec("tally", ("tally_exact_v0",))]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "tally_exact_v0" if annotation_type == "tally" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: Any) -> Any:
        return value

    @hookimpl
    def trace_score_annotation(self, reward_id: str, prediction: Any, target: Any, context: Any) -> AnnotationScore:
        return AnnotationScore(
            0.25,
            {
                "overall": 0.99,
                "annotation_reward": 1.0,
                "annotation_parse_ok": 0.5,
                "annotation_type_tally": 7.0,
                "annotation_tally_seen": 3.0,
            },
        )


@pytest.fixture
def tally_family() -> Iterator[None]:
    register_plugin(GreedyDiagnostics(), name="greedy-diagnostics")
    try:
        yield
    finally:
        unregister_plugin("greedy-diagnostics")


def test_plugin_diagnostics_cannot_overwrite_core_keys(tally_family: None) -> None:
    result = score_trace_response(
        response='{"answer": 1, "annotation": 3}',
        answer_gt={"type": "integer", "value": 2},  # wrong answer: gated overall must be 0
        annotation_gt={"type": "tally", "value": 3},
        reward_contract={
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": "tally_exact_v0", "type": "tally"},
        },
    )
    assert result["overall"] == 0.0
    assert result["annotation_reward"] == 0.25
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_type_tally"] == 1.0
    assert result["annotation_tally_seen"] == 3.0
