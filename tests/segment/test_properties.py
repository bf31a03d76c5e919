"""Hypothesis properties of the segment family, through the public entry point."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_plugins_segment.geometry import segment_distance

from .helpers import score

pytestmark = pytest.mark.slow  # Hypothesis: hundreds of scored examples per test; -m "not slow" leaves them to the full run

coordinate = st.one_of(
    st.integers(-3000, 3000),
    st.floats(-3000, 3000, allow_nan=False, allow_infinity=False),
    st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
)
endpoint = st.lists(coordinate, min_size=2, max_size=2)
segment = st.lists(endpoint, min_size=2, max_size=2)
segments = st.lists(segment, max_size=5)
half_life = st.one_of(st.none(), st.floats(0.5, 500))

VALUES: dict[str, st.SearchStrategy[Any]] = {"segment": segment, "segment_set": segments}


def _reward(annotation_type: str, pred: Any, gt: Any, hl: float | None = None) -> float:
    result = score(annotation_type, pred, gt, point_half_life_px=hl)
    assert result["annotation_parse_ok"] == 1.0
    return result["annotation_reward"]


#: Up to 13 x 13 segments, so the numpy matrix path (from 144 cells) is exercised too.
many_segments = st.lists(segment, max_size=13)


@settings(max_examples=100, deadline=None)
@given(pred=many_segments, gt=many_segments, flips=st.lists(st.booleans(), min_size=13, max_size=13), hl=half_life)
def test_reversing_predicted_segments_never_changes_the_score(
    pred: list[Any], gt: list[Any], flips: list[bool], hl: float | None
) -> None:
    flipped = [s[::-1] if flip else s for s, flip in zip(pred, flips, strict=False)]
    assert _reward("segment_set", flipped, gt, hl) == _reward("segment_set", pred, gt, hl)
    if pred and gt:
        assert _reward("segment", pred[0][::-1], gt[0], hl) == _reward("segment", pred[0], gt[0], hl)


@pytest.mark.parametrize("annotation_type", sorted(VALUES))
@settings(max_examples=80, deadline=None)
@given(data=st.data(), hl=half_life)
def test_self_score_is_one(annotation_type: str, data: st.DataObject, hl: float | None) -> None:
    value = data.draw(VALUES[annotation_type])
    assert _reward(annotation_type, value, value, hl) == 1.0


@pytest.mark.parametrize("annotation_type", sorted(VALUES))
@settings(max_examples=80, deadline=None)
@given(data=st.data(), hl=half_life)
def test_scores_are_in_unit_interval(annotation_type: str, data: st.DataObject, hl: float | None) -> None:
    pred = data.draw(VALUES[annotation_type])
    gt = data.draw(VALUES[annotation_type])
    result = score(annotation_type, pred, gt, point_half_life_px=hl)
    assert result["annotation_parse_ok"] == 1.0
    assert 0.0 <= result["annotation_reward"] <= 1.0
    assert 0.0 <= result["annotation_assigned_similarity_mean"] <= 1.0


@settings(max_examples=200, deadline=None)
@given(a=segment, b=segment)
def test_distance_is_symmetric_and_reversal_free(a: list[list[float]], b: list[list[float]]) -> None:
    sa, sb = (*a[0], *a[1]), (*b[0], *b[1])
    ra = (*a[1], *a[0])
    d = segment_distance(sa, sb)
    assert d >= 0.0
    assert segment_distance(sb, sa) == d
    assert segment_distance(ra, sb) == d
    assert segment_distance(sa, sa) == 0.0
