"""Issue 37, item 19 for points: ``point_sequence_aligned_distance_v0``, pinnable, order-preserving."""

from __future__ import annotations

import json
import random
from typing import Any

from trace_plugins_point.plugin import family
from trace_tasks import get_registry, pin_reward_id, score_trace_response, unpin_reward_id
from trace_tasks.family import CONTEXT, assert_family_ok

INDEX = "point_sequence_soft_distance_v0"
ALIGNED = "point_sequence_aligned_distance_v0"
TARGET = [[100, 100], [300, 100], [500, 100], [700, 100]]


def _score(prediction: Any, reward_id: str) -> dict[str, float]:
    return score_trace_response(
        response=json.dumps({"answer": 2, "annotation": prediction}),
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "point_sequence", "value": TARGET},
        reward_contract={
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": reward_id, "type": "point_sequence"},
        },
    )


def test_registered_pinnable_and_not_current() -> None:
    entry = get_registry().annotation_types["point_sequence"]
    assert entry.reward_ids == (INDEX, ALIGNED)
    assert entry.current_reward_id == INDEX
    assert _score(TARGET, ALIGNED)["annotation_reward"] == 0.0  # not current: no annotation reward
    index = _score(TARGET[1:], INDEX)["annotation_reward"]
    pin_reward_id("point_sequence", ALIGNED)
    try:
        assert _score(TARGET, ALIGNED)["annotation_reward"] == 1.0
        result = _score(TARGET[1:], ALIGNED)
        assert result["annotation_reward"] == 0.75 > index
        assert result["annotation_assigned_count"] == 3.0
    finally:
        unpin_reward_id("point_sequence")


def test_the_family_kit_passes_both_versions() -> None:
    assert_family_ok(types=["point_sequence"])


def test_a_blind_central_point_never_beats_the_answer_missing_its_first_point() -> None:
    """On seeded instances (3 to 8 points in a 1000 x 1000 image, the kit's context), index pairs prefer the blind answer sometimes, the alignment never."""
    rng = random.Random(37)
    index, aligned = family.scorers[INDEX], family.scorers[ALIGNED]
    index_wins = aligned_wins = 0
    for _ in range(500):
        target = [(rng.uniform(300, 700), rng.uniform(300, 700)) for _ in range(rng.randint(3, 8))]
        blind = [(500.0, 500.0)] * len(target)
        index_wins += index(blind, target, CONTEXT).reward > index(target[1:], target, CONTEXT).reward
        aligned_wins += aligned(blind, target, CONTEXT).reward > aligned(target[1:], target, CONTEXT).reward
    assert index_wins > 0
    assert aligned_wins == 0
