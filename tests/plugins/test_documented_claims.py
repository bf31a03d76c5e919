"""Claims of docs/limits.md and docs/plugins.md that were once wrong, each checked by running code."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import pytest

import trace_tasks.family
from trace_tasks import AnnotationParseError, AnnotationScore, ScoringContext, hookimpl, score_trace_response
from trace_tasks.plugins import AnnotationTypeSpec
from trace_tasks.scoring._image_size import _MAX_LIST_ITEMS, find_image_size

CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "tally_exact_v0", "type": "tally"},
}


def test_limits_md_image_size_lists_are_searched_up_to_the_documented_bound() -> None:
    """docs/limits.md: only the first 64 items of a list are looked into for a nested size."""
    assert _MAX_LIST_ITEMS == 64
    filler: list[Any] = [["not", "a size"]] * (_MAX_LIST_ITEMS - 1)
    assert find_image_size([*filler, [640, 480]]) == (640.0, 480.0)
    assert find_image_size([*filler, ["x"], [640, 480]]) is None


class Tally:
    """A family whose score hook hits a limit (AnnotationParseError) or seeing the context it got."""

    def __init__(self) -> None:
        self.contexts: list[ScoringContext] = []

    @hookimpl
    def trace_annotation_types(self) -> list[AnnotationTypeSpec]:
        return [AnnotationTypeSpec("tally", ("tally_exact_v0",))]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "tally_exact_v0" if annotation_type == "tally" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> int | None:
        return int(value) if annotation_type == "tally" else None  # type: ignore[call-overload]

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: int, target: int, context: ScoringContext
    ) -> AnnotationScore | None:
        if reward_id != "tally_exact_v0":
            return None
        self.contexts.append(context)
        if prediction > 1000:
            raise AnnotationParseError("too many to compare")  # a limit: the model's doing
        return AnnotationScore(1.0 if prediction == target else 0.0)


def _score(response: str, **options: Any) -> dict[str, float]:
    return score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "tally", "value": 3},
        reward_contract=CONTRACT,
        **options,
    )


def test_plugins_md_a_limit_hit_while_scoring_fails_the_response_without_a_log_line(
    register: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/plugins.md: an AnnotationParseError raised while scoring is a limit: no WARNING, the response fails."""
    register(Tally(), "tally")
    with caplog.at_level(logging.DEBUG, logger="trace_tasks"):
        result = _score('{"answer": 1, "annotation": 5000}')
    assert (result["annotation_parse_ok"], result["annotation_reward"]) == (0.0, 0.0)
    assert caplog.records == []
    assert _score('{"answer": 1, "annotation": 3}')["annotation_reward"] == 1.0


def test_plugins_md_scoring_context_image_size_can_come_from_metadata(register: Any) -> None:
    """docs/plugins.md: ScoringContext.image_size comes from the options or from metadata / extra_info."""
    family = Tally()
    register(family, "tally")
    _score('{"answer": 1, "annotation": 3}', metadata={"image_size": [640, 480]})
    _score('{"answer": 1, "annotation": 3}', extra_info={"width": 100, "height": 50})
    _score('{"answer": 1, "annotation": 3}', image_size=[320, 240])
    assert [c.image_size for c in family.contexts] == [(640.0, 480.0), (100.0, 50.0), (320.0, 240.0)]
    assert family.contexts[0].half_life_px == 28.0  # 640x480, docs/contracts.md §5.4


@pytest.mark.parametrize(
    ("old", "name"), [("shapes", "Primitive"), ("specs", "ScoringContext"), ("testing", "check_family"), ("drawing", "Box")]
)
def test_plugins_md_old_flat_paths_still_import_with_a_deprecation_warning(
    monkeypatch: pytest.MonkeyPatch, old: str, name: str
) -> None:
    """docs/plugins.md: the previous release's paths import for one release, warning which module to use instead."""
    monkeypatch.delitem(sys.modules, f"trace_tasks.{old}", raising=False)  # a fresh import warns again
    with pytest.warns(DeprecationWarning, match=r"import from trace_tasks\.family instead"):
        module = importlib.import_module(f"trace_tasks.{old}")
    assert getattr(module, name) is getattr(trace_tasks.family, name)
