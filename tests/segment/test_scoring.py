"""Undirected segment distance, its similarity, and Hungarian segment-set matching."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest

import trace_plugins_segment.geometry as geometry
from trace_plugins_segment.geometry import segment_distance, similarity
from trace_tasks import ScoringContext

from .helpers import LN2, expected_similarity, reward, score

CTX = ScoringContext(half_life_px=32.0)
DIAGNOSTICS = [
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_assigned_count",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
]

Seg = list[list[float]]


def test_hand_computed_case() -> None:
    pred = [[0, 0], [10, 0]]
    target = [[0, 3], [10, -4]]
    # Same order: endpoint distances 3 and 4 -> 4. Reversed: sqrt(116) and sqrt(109) -> sqrt(116).
    assert segment_distance((0, 0, 10, 0), (0, 3, 10, -4)) == 4.0
    assert reward("segment", pred, target) == pytest.approx(math.exp(-LN2 * (4 / 32) ** 2), rel=1e-14)
    assert reward("segment", pred[::-1], target) == pytest.approx(math.exp(-LN2 * (4 / 32) ** 2), rel=1e-14)


def test_reversed_endpoints_score_the_same() -> None:
    target = [[10, 20], [200, 80]]
    assert reward("segment", [[200, 80], [10, 20]], target) == 1.0
    assert reward("segment", [[205, 80], [10, 20]], target) == reward("segment", [[10, 20], [205, 80]], target)


def test_one_good_endpoint_does_not_rescue_a_bad_one() -> None:
    # The first endpoint is exact, the second is two half-lives off: the segment is
    # as good as its worse endpoint (2^-4), not the average of the two (0.5 at 32 px).
    pred = [[0, 0], [100, 0]]
    target = [[0, 0], [100, 64]]
    result = score("segment", pred, target)
    assert result["annotation_reward"] == pytest.approx(1 / 16, rel=1e-14)
    assert result["annotation_reward"] < expected_similarity(32)


def test_better_pairing_is_chosen() -> None:
    # A short segment whose endpoints are each near the *other* target endpoint.
    a = (0.0, 0.0, 100.0, 0.0)
    b = (98.0, 0.0, 1.0, 0.0)
    assert segment_distance(a, b) == 2.0
    assert segment_distance(b, a) == 2.0
    assert similarity(a, b, CTX) == pytest.approx(expected_similarity(2.0), rel=1e-14)


@pytest.mark.parametrize("half_life", [5.0, 20.0, 32.0, 80.0])
def test_segment_one_half_life_off_scores_one_half(half_life: float) -> None:
    target = [[0, 0], [100, 0]]
    shifted = [[0, half_life], [100, half_life]]
    assert reward("segment", shifted, target, point_half_life_px=half_life) == pytest.approx(0.5, abs=1e-15)


def test_segment_half_life_follows_image_size() -> None:
    target = [[0, 0], [100, 0]]
    result = score("segment", [[0, 28], [100, 28]], target, image_size=[640, 480])
    assert result["annotation_point_half_life_px"] == pytest.approx(28.0)
    assert result["annotation_reward"] == pytest.approx(0.5)
    assert score("segment", target, target)["annotation_point_half_life_px"] == 32.0


def test_scalar_segment_diagnostics() -> None:
    result = score("segment", [[0, 0], [10, 0]], [[0, 3], [10, -4]])
    assert list(result)[-5:] == DIAGNOSTICS
    assert [result[k] for k in DIAGNOSTICS[:3]] == [1.0, 1.0, 1.0]
    assert result["annotation_assigned_similarity_mean"] == result["annotation_reward"]
    assert result["annotation_type_segment"] == 1.0 and result["annotation_type_segment_set"] == 0.0


def test_overflowing_segment_scores_zero() -> None:
    result = score("segment", [[1e308, 0], [-1e308, 0]], [[-1e308, 0], [1e308, 1e308]])
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 0.0


# --- segment sets ---------------------------------------------------------------


def _rotated(angle_deg: float, center: tuple[float, float] = (500.0, 500.0), half_length: float = 50.0) -> Seg:
    """A segment of length 100 through ``center``; all of them cross at the center."""
    dx = half_length * math.cos(math.radians(angle_deg))
    dy = half_length * math.sin(math.radians(angle_deg))
    return [[center[0] - dx, center[1] - dy], [center[0] + dx, center[1] + dy]]


def _sim(p: Seg, g: Seg) -> float:
    return similarity((*p[0], *p[1]), (*g[0], *g[1]), CTX)


def _greedy_total(preds: Sequence[Seg], gts: Sequence[Seg]) -> float:
    """Repeatedly take the most similar remaining pair (what a naive matcher does)."""
    cells = sorted(((_sim(p, g), i, j) for i, p in enumerate(preds) for j, g in enumerate(gts)), reverse=True)
    used_p: set[int] = set()
    used_g: set[int] = set()
    total = 0.0
    for s, i, j in cells:
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            total += s
    return total


def _best_total(preds: Sequence[Seg], gts: Sequence[Seg]) -> float:
    n, m = len(preds), len(gts)
    if n <= m:
        return max(sum(_sim(preds[i], gts[j]) for i, j in enumerate(cols)) for cols in itertools.permutations(range(m), n))
    return max(sum(_sim(preds[i], gts[j]) for j, i in enumerate(rows)) for rows in itertools.permutations(range(n), m))


def test_crossing_segments_where_greedy_matching_is_wrong() -> None:
    # Every segment crosses the others at (500, 500). Angular offsets from the targets:
    # p0 is 2.5 deg from t0 and 7.5 deg from t1; p1 is 7.5 deg from t0 and 17.5 deg from t1.
    targets = [_rotated(0), _rotated(20)]
    preds = [_rotated(5), _rotated(-15)]
    greedy = _greedy_total(preds, targets)  # takes p0-t0 (best cell), then is stuck with p1-t1
    best = _best_total(preds, targets)  # p0-t1 and p1-t0
    assert best == pytest.approx(_sim(preds[0], targets[1]) + _sim(preds[1], targets[0]))
    assert greedy < best - 0.2

    result = score("segment_set", preds, targets)
    assert result["annotation_reward"] == pytest.approx(best / 2, rel=1e-14)
    assert result["annotation_assigned_similarity_mean"] == pytest.approx(best / 2, rel=1e-14)
    assert result["annotation_assigned_count"] == 2.0


def test_segment_set_against_brute_force_oracle() -> None:
    angles = [0, 12, 25, 31, 47, 60, 75, 88, 101, 133, 150, 170]
    for k in range(12):
        targets = [_rotated(a) for a in angles[k % 5 : k % 5 + 1 + k % 4]]
        preds = [_rotated(a + 3 * k - 10, center=(500.0 + k, 500.0)) for a in angles[k % 3 : k % 3 + 1 + (k * 7) % 5]]
        n, m = len(preds), len(targets)
        assert reward("segment_set", preds, targets) == pytest.approx(_best_total(preds, targets) / max(n, m), rel=1e-12)


def test_segment_set_penalizes_missing_and_extra() -> None:
    targets = [[[0, 0], [100, 0]], [[0, 50], [100, 50]], [[0, 100], [100, 100]]]
    result = score("segment_set", [t[::-1] for t in targets[:2]], targets)
    assert result["annotation_reward"] == pytest.approx(2 / 3)
    assert [result[k] for k in DIAGNOSTICS] == [2.0, 3.0, 2.0, 1.0, 32.0]
    assert list(result)[-5:] == DIAGNOSTICS
    result = score("segment_set", [*targets, [[900, 900], [950, 950]]], targets)
    assert result["annotation_reward"] == pytest.approx(3 / 4)
    assert [result[k] for k in DIAGNOSTICS[:3]] == [4.0, 3.0, 3.0]


# --- the numpy matrix of large sets ---------------------------------------------


def _large_case(size: int) -> tuple[list[Seg], list[Seg]]:
    rng = np.random.default_rng(99)
    targets = rng.uniform(0, 3000, size=(size, 2, 2))
    # Shuffled, endpoints moved by about half a half-life, and every other one reversed.
    preds = targets[rng.permutation(size)] + rng.normal(0, 16, size=(size, 2, 2))
    preds[::2] = preds[::2, ::-1]
    return preds.tolist(), targets.tolist()


def _flat(segments: Sequence[Seg]) -> list[tuple[float, float, float, float]]:
    return [(*s[0], *s[1]) for s in segments]


def test_large_sets_numpy_path_equals_pure_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    preds, targets = _large_case(300)
    assert isinstance(geometry.similarity_matrix(_flat(preds), _flat(targets), CTX), np.ndarray)
    vectorized = score("segment_set", preds, targets)
    # Reversal invariance holds on the vectorized path too.
    assert score("segment_set", [s[::-1] for s in preds], targets) == vectorized

    monkeypatch.setattr(geometry, "NUMPY_MIN_CELLS", 10**9)
    assert isinstance(geometry.similarity_matrix(_flat(preds), _flat(targets), CTX), list)
    pure = score("segment_set", preds, targets)

    assert vectorized == pure
    assert vectorized["annotation_assigned_count"] == 300.0
    assert 0.5 < pure["annotation_reward"] < 1.0


def test_numpy_matrix_matches_scalar_similarity_cellwise() -> None:
    preds, targets = _large_case(40)
    a, b = _flat(preds), _flat(targets)
    matrix = geometry.similarity_matrix(a, b, CTX)
    assert isinstance(matrix, np.ndarray)
    expected = np.array([[geometry.similarity(p, g, CTX) for g in b] for p in a])
    np.testing.assert_allclose(matrix, expected, rtol=1e-13, atol=1e-300)


def test_numpy_matrix_turns_overflow_into_zero() -> None:
    a = [(1e308, 1e308, -1e308, 0.0)] * 13 + [(0.0, 0.0, 5.0, 5.0)]
    b = [(-1e308, -1e308, 1e308, 1e308)] * 13 + [(5.0, 5.0, 0.0, 0.0)]
    matrix = geometry.similarity_matrix(a, b, CTX)
    assert isinstance(matrix, np.ndarray)
    assert np.isfinite(matrix).all()
    assert matrix[0, 0] == 0.0 and matrix[13, 13] == 1.0
