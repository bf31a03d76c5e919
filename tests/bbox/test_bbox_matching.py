"""Collections: Hungarian sets, index-aligned sequences, keyed maps and set-maps."""

from __future__ import annotations

import itertools

import pytest

from trace_plugins_bbox.geometry import iou, parse_box

from .helpers import reward, score

A, B, C = [0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]
A_THIRD = [5, 0, 15, 10]  # IoU 1/3 with A
B_HALF = [20, 20, 30, 25]  # IoU 1/2 with B


def greedy_total(matrix: list[list[float]]) -> float:
    """Greedy matching: repeatedly take the highest remaining cell (what we must not do)."""
    cells = sorted(((v, i, j) for i, row in enumerate(matrix) for j, v in enumerate(row)), key=lambda c: -c[0])
    used_rows: set[int] = set()
    used_cols: set[int] = set()
    total = 0.0
    for v, i, j in cells:
        if i not in used_rows and j not in used_cols:
            used_rows.add(i)
            used_cols.add(j)
            total += v
    return total


def best_total(matrix: list[list[float]]) -> float:
    """Brute-force optimum over every one-to-one assignment (rows <= cols)."""
    rows, cols = len(matrix), len(matrix[0])
    return max(
        sum(matrix[i][j] for i, j in zip(range(rows), perm, strict=False)) for perm in itertools.permutations(range(cols), rows)
    )


# Intervals along x (all boxes span y 0..10):
#   G1 = [0, 10], G2 = [4, 14], P1 = [1, 11], P2 = [-2, 8]
# IoU(P1,G1) = 9/11, IoU(P1,G2) = 7/13, IoU(P2,G1) = 8/12, IoU(P2,G2) = 4/16.
# Greedy takes P1-G1 (9/11, the largest cell), leaving P2-G2: 9/11 + 1/4 ~ 1.068.
# The optimum crosses over: P1-G2 + P2-G1 = 7/13 + 2/3 ~ 1.205.
G1, G2 = [0, 0, 10, 10], [4, 0, 14, 10]
P1, P2 = [1, 0, 11, 10], [-2, 0, 8, 10]


def matrix_of(preds: list[list[float]], gts: list[list[float]]) -> list[list[float]]:
    return [[iou(parse_box(p), parse_box(g)) for g in gts] for p in preds]


def test_hungarian_beats_greedy_on_a_crossing_pair() -> None:
    m = matrix_of([P1, P2], [G1, G2])
    assert m == [[9 / 11, 7 / 13], [8 / 12, 4 / 16]]
    greedy = greedy_total(m)
    optimum = best_total(m)
    assert greedy == pytest.approx(9 / 11 + 1 / 4)
    assert optimum == pytest.approx(7 / 13 + 2 / 3)
    assert greedy < optimum - 0.1
    result = score("bbox_set", [P1, P2], [G1, G2])
    assert result["annotation_reward"] == pytest.approx(optimum / 2, rel=1e-15)
    assert result["annotation_assigned_count"] == 2.0
    assert result["annotation_assigned_iou_mean"] == pytest.approx(optimum / 2, rel=1e-15)
    # Order of the prediction (or the target) does not matter.
    assert score("bbox_set", [P2, P1], [G1, G2])["annotation_reward"] == pytest.approx(optimum / 2, rel=1e-15)
    assert score("bbox_set", [P1, P2], [G2, G1])["annotation_reward"] == pytest.approx(optimum / 2, rel=1e-15)


def test_hungarian_beats_greedy_with_an_extra_prediction() -> None:
    # A third prediction far away changes nothing but the denominator (3).
    far = [1000, 1000, 1010, 1010]
    preds, gts = [far, P1, P2], [G1, G2]
    m = matrix_of(preds, gts)
    optimum = best_total([list(col) for col in zip(*m, strict=False)])  # targets as rows: 2 <= 3
    assert greedy_total(m) < optimum
    assert reward("bbox_set", preds, gts) == pytest.approx(optimum / 3, rel=1e-15)


