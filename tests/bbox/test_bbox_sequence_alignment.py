"""Issue 37, item 19: the index-aligned sequence reward and its order-preserving version.

``bbox_sequence_soft_iou_v0`` pairs item i with item i (the contract's rule, kept as
it is): one missing item shifts every later pair, so n copies of one central box,
written blind to the image, beat an honest answer that misses only its first box.
``bbox_sequence_aligned_iou_v0`` (pinnable, never current by default) aligns in
order instead. The margin docs/limits.md quotes is measured here, on a seeded
generator, and the page must quote exactly what this measurement gives.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
from pathlib import Path
from typing import Any

import attrs
import pytest

from trace_plugins_bbox.plugin import BOX
from trace_plugins_bbox.plugin import family as bbox_family
from trace_tasks import get_registry, pin_reward_id, resolve_reward_contract, score_trace_response, unpin_reward_id
from trace_tasks.errors import AnnotationParseError, FamilyDefinitionError
from trace_tasks.family import (
    CONTEXT,
    AlignedShapeFamily,
    Primitive,
    assert_family_ok,
    match_aligned,
    match_sequence,
    pairwise,
)
from trace_tasks.limits import MAX_MATRIX_CELLS

INDEX = "bbox_sequence_soft_iou_v0"
ALIGNED = "bbox_sequence_aligned_iou_v0"
LIMITS = Path(__file__).resolve().parents[2] / "docs" / "limits.md"

#: The image and the blind constant of the measurement: the box centred in the
#: image with half its width and height.
WIDTH, HEIGHT = 640.0, 480.0
CENTRAL = (WIDTH * 0.25, HEIGHT * 0.25, WIDTH * 0.75, HEIGHT * 0.75)
INSTANCES = 2000
SEED = 37


def _instance(rng: random.Random) -> list[tuple[float, float, float, float]]:
    """3 to 8 boxes, each 30-70% of the image's width and height, placed uniformly inside it."""
    boxes = []
    for _ in range(rng.randint(3, 8)):
        w, h = rng.uniform(0.3, 0.7) * WIDTH, rng.uniform(0.3, 0.7) * HEIGHT
        cx, cy = rng.uniform(w / 2, WIDTH - w / 2), rng.uniform(h / 2, HEIGHT - h / 2)
        boxes.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return boxes


@attrs.frozen
class Margin:
    honest: float  # mean reward of the honest answer missing its first box
    blind: float  # mean reward of n copies of the central box
    blind_wins: float  # share of instances where the blind answer scores higher


def measure(reward_id: str) -> Margin:
    """The blind answer against the honest one missing its first box, under ``reward_id``, over the seeded instances."""
    score = bbox_family.scorers[reward_id]
    rng = random.Random(SEED)
    honest, blind, wins = [], [], 0
    for _ in range(INSTANCES):
        target = _instance(rng)
        h = score(target[1:], target, CONTEXT).reward
        b = score([CENTRAL] * len(target), target, CONTEXT).reward
        honest.append(h)
        blind.append(b)
        wins += b > h
    return Margin(statistics.fmean(honest), statistics.fmean(blind), wins / INSTANCES)


def quoted(margin: Margin) -> str:
    """How docs/limits.md states a measured margin."""
    return f"{margin.blind:.3f} against {margin.honest:.3f}, on {margin.blind_wins:.1%} of the instances"


def test_the_index_aligned_reward_prefers_the_blind_answer_as_docs_limits_says() -> None:
    margin = measure(INDEX)
    assert margin.blind > margin.honest
    assert margin.blind_wins > 0.5
    assert quoted(margin) in " ".join(LIMITS.read_text(encoding="utf-8").split())


def test_the_aligned_reward_never_prefers_the_blind_answer_as_docs_limits_says() -> None:
    margin = measure(ALIGNED)
    assert margin.blind_wins == 0.0
    assert margin.honest > margin.blind
    assert quoted(margin) in " ".join(LIMITS.read_text(encoding="utf-8").split())


# --- the public route: pinnable, never current by default ------------------------------------


def _contract(reward_id: str) -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": reward_id, "type": "bbox_sequence"},
    }


def _score(prediction: Any, target: Any, reward_id: str) -> dict[str, float]:
    return score_trace_response(
        response=json.dumps({"answer": 2, "annotation": prediction}),
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "bbox_sequence", "value": target},
        reward_contract=_contract(reward_id),
    )


TARGET = [[0, 0, 100, 100], [200, 0, 300, 100], [400, 0, 500, 100], [600, 0, 700, 100]]


def test_the_aligned_version_is_registered_but_not_current() -> None:
    entry = get_registry().annotation_types["bbox_sequence"]
    assert entry.reward_ids == (INDEX, ALIGNED)
    assert entry.current_reward_id == INDEX
    assert resolve_reward_contract(answer_type="integer", annotation_type="bbox_sequence").to_dict()["annotation"]["id"] == INDEX
    # Not current: a contract naming it earns no annotation reward until it is pinned.
    assert _score(TARGET, TARGET, ALIGNED)["annotation_reward"] == 0.0


