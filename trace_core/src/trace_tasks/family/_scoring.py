"""Scoring the five collection shapes over a family's similarity, and explaining a score.

One implementation serves both: the scorer takes an optional ``trail`` list
into which it records every match it made, and the explainer is the scorer run
with a trail. So an explanation shows exactly the assignment the reward was
built from; nothing is matched twice by different code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from trace_tasks.errors import FamilyDefinitionError
from trace_tasks.family._assignment import AssignmentBudget
from trace_tasks.family._matching import _ONE_PAIR, Matched, match_sequence, match_set
from trace_tasks.family._primitives import Primitive
from trace_tasks.plugins import SHAPES, AnnotationExplanation, AnnotationScore, ExplainedItem, MatchedPair, ScoringContext

#: ``(key, Matched)`` per match the scorer made; key "" outside maps.
Trail = Optional[list[tuple[str, Matched]]]
Scorer = Callable[..., AnnotationScore]

METHODS = {
    "scalar": "one pair",
    "set": "Hungarian assignment",
    "sequence": "index-aligned",
    "map": "by key",
    "set_map": "by key, then Hungarian assignment",
}


def _set_reward(matched: Matched, n: int, m: int) -> float:
    if n == 0 and m == 0:
        return 1.0
    return matched.total / matched.denominator


def _mean(total: float, count: int) -> float:
    return total / count if count else 0.0


def _keyed_totals(
    pred: dict[str, Any],
    gt: dict[str, Any],
    shared: list[str],
    prim: Primitive,
    ctx: ScoringContext,
    per_key: bool,
    trail: Trail,
) -> tuple[float, int, float, int]:
    """A map's sums over its shared keys: (reward total, assigned count, sum of the key means, keys with a mean).

    ``per_key``: each key holds a set (a set-map), matched by assignment; otherwise one item per key.
    """
    total = 0.0
    assigned = 0
    mean_sum = 0.0
    mean_keys = 0
    # One budget for every key: a set-map cannot multiply the per-response bound by its keys.
    # It is sized by the target, so that any plausible prediction of every key fits.
    budget = AssignmentBudget.for_target(len(v) for v in gt.values()) if per_key else None
    for key in shared:
        if per_key:
            p, g = pred[key], gt[key]
            matched = match_set(p, g, prim, ctx, budget)
            total += _set_reward(matched, len(p), len(g))
            assigned += matched.count
            if matched.count:
                mean_sum += matched.total / matched.count
                mean_keys += 1
        else:
            s = prim.similarity(pred[key], gt[key], ctx)
            if trail is not None:
                matched = Matched(s, 1, 1, _ONE_PAIR)
            total += s
            assigned += 1
            mean_sum += s
            mean_keys += 1
        if trail is not None:
            trail.append((key, matched))
    return total, assigned, mean_sum, mean_keys


def make_scorer(shape: str, prim: Primitive) -> Scorer:
    """The score function ``(prediction, target, context, trail=None)`` of ``shape`` over ``prim``."""
    mean_key = f"annotation_assigned_{prim.metric}_mean"
    extra = prim.extra_diagnostics or (lambda ctx: {})

    def scalar(pred: Any, gt: Any, ctx: ScoringContext, trail: Trail = None) -> AnnotationScore:
        s = prim.similarity(pred, gt, ctx)
        if trail is not None:
            trail.append(("", Matched(s, 1, 1, _ONE_PAIR)))
        diag = {"annotation_pred_size": 1.0, "annotation_gt_size": 1.0, "annotation_assigned_count": 1.0, mean_key: s}
        return AnnotationScore(s, {**diag, **extra(ctx)})

    def unordered(pred: list[Any], gt: list[Any], ctx: ScoringContext, trail: Trail = None) -> AnnotationScore:
        matched = match_set(pred, gt, prim, ctx)
        if trail is not None:
            trail.append(("", matched))
        diag = {
            "annotation_pred_size": float(len(pred)),
            "annotation_gt_size": float(len(gt)),
            "annotation_assigned_count": float(matched.count),
            mean_key: _mean(matched.total, matched.count),
        }
        return AnnotationScore(_set_reward(matched, len(pred), len(gt)), {**diag, **extra(ctx)})

    def ordered(pred: list[Any], gt: list[Any], ctx: ScoringContext, trail: Trail = None) -> AnnotationScore:
        matched = match_sequence(pred, gt, prim, ctx)
        if trail is not None:
            trail.append(("", matched))
        diag = {
            "annotation_pred_len": float(len(pred)),
            "annotation_gt_len": float(len(gt)),
            "annotation_assigned_count": float(matched.count),
            mean_key: _mean(matched.total, matched.count),
        }
        return AnnotationScore(_set_reward(matched, len(pred), len(gt)), {**diag, **extra(ctx)})

    def keyed(pred: dict[str, Any], gt: dict[str, Any], ctx: ScoringContext, per_key: bool, trail: Trail) -> AnnotationScore:
        shared = [k for k in gt if k in pred]
        union = len(pred) + len(gt) - len(shared)
        total, assigned, mean_sum, mean_keys = _keyed_totals(pred, gt, shared, prim, ctx, per_key, trail)
        reward = 1.0 if union == 0 else total / union
        diag = {
            "annotation_pred_size": float(len(pred)),
            "annotation_gt_size": float(len(gt)),
            "annotation_assigned_count": float(assigned),
            "annotation_shared_key_count": float(len(shared)),
            "annotation_missing_key_count": float(len(gt) - len(shared)),
            "annotation_extra_key_count": float(len(pred) - len(shared)),
            mean_key: _mean(mean_sum, mean_keys),
        }
        return AnnotationScore(reward, {**diag, **extra(ctx)})

    if shape == "scalar":
        return scalar
    if shape == "set":
        return unordered
    if shape == "sequence":
        return ordered
    if shape == "map":
        return lambda p, g, ctx, trail=None: keyed(p, g, ctx, False, trail)
    if shape == "set_map":
        return lambda p, g, ctx, trail=None: keyed(p, g, ctx, True, trail)
    raise FamilyDefinitionError(f"unknown shape {shape!r}; expected one of {SHAPES}")


def _items(values: Any, key: str, shape: str) -> list[ExplainedItem]:
    """The items of one parsed value (or of one map key's value), labelled."""
    if shape == "scalar":
        return [ExplainedItem("", values)]
    if shape == "map":
        return [ExplainedItem(key, values)]
    prefix = f"{key}#" if key else "#"
    return [ExplainedItem(f"{prefix}{i}", v) for i, v in enumerate(values)]


def _all_items(value: Any, shape: str) -> list[ExplainedItem]:
    if shape in ("map", "set_map"):
        inner = "map" if shape == "map" else "set"
        return [item for key, v in value.items() for item in _items(v, key, inner)]
    return _items(value, "", shape)


def _num(value: float) -> str:
    return f"{value:.4g}"


def make_explainer(shape: str, prim: Primitive, scorer: Scorer) -> Callable[[Any, Any, ScoringContext], AnnotationExplanation]:
    """The explain function ``(prediction or None, target, context)`` of ``shape``: ``scorer`` run with a trail."""
    method, metric = METHODS[shape], prim.metric
    inner = {"scalar": "scalar", "set": "set", "sequence": "set", "map": "map", "set_map": "set"}[shape]

    def explain(pred: Any, gt: Any, ctx: ScoringContext) -> AnnotationExplanation:
        if pred is None:  # nothing predicted, or a prediction that did not parse
            return AnnotationExplanation(
                AnnotationScore(0.0, {}),
                method,
                metric,
                unmatched_targets=tuple(_all_items(gt, shape)),
                formula="no parsed prediction: 0",
            )
        trail: list[tuple[str, Matched]] = []
        score = scorer(pred, gt, ctx, trail)
        pairs: list[MatchedPair] = []
        extra: list[ExplainedItem] = []
        missing: list[ExplainedItem] = []
        terms: list[str] = []
        for key, matched in trail:
            p_val = pred[key] if key else pred
            g_val = gt[key] if key else gt
            p_items, g_items = _items(p_val, key, inner), _items(g_val, key, inner)
            used_p, used_g = set(), set()
            key_terms = []
            for i, j in matched.index_pairs():
                similarity = prim.similarity(p_items[i].value, g_items[j].value, ctx)
                pairs.append(MatchedPair(p_items[i], g_items[j], similarity))
                key_terms.append(_num(similarity))
                used_p.add(i)
                used_g.add(j)
            extra += [item for i, item in enumerate(p_items) if i not in used_p]
            missing += [item for j, item in enumerate(g_items) if j not in used_g]
            sizes = f"max({len(p_items)}, {len(g_items)})"
            if shape == "set_map":
                empty = not p_items and not g_items
                terms.append("1" if empty else f"({' + '.join(key_terms) or '0'}) / {sizes}")
            else:
                terms += key_terms
        missing_keys: tuple[str, ...] = ()
        extra_keys: tuple[str, ...] = ()
        if shape in ("map", "set_map"):
            missing_keys = tuple(k for k in gt if k not in pred)
            extra_keys = tuple(k for k in pred if k not in gt)
            missing += [item for k in missing_keys for item in _items(gt[k], k, inner)]
            extra += [item for k in extra_keys for item in _items(pred[k], k, inner)]
            union = len(pred) + len(gt) - (len(gt) - len(missing_keys))
            formula = "no keys on either side: 1" if union == 0 else f"({' + '.join(terms) or '0'}) / {union} keys"
        elif shape == "scalar":
            formula = terms[0] if terms else "0"
        else:
            n, m = len(pred), len(gt)
            formula = "no items on either side: 1" if n == m == 0 else f"({' + '.join(terms) or '0'}) / max({n}, {m})"
        return AnnotationExplanation(
            score,
            method,
            metric,
            tuple(pairs),
            tuple(extra),
            tuple(missing),
            missing_keys,
            extra_keys,
            f"{formula} = {_num(score.reward)}",
        )

    return explain
