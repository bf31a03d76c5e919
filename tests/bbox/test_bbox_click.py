"""GUI click reward versions of ``bbox``: bbox_click_hit_v0 and bbox_click_soft_v0 (issue 39, item 2).

Rewards are checked against an independent computation (the distance to a box
written out per region, the kernel exp(-ln 2 (d/h)^2) written out), pinning
goes through the public API, and the family test kit checks both versions and
fails a version that breaks the click properties.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from typing import Any

import pytest

from trace_tasks import (
    compile_instance,
    get_registry,
    pin_reward_id,
    resolve_reward_contract,
    score_trace_response,
    unpin_reward_id,
)
from trace_tasks.family import AnnotationScore, RewardIdSpec, ScoringContext, check_family, coordinates, hookimpl
from trace_tasks.plugins import register_plugin, reset_registry, unregister_plugin
from trace_tasks.scoring import CLICK_ACC, options_from, row_metrics

HIT, SOFT = "bbox_click_hit_v0", "bbox_click_soft_v0"
BOX = [100, 50, 300, 150]


@pytest.fixture
def pinned() -> Iterator[Any]:
    def pin(reward_id: str) -> dict[str, Any]:
        pin_reward_id("bbox", reward_id)
        return resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()

    try:
        yield pin
    finally:
        unpin_reward_id("bbox")
        reset_registry()


def expected_distance(x: float, y: float, box: list[int]) -> float:
    """Nearest point of the box by region (independent of the plugin's clamp expression)."""
    x0, y0, x1, y1 = box
    nearest_x = min(max(x, x0), x1)
    nearest_y = min(max(y, y0), y1)
    return math.sqrt((x - nearest_x) ** 2 + (y - nearest_y) ** 2)


def reward(contract: dict[str, Any], annotation: Any, box: list[int] = BOX, **options: Any) -> dict[str, float]:
    return score_trace_response(
        response=json.dumps({"answer": 1, "annotation": annotation}),
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "bbox", "value": box},
        reward_contract=contract,
        **options,
    )


def test_declared_for_bbox_never_current_by_default() -> None:
    entry = get_registry().annotation_types["bbox"]
    assert HIT in entry.reward_ids and SOFT in entry.reward_ids
    assert entry.current_reward_id == "bbox_soft_iou_v0"
    assert (
        resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()["annotation"]["id"] == "bbox_soft_iou_v0"
    )


def test_the_default_still_reads_a_box_and_refuses_a_click() -> None:
    contract = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    assert reward(contract, [150, 100])["annotation_parse_ok"] == 0.0
    assert reward(contract, BOX)["annotation_reward"] == 1.0


@pytest.mark.parametrize(
    ("click", "inside"),
    [
        ([200, 100], True),
        ([100, 50], True),  # corner
        ([300, 150], True),  # opposite corner
        ([100, 120], True),  # left edge
        ([250, 150], True),  # bottom edge
        ([99.999, 100], False),
        ([200, 150.001], False),
        ([0, 0], False),
        ([350, 200], False),
    ],
)
def test_hit_is_one_inside_edges_included(pinned: Any, click: list[float], inside: bool) -> None:
    result = reward(pinned(HIT), click)
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == (1.0 if inside else 0.0)
    assert result["annotation_click_inside"] == (1.0 if inside else 0.0)


def test_soft_matches_an_independent_kernel(pinned: Any) -> None:
    contract = pinned(SOFT)
    rng = random.Random(39)
    for _ in range(300):
        x, y = rng.uniform(-200, 600), rng.uniform(-200, 400)
        half_life = rng.choice([8.0, 32.0, 100.0])
        got = reward(contract, [x, y], point_half_life_px=half_life)
        d = expected_distance(x, y, BOX)
        want = 1.0 if d == 0 else 2.0 ** (-((d / half_life) ** 2))
        assert got["annotation_reward"] == pytest.approx(want, rel=1e-12, abs=1e-300)
        assert got["annotation_point_half_life_px"] == half_life