def test_hungarian_three_by_three_beats_greedy() -> None:
    # Overlapping intervals along x: the single best cell (P=[12,25] with G=[12,22])
    # is not in the optimum, and taking it strands the others.
    gts = [[9, 0, 19, 10], [12, 0, 22, 10], [15, 0, 25, 10]]
    preds = [[9, 0, 16, 10], [12, 0, 25, 10], [8, 0, 22, 10]]
    m = matrix_of(preds, gts)
    optimum = best_total(m)
    assert greedy_total(m) < optimum - 0.5
    result = score("bbox_set", preds, gts)
    assert result["annotation_reward"] == pytest.approx(optimum / 3, rel=1e-15)
    assert result["annotation_assigned_iou_mean"] == pytest.approx(optimum / 3, rel=1e-15)


def test_missing_boxes_divide_by_the_target_count() -> None:
    result = score("bbox_set", [A], [A, B])
    assert result["annotation_reward"] == 0.5
    assert result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_iou_mean"] == 1.0


def test_extra_boxes_divide_by_the_prediction_count() -> None:
    result = score("bbox_set", [C, A, B], [A])
    assert result["annotation_reward"] == 1 / 3
    assert result["annotation_pred_size"] == 3.0
    assert result["annotation_gt_size"] == 1.0
    assert result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_iou_mean"] == 1.0


def test_partial_set_reward_is_matched_sum_over_max_count() -> None:
    # A_THIRD -> A (1/3), B_HALF -> B (1/2), C unmatched: (1/3 + 1/2) / 3.
    result = score("bbox_set", [B_HALF, A_THIRD], [A, B, C])
    assert result["annotation_reward"] == pytest.approx((1 / 3 + 1 / 2) / 3, rel=1e-15)
    assert result["annotation_assigned_iou_mean"] == pytest.approx((1 / 3 + 1 / 2) / 2, rel=1e-15)


def test_duplicate_predictions_cannot_both_claim_one_target() -> None:
    assert reward("bbox_set", [A, A, A], [A]) == 1 / 3
    assert reward("bbox_set", [A, A], [A, A]) == 1.0


def test_set_both_empty_is_one_and_one_empty_is_zero() -> None:
    both = score("bbox_set", [], [])
    assert both["annotation_reward"] == 1.0
    assert both["annotation_parse_ok"] == 1.0
    assert both["annotation_assigned_count"] == 0.0
    assert both["annotation_assigned_iou_mean"] == 0.0
    assert both["overall"] == 1.0
    for pred, gt in (([], [A, B]), ([A, B], [])):
        result = score("bbox_set", pred, gt)
        assert result["annotation_reward"] == 0.0
        assert result["annotation_parse_ok"] == 1.0
        assert result["annotation_assigned_count"] == 0.0


def test_zero_count_target_rewards_an_empty_prediction_only() -> None:
    # Counting tasks annotate a valid zero count with an empty set.
    assert reward("bbox_set", [], []) == 1.0
    assert reward("bbox_set", [A], []) == 0.0


# --- sequences -------------------------------------------------------------------


def test_sequence_is_index_aligned() -> None:
    assert reward("bbox_sequence", [A, B], [A, B]) == 1.0
    assert reward("bbox_sequence", [B, A], [A, B]) == 0.0  # same boxes, wrong order
    assert reward("bbox_set", [B, A], [A, B]) == 1.0  # a set would not care


def test_sequence_divides_by_the_longer_length() -> None:
    assert reward("bbox_sequence", [A, B, C], [A, B]) == 2 / 3
    assert reward("bbox_sequence", [A], [A, B]) == 0.5
    assert reward("bbox_sequence", [A_THIRD, B_HALF], [A, B, C]) == pytest.approx((1 / 3 + 1 / 2) / 3, rel=1e-15)
    # An extra box in front shifts everything: no index lines up.
    assert reward("bbox_sequence", [C, A, B], [A, B]) == 0.0


def test_sequence_empty_cases() -> None:
    assert reward("bbox_sequence", [], []) == 1.0
    assert reward("bbox_sequence", [], [A]) == 0.0
    assert reward("bbox_sequence", [A], []) == 0.0


# --- maps ------------------------------------------------------------------------