def test_pinned_the_missing_first_box_costs_only_its_share() -> None:
    assert _score(TARGET[1:], TARGET, INDEX)["annotation_reward"] == 0.0
    pin_reward_id("bbox_sequence", ALIGNED)
    try:
        assert (
            resolve_reward_contract(answer_type="integer", annotation_type="bbox_sequence").to_dict()["annotation"]["id"]
            == ALIGNED
        )
        result = _score(TARGET[1:], TARGET, ALIGNED)
        assert result["annotation_reward"] == 0.75
        assert result["annotation_assigned_count"] == 3.0
        assert result["annotation_assigned_iou_mean"] == 1.0
        assert _score(TARGET, TARGET, ALIGNED)["annotation_reward"] == 1.0
        # Order still counts: reversed, only one pair can stay uncrossed.
        assert _score(TARGET[::-1], TARGET, ALIGNED)["annotation_reward"] == 0.25
        # An extra box in the middle costs its share of the denominator, nothing more.
        assert _score([*TARGET[:2], [900, 900, 950, 950], *TARGET[2:]], TARGET, ALIGNED)["annotation_reward"] == 0.8
        # Past the cell bound the response fails, as a set that large does.
        big = [[i, 0, i + 1, 1] for i in range(1000)]
        too_many = _score([*big, [0, 5, 1, 6]], big, ALIGNED)
        assert too_many["annotation_reward"] == 0.0 and too_many["annotation_parse_ok"] == 0.0
        assert _score(big, big, ALIGNED)["annotation_reward"] == 1.0
    finally:
        unpin_reward_id("bbox_sequence")


def test_the_family_kit_passes_both_versions() -> None:
    assert_family_ok(types=["bbox_sequence"])


def test_an_explanation_names_the_alignment_and_its_pairs() -> None:
    parsed = [tuple(map(float, box)) for box in TARGET]
    explanation = bbox_family.explainers[ALIGNED](parsed[1:], parsed, CONTEXT)
    assert explanation.method == "order-preserving alignment"
    assert [(pair.prediction.label, pair.target.label) for pair in explanation.pairs] == [
        ("#0", "#1"),
        ("#1", "#2"),
        ("#2", "#3"),
    ]
    assert [item.label for item in explanation.unmatched_targets] == ["#0"]
    assert explanation.score.reward == 0.75
    assert bbox_family.explainers[INDEX](parsed[1:], parsed, CONTEXT).method == "index-aligned"


# --- the matcher ----------------------------------------------------------------------------


def _table_similarity(a: Any, b: Any, ctx: Any) -> float:
    return float(TABLE[a][b])


TABLE: list[list[float]] = []
LOOKUP = Primitive(name="lookup", similarity=_table_similarity, matrix=pairwise(_table_similarity), metric="lookup")


def _best_uncrossed(matrix: list[list[float]]) -> float:
    """Brute force: the best total over every set of pairs that never cross."""
    n, m = len(matrix), len(matrix[0])
    best = 0.0
    for k in range(min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.combinations(range(m), k):
                best = max(best, sum(matrix[i][j] for i, j in zip(rows, cols, strict=True)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_alignment_is_the_best_uncrossed_one_and_never_below_index_pairs(seed: int) -> None:
    rng = random.Random(seed)
    n, m = rng.randint(1, 5), rng.randint(1, 5)
    TABLE[:] = [[rng.choice([0.0, 0.25, 0.5, rng.random()]) for _ in range(m)] for _ in range(n)]
    matched = match_aligned(range(n), range(m), LOOKUP, CONTEXT)
    pairs = matched.index_pairs()
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(pairs))  # never crossing, never shared
    assert matched.total == pytest.approx(_best_uncrossed(TABLE), abs=1e-12)
    assert matched.total == pytest.approx(sum(TABLE[i][j] for i, j in pairs), abs=1e-12)
    assert matched.count == len(pairs) and matched.denominator == max(n, m)
    assert matched.total >= match_sequence(range(n), range(m), LOOKUP, CONTEXT).total - 1e-12


def test_empty_sides_and_the_cell_bound() -> None:
    assert match_aligned([], [], LOOKUP, CONTEXT).denominator == 1
    assert match_aligned([], range(3), LOOKUP, CONTEXT).total == 0.0
    side = int(MAX_MATRIX_CELLS**0.5)
    with pytest.raises(AnnotationParseError, match="exceeds"):
        match_aligned(range(side + 1), range(side), LOOKUP, CONTEXT)


@pytest.mark.parametrize(
    ("types", "aligned", "message"),
    [
        ({"s": ("sequence", ("a_v0", "b_v0"))}, ("a_v0",), "is the default"),
        ({"s": ("set", ("a_v0", "b_v0"))}, ("b_v0",), "not a sequence type"),
        ({"s": ("sequence", ("a_v0", "b_v0"))}, ("c_v0",), "no type offers"),
    ],
)
def test_an_aligned_id_must_be_a_pinnable_sequence_version(types: Any, aligned: Any, message: str) -> None:
    with pytest.raises(FamilyDefinitionError, match=message):
        AlignedShapeFamily(BOX, types, aligned=aligned)
