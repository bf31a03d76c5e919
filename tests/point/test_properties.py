"""Hypothesis properties of the point family, through the public entry point."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_plugins_point.geometry import similarity
from trace_tasks import ScoringContext
from trace_tasks.family import soft_similarity

from .helpers import score

pytestmark = pytest.mark.slow  # Hypothesis: hundreds of scored examples per test; -m "not slow" leaves them to the full run

#: Coordinates a model might plausibly emit, plus far-out ones; JSON round-trips them exactly.
coordinate = st.one_of(
    st.integers(-5000, 5000),
    st.floats(-5000, 5000, allow_nan=False, allow_infinity=False),
    st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
)
point = st.lists(coordinate, min_size=2, max_size=2)
points = st.lists(point, max_size=6)
half_life = st.one_of(st.none(), st.floats(0.5, 500))
key = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=5)

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "point": point,
    "point_set": points,
    "point_sequence": points,
    "point_map": st.dictionaries(key, point, max_size=4),
    "point_set_map": st.dictionaries(key, points, max_size=4),
}


def _reward(annotation_type: str, pred: Any, gt: Any, hl: float | None = None) -> float:
    result = score(annotation_type, pred, gt, point_half_life_px=hl)
    assert result["annotation_parse_ok"] == 1.0
    return result["annotation_reward"]


@pytest.mark.parametrize("annotation_type", sorted(VALUES))
@settings(max_examples=60, deadline=None)
@given(data=st.data(), hl=half_life)
def test_self_score_is_one(annotation_type: str, data: st.DataObject, hl: float | None) -> None:
    value = data.draw(VALUES[annotation_type])
    assert _reward(annotation_type, value, value, hl) == 1.0


@pytest.mark.parametrize("annotation_type", sorted(VALUES))
@settings(max_examples=60, deadline=None)
@given(data=st.data(), hl=half_life)
def test_scores_are_in_unit_interval(annotation_type: str, data: st.DataObject, hl: float | None) -> None:
    pred = data.draw(VALUES[annotation_type])
    gt = data.draw(VALUES[annotation_type])
    result = score(annotation_type, pred, gt, point_half_life_px=hl)
    assert result["annotation_parse_ok"] == 1.0
    assert 0.0 <= result["annotation_reward"] <= 1.0
    assert 0.0 <= result["annotation_assigned_similarity_mean"] <= 1.0
    assert 0.0 <= result["overall"] <= 1.0


@settings(max_examples=80, deadline=None)
@given(pred=points, gt=points, seed=st.randoms(use_true_random=False), hl=half_life)
def test_set_score_is_permutation_invariant(pred: list[Any], gt: list[Any], seed: Any, hl: float | None) -> None:
    shuffled_pred, shuffled_gt = list(pred), list(gt)
    seed.shuffle(shuffled_pred)
    seed.shuffle(shuffled_gt)
    base = _reward("point_set", pred, gt, hl)
    # Only the order of the float additions may change.
    assert _reward("point_set", shuffled_pred, shuffled_gt, hl) == pytest.approx(base, rel=1e-12, abs=1e-15)
    assert _reward("point_set_map", {"k": shuffled_pred}, {"k": shuffled_gt}, hl) == pytest.approx(base, rel=1e-12, abs=1e-15)


@settings(max_examples=80, deadline=None)
@given(
    target=st.lists(st.integers(-2000, 2000), min_size=2, max_size=2),
    d=st.lists(st.floats(0, 1e4, allow_nan=False), min_size=2, max_size=2),
    axis=st.sampled_from([0, 1]),
    sign=st.sampled_from([1, -1]),
    hl=half_life,
)
def test_single_point_score_is_non_increasing_in_distance(
    target: list[int], d: list[float], axis: int, sign: int, hl: float | None
) -> None:
    near_d, far_d = sorted(d)
    near, far = list(target), list(target)
    near[axis] += sign * near_d
    far[axis] += sign * far_d
    near_reward, far_reward = _reward("point", near, target, hl), _reward("point", far, target, hl)
    assert far_reward <= near_reward
    if near_d == 0:
        assert near_reward == 1.0


@settings(max_examples=200, deadline=None)
@given(a=point, b=point, c=point, hl=st.floats(0.5, 500))
def test_similarity_is_symmetric_and_kernel_monotone(a: list[float], b: list[float], c: list[float], hl: float) -> None:
    ctx = ScoringContext(hl)
    pa, pb, pc = tuple(a), tuple(b), tuple(c)
    assert similarity(pa, pb, ctx) == similarity(pb, pa, ctx)
    assert 0.0 <= similarity(pa, pc, ctx) <= 1.0
    d1, d2 = sorted(abs(x) for x in (a[0], b[0]))
    assert soft_similarity(d2, hl) <= soft_similarity(d1, hl)