def test_map_scores_shared_keys_over_the_key_union() -> None:
    target = {"source": A, "target": B}
    result = score("bbox_map", {"source": A_THIRD, "other": C}, target)
    # shared {source}: 1/3; union {source, target, other}: 3.
    assert result["annotation_reward"] == pytest.approx(1 / 9, rel=1e-15)
    assert result["annotation_pred_size"] == 2.0
    assert result["annotation_gt_size"] == 2.0
    assert result["annotation_assigned_count"] == 1.0
    assert result["annotation_shared_key_count"] == 1.0
    assert result["annotation_missing_key_count"] == 1.0
    assert result["annotation_extra_key_count"] == 1.0
    assert result["annotation_assigned_iou_mean"] == 1 / 3


def test_map_binds_roles_swapped_values_score_zero() -> None:
    target = {"source": A, "target": B}
    assert reward("bbox_map", {"source": A, "target": B}, target) == 1.0
    assert reward("bbox_map", {"target": A, "source": B}, target) == 0.0
    assert reward("bbox_map", {"target": B, "source": A}, target) == 1.0  # key order is irrelevant


def test_map_missing_and_extra_keys() -> None:
    target = {"a": A, "b": B}
    missing = score("bbox_map", {"a": A}, target)
    assert missing["annotation_reward"] == 0.5
    assert (missing["annotation_missing_key_count"], missing["annotation_extra_key_count"]) == (1.0, 0.0)
    extra = score("bbox_map", {"a": A, "b": B, "c": C}, target)
    assert extra["annotation_reward"] == 2 / 3
    assert (extra["annotation_missing_key_count"], extra["annotation_extra_key_count"]) == (0.0, 1.0)


def test_map_empty_cases() -> None:
    assert reward("bbox_map", {}, {}) == 1.0
    nothing = score("bbox_map", {}, {"a": A})
    assert nothing["annotation_reward"] == 0.0
    assert nothing["annotation_parse_ok"] == 1.0
    assert nothing["annotation_assigned_iou_mean"] == 0.0
    assert reward("bbox_map", {"a": A}, {}) == 0.0


# --- set-maps --------------------------------------------------------------------


def test_set_map_is_the_per_key_set_score_over_the_key_union() -> None:
    target = {"a": [A], "b": [B, C]}
    pred = {"a": [A_THIRD], "b": [C, B, [900, 900, 910, 910]], "z": [A]}
    result = score("bbox_set_map", pred, target)
    # a: 1/3; b: two exact matches over max(3, 2) = 2/3; z is extra; union 3.
    assert result["annotation_reward"] == pytest.approx((1 / 3 + 2 / 3) / 3, rel=1e-15)
    assert result["annotation_pred_size"] == 3.0
    assert result["annotation_gt_size"] == 2.0
    assert result["annotation_assigned_count"] == 3.0  # 1 pair under a, 2 under b
    assert result["annotation_shared_key_count"] == 2.0
    assert result["annotation_missing_key_count"] == 0.0
    assert result["annotation_extra_key_count"] == 1.0
    # Mean of per-key means (1/3 and 1), not the mean over the three pairs (7/9).
    assert result["annotation_assigned_iou_mean"] == pytest.approx((1 / 3 + 1) / 2, rel=1e-15)


def test_set_map_key_with_two_empty_sets_scores_one_but_has_no_mean() -> None:
    result = score("bbox_set_map", {"a": [], "b": [A_THIRD]}, {"a": [], "b": [A]})
    assert result["annotation_reward"] == pytest.approx((1 + 1 / 3) / 2, rel=1e-15)
    assert result["annotation_assigned_count"] == 1.0
    assert result["annotation_assigned_iou_mean"] == 1 / 3  # key "a" matched nothing


def test_set_map_missing_key_and_empty_cases() -> None:
    result = score("bbox_set_map", {"a": [A]}, {"a": [A], "b": [B]})
    assert result["annotation_reward"] == 0.5
    assert result["annotation_missing_key_count"] == 1.0
    assert reward("bbox_set_map", {}, {}) == 1.0
    assert reward("bbox_set_map", {}, {"a": [A]}) == 0.0
    assert reward("bbox_set_map", {"a": []}, {"a": [A]}) == 0.0


def test_set_map_uses_hungarian_inside_each_key() -> None:
    result = score("bbox_set_map", {"k": [P1, P2]}, {"k": [G1, G2]})
    assert result["annotation_reward"] == pytest.approx((7 / 13 + 2 / 3) / 2, rel=1e-15)