def test_soft_uses_the_contracts_half_life_policy(pinned: Any) -> None:
    # No explicit half-life: the image-diagonal policy (docs/contracts.md), as for point rewards.
    contract = pinned(SOFT)
    point = resolve_reward_contract(answer_type="integer", annotation_type="point").to_dict()
    size = {"image_size": [1920, 1080]}
    click = reward(contract, [340, 100], **size)  # 40 px right of the box
    same = score_trace_response(
        response=json.dumps({"answer": 1, "annotation": [340, 100]}),
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "point", "value": [300, 100]},
        reward_contract=point,
        **size,
    )
    assert click["annotation_point_half_life_px"] == same["annotation_point_half_life_px"]
    assert click["annotation_reward"] == pytest.approx(same["annotation_reward"], rel=1e-12)


def test_soft_monotone_in_distance_and_never_above_an_inside_click(pinned: Any) -> None:
    contract = pinned(SOFT)
    inside = reward(contract, [200, 100])["annotation_reward"]
    previous = inside
    for step in range(0, 400, 5):
        got = reward(contract, [300 + step + 0.5, 100])["annotation_reward"]
        assert got <= previous and got < inside
        previous = got
    assert previous < 1e-6


def test_a_box_prediction_is_not_a_click(pinned: Any) -> None:
    for rid in (HIT, SOFT):
        result = reward(pinned(rid), BOX)
        assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0


def test_overflowing_click_earns_nothing(pinned: Any) -> None:
    for rid in (HIT, SOFT):
        assert reward(pinned(rid), [1e308, -1e308])["annotation_reward"] == 0.0


def test_kit_checks_both_versions() -> None:
    assert check_family(types=["bbox"]) == []


class _EdgesExcluded:
    """A click version with a bug the kit must catch: edges are outside."""

    @hookimpl
    def trace_reward_ids(self) -> list[RewardIdSpec]:
        return [
            RewardIdSpec(
                "bbox_click_strict_v9",
                "bbox",
                parse_prediction=lambda v: tuple(coordinates(v, 2)),
                prediction_examples=(([10, 20], [10, 20, 110, 220], 1.0),),
            )
        ]

    @hookimpl
    def trace_score_annotation(self, reward_id: str, prediction: Any, target: Any, context: ScoringContext) -> Any:
        if reward_id != "bbox_click_strict_v9":
            return None
        x, y = prediction
        return AnnotationScore(1.0 if target[0] < x < target[2] and target[1] < y < target[3] else 0.0)


def test_kit_fails_a_version_that_excludes_edges() -> None:
    register_plugin(_EdgesExcluded(), "strict_click")
    try:
        problems = check_family(types=["bbox"])
    finally:
        unregister_plugin("strict_click")
        reset_registry()
    assert [(p.reward_id, p.check) for p in problems] == [("bbox_click_strict_v9", "self-score")]


def test_click_acc_from_the_trail(pinned: Any) -> None:
    for rid in (HIT, SOFT):
        contract = pinned(rid)
        compiled = compile_instance(
            {
                "answer_gt": {"type": "integer", "value": 1},
                "annotation_gt": {"type": "bbox", "value": BOX},
                "reward_contract": contract,
            }
        )
        shots = [([200, 100], 1.0), ([300, 150], 1.0), ([301, 150], 0.0), ("junk", 0.0)]
        for click, want in shots:
            result, trail = compiled.explain(json.dumps({"answer": 1, "annotation": click}), options_from({}))
            assert row_metrics(trail, result, "scalar")[CLICK_ACC] == want


def test_click_acc_absent_for_the_default() -> None:
    contract = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    compiled = compile_instance(
        {
            "answer_gt": {"type": "integer", "value": 1},
            "annotation_gt": {"type": "bbox", "value": BOX},
            "reward_contract": contract,
        }
    )
    result, trail = compiled.explain(json.dumps({"answer": 1, "annotation": BOX}), options_from({}))
    assert CLICK_ACC not in row_metrics(trail, result, "scalar")


def test_pin_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACE_TASKS_REWARD_IDS", f"bbox={HIT}")
    reset_registry()
    try:
        assert get_registry().annotation_types["bbox"].current_reward_id == HIT
    finally:
        monkeypatch.delenv("TRACE_TASKS_REWARD_IDS")
        reset_registry()
