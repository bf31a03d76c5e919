"""Point similarity, Hungarian set matching, sequences, maps and set-maps."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import trace_plugins_point.geometry as geometry
from trace_tasks import ScoringContext

from .helpers import LN2, expected_similarity, reward, score

CTX = ScoringContext(half_life_px=32.0)
POINT_DIAGNOSTICS = [
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_assigned_count",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
]
SEQUENCE_DIAGNOSTICS = [
    "annotation_pred_len",
    "annotation_gt_len",
    "annotation_assigned_count",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
]
MAP_DIAGNOSTICS = [
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_assigned_count",
    "annotation_shared_key_count",
    "annotation_missing_key_count",
    "annotation_extra_key_count",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
]


def _tail(result: dict[str, float], n: int) -> list[str]:
    return list(result)[-n:]


# --- the kernel -----------------------------------------------------------------


@pytest.mark.parametrize("half_life", [1.0, 20.0, 28.0, 32.0, 80.0, 1234.5])
def test_similarity_is_one_half_at_one_half_life(half_life: float) -> None:
    assert geometry.similarity((0.0, 0.0), (half_life, 0.0), ScoringContext(half_life)) == pytest.approx(0.5, abs=1e-15)
    # Along a diagonal too: 3-4-5 scaled to the half-life.
    a, b = (10.0, 10.0), (10.0 + 0.6 * half_life, 10.0 + 0.8 * half_life)
    assert geometry.similarity(a, b, ScoringContext(half_life)) == pytest.approx(0.5, abs=1e-12)
    assert geometry.similarity(a, a, ScoringContext(half_life)) == 1.0


@pytest.mark.parametrize("distance", [0.0, 1.0, 5.0, 16.0, 32.0, 45.25, 64.0, 100.0, 500.0])
def test_similarity_formula_exactly(distance: float) -> None:
    expected = math.exp(-LN2 * (distance / 32.0) ** 2)
    assert geometry.similarity((7.0, -3.0), (7.0 + distance, -3.0), CTX) == pytest.approx(expected, rel=1e-14, abs=1e-300)
    assert reward("point", [7.0 + distance, -3.0], [7.0, -3.0]) == pytest.approx(expected, rel=1e-14, abs=1e-300)


def test_two_half_lives_is_one_sixteenth() -> None:
    # exp(-ln2 * 4) = 2^-4: the kernel is Gaussian in distance, not exponential.
    assert reward("point", [64, 0], [0, 0]) == pytest.approx(1 / 16, rel=1e-14)


def test_overflowing_distance_scores_zero_not_nan() -> None:
    result = score("point", [1e308, 1e308], [-1e308, -1e308])
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 0.0
    assert result["annotation_assigned_similarity_mean"] == 0.0


def test_scalar_point_diagnostics() -> None:
    result = score("point", [3, 4], [0, 0], point_half_life_px=5)
    assert _tail(result, 5) == POINT_DIAGNOSTICS
    assert result["annotation_reward"] == pytest.approx(0.5)
    assert result["annotation_pred_size"] == result["annotation_gt_size"] == result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_similarity_mean"] == pytest.approx(0.5)
    assert result["annotation_point_half_life_px"] == 5.0
    assert result["annotation_type_point"] == 1.0


# --- sets -----------------------------------------------------------------------


def _total(preds: Sequence[Sequence[float]], gts: Sequence[Sequence[float]], pairs: Sequence[tuple[int, int]]) -> float:
    return sum(expected_similarity(math.dist(preds[i], gts[j]), 32.0) for i, j in pairs)


def test_maximum_similarity_beats_minimum_distance() -> None:
    targets = [[0, 0], [90, 0]]
    preds = [[10, 0], [-90, 0]]
    # Minimum total distance pairs (10,0)->(90,0) and (-90,0)->(0,0): 80 + 90 = 170 < 10 + 180.
    min_distance_pairs = min(
        (list(enumerate(p)) for p in itertools.permutations(range(2))),
        key=lambda pairs: sum(math.dist(preds[i], targets[j]) for i, j in pairs),
    )
    assert min_distance_pairs == [(0, 1), (1, 0)]
    min_distance_reward = _total(preds, targets, min_distance_pairs) / 2
    max_similarity_reward = _total(preds, targets, [(0, 0), (1, 1)]) / 2
    assert min_distance_reward == pytest.approx(0.0086, abs=1e-4)
    assert max_similarity_reward == pytest.approx(0.467, abs=1e-3)

    result = score("point_set", preds, targets)
    assert result["annotation_reward"] == pytest.approx(max_similarity_reward, rel=1e-14)
    assert result["annotation_assigned_count"] == 2.0
    assert result["annotation_assigned_similarity_mean"] == pytest.approx(max_similarity_reward, rel=1e-14)


def test_set_matching_ignores_order_and_penalizes_missing_and_extra() -> None:
    targets = [[0, 0], [100, 0], [200, 0]]
    assert reward("point_set", [[200, 0], [0, 0], [100, 0]], targets) == 1.0
    # One missing: 2 matched / max(2, 3).
    result = score("point_set", [[200, 0], [0, 0]], targets)
    assert result["annotation_reward"] == pytest.approx(2 / 3)
    assert [result[k] for k in POINT_DIAGNOSTICS[:4]] == [2.0, 3.0, 2.0, 1.0]
    # Two extra: 3 matched / max(5, 3).
    result = score("point_set", [*targets, [1000, 1000], [2000, 2000]], targets)
    assert result["annotation_reward"] == pytest.approx(3 / 5)
    assert [result[k] for k in POINT_DIAGNOSTICS[:4]] == [5.0, 3.0, 3.0, 1.0]
    assert _tail(result, 5) == POINT_DIAGNOSTICS


def test_set_with_duplicate_predictions_matches_each_target_once() -> None:
    result = score("point_set", [[0, 0], [0, 0], [0, 0]], [[0, 0]])
    assert result["annotation_reward"] == pytest.approx(1 / 3)
    assert result["annotation_assigned_count"] == 1.0


def test_set_against_brute_force_oracle() -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        n, m = (int(k) for k in rng.integers(1, 6, size=2))
        preds = rng.uniform(0, 120, size=(n, 2)).tolist()
        gts = rng.uniform(0, 120, size=(m, 2)).tolist()
        best = 0.0
        if n <= m:
            for cols in itertools.permutations(range(m), n):
                best = max(best, _total(preds, gts, list(enumerate(cols))))
        else:
            for rows in itertools.permutations(range(n), m):
                best = max(best, _total(preds, gts, [(r, j) for j, r in enumerate(rows)]))
        assert reward("point_set", preds, gts) == pytest.approx(best / max(n, m), rel=1e-12)


def _large_case(size: int) -> tuple[list[list[float]], list[list[float]]]:
    rng = np.random.default_rng(2024)
    targets = rng.uniform(0, 3000, size=(size, 2))
    # Each prediction is a target, shuffled, moved by about half a half-life.
    preds = targets[rng.permutation(size)] + rng.normal(0, 16, size=(size, 2))
    return preds.tolist(), targets.tolist()


def test_large_sets_numpy_path_equals_pure_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    preds, targets = _large_case(300)
    as_points = [tuple(p) for p in preds], [tuple(t) for t in targets]
    assert isinstance(geometry.similarity_matrix(*as_points, CTX), np.ndarray)  # the numpy path is taken
    vectorized = score("point_set", preds, targets)

    monkeypatch.setattr(geometry, "NUMPY_MIN_CELLS", 10**9)
    assert isinstance(geometry.similarity_matrix(*as_points, CTX), list)  # now the pure-Python path
    pure = score("point_set", preds, targets)

    assert vectorized["annotation_reward"] == pure["annotation_reward"]
    assert vectorized == pure
    assert vectorized["annotation_assigned_count"] == 300.0

    # And both agree with an independent oracle.
    p, t = np.asarray(preds), np.asarray(targets)
    sim = np.exp(-LN2 * (np.linalg.norm(p[:, None, :] - t[None, :, :], axis=2) / 32.0) ** 2)
    rows, cols = linear_sum_assignment(sim, maximize=True)
    assert pure["annotation_reward"] == pytest.approx(sim[rows, cols].sum() / 300, rel=1e-12)
    assert 0.5 < pure["annotation_reward"] < 1.0


def test_numpy_matrix_matches_scalar_similarity_cellwise() -> None:
    preds, targets = _large_case(40)
    a, b = [tuple(p) for p in preds], [tuple(t) for t in targets]
    matrix = geometry.similarity_matrix(a, b, CTX)
    assert isinstance(matrix, np.ndarray)
    expected = np.array([[geometry.similarity(p, g, CTX) for g in b] for p in a])
    np.testing.assert_allclose(matrix, expected, rtol=1e-13, atol=1e-300)


def test_numpy_matrix_turns_overflow_into_zero() -> None:
    a = [(1e308, 1e308)] * 13 + [(0.0, 0.0)]
    b = [(-1e308, -1e308)] * 13 + [(0.0, 0.0)]
    matrix = geometry.similarity_matrix(a, b, CTX)
    assert isinstance(matrix, np.ndarray)
    assert np.isfinite(matrix).all()
    assert matrix[0, 0] == 0.0 and matrix[13, 13] == 1.0


# --- sequences ------------------------------------------------------------------


def test_sequence_is_index_aligned() -> None:
    targets = [[0, 0], [100, 0]]
    assert reward("point_sequence", targets, targets) == 1.0
    # Swapped order: each position is 100 px off, although the set is identical.
    swapped = reward("point_sequence", targets[::-1], targets)
    assert swapped == pytest.approx(expected_similarity(100, 32))
    assert reward("point_set", targets[::-1], targets) == 1.0


def test_sequence_divides_by_the_longer_length() -> None:
    result = score("point_sequence", [[0, 0], [100, 0], [5, 5]], [[0, 0], [100, 32]])
    assert result["annotation_reward"] == pytest.approx((1 + 0.5) / 3)
    assert _tail(result, 5) == SEQUENCE_DIAGNOSTICS
    assert [result[k] for k in SEQUENCE_DIAGNOSTICS[:4]] == [3.0, 2.0, 2.0, pytest.approx(0.75)]


# --- maps and set-maps ----------------------------------------------------------


def test_point_map_scores_shared_keys_over_the_key_union() -> None:
    pred = {"source": [0, 0], "target": [132, 0], "extra": [5, 5]}
    gt = {"source": [0, 0], "target": [100, 0], "pivot": [50, 50]}
    result = score("point_map", pred, gt)
    # shared: source (1.0) and target (32 px off: 0.5); union: source, target, extra, pivot.
    assert result["annotation_reward"] == pytest.approx(1.5 / 4)
    assert _tail(result, 8) == MAP_DIAGNOSTICS
    assert [result[k] for k in MAP_DIAGNOSTICS[:7]] == [3.0, 3.0, 2.0, 2.0, 1.0, 1.0, pytest.approx(0.75)]


def test_point_map_missing_and_extra_keys_each_cost_a_share() -> None:
    gt = {"a": [0, 0], "b": [10, 10]}
    assert reward("point_map", gt, gt) == 1.0
    assert reward("point_map", {"a": [0, 0]}, gt) == pytest.approx(1 / 2)
    assert reward("point_map", {**gt, "c": [0, 0]}, gt) == pytest.approx(2 / 3)
    assert reward("point_map", {"x": [0, 0], "y": [10, 10]}, gt) == 0.0
    assert reward("point_map", {}, {}) == 1.0
    assert reward("point_map", {}, gt) == 0.0


def test_point_map_no_shared_keys_mean_is_zero() -> None:
    result = score("point_map", {"x": [0, 0]}, {"a": [0, 0]})
    assert result["annotation_assigned_count"] == 0.0
    assert result["annotation_assigned_similarity_mean"] == 0.0


def test_point_set_map_matches_within_each_key() -> None:
    gt = {"red": [[0, 0], [100, 0]], "blue": [[0, 100]], "green": [[500, 500]]}
    pred = {
        "red": [[100, 0], [0, 32]],  # matched per key: 1.0 + 0.5 over 2
        "blue": [[0, 100], [300, 300]],  # 1.0 over max(2, 1)
        "white": [[0, 0]],  # extra key
    }
    result = score("point_set_map", pred, gt)
    # Keys: red 0.75, blue 0.5, green missing, white extra -> (0.75 + 0.5) / 4.
    assert result["annotation_reward"] == pytest.approx(1.25 / 4)
    assert _tail(result, 8) == MAP_DIAGNOSTICS
    assert result["annotation_pred_size"] == 3.0
    assert result["annotation_gt_size"] == 3.0
    assert result["annotation_assigned_count"] == 3.0  # two in red, one in blue
    assert result["annotation_shared_key_count"] == 2.0
    assert result["annotation_missing_key_count"] == 1.0
    assert result["annotation_extra_key_count"] == 1.0
    # Mean of per-key means: red (1 + 0.5) / 2, blue 1.0.
    assert result["annotation_assigned_similarity_mean"] == pytest.approx((0.75 + 1.0) / 2)


def test_point_set_map_does_not_match_across_keys() -> None:
    gt = {"a": [[0, 0]], "b": [[100, 100]]}
    swapped = {"a": [[100, 100]], "b": [[0, 0]]}
    assert reward("point_set_map", swapped, gt) == pytest.approx(expected_similarity(math.hypot(100, 100), 32))
    assert reward("point_set", [[100, 100], [0, 0]], [[0, 0], [100, 100]]) == 1.0


def test_point_set_map_empty_sets_inside_a_key() -> None:
    result = score("point_set_map", {"a": [], "b": [[0, 0]]}, {"a": [], "b": [[0, 0]]})
    assert result["annotation_reward"] == 1.0
    # Key a has no match, so the mean is over key b only.
    assert result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_similarity_mean"] == 1.0
    assert reward("point_set_map", {"a": [[0, 0]]}, {"a": []}) == 0.0
