"""GUI click rewards for ``bbox`` targets: ``bbox_click_hit_v0`` and ``bbox_click_soft_v0``.

A click dataset (ScreenSpot-style "click the Save button") keeps the element's
box as the target and asks the model for one point ``[x, y]``. Both versions are
pinnable and never current by themselves (``TRACE_TASKS_REWARD_IDS=bbox=bbox_click_hit_v0``):

* ``bbox_click_hit_v0``: 1 when the click is inside the box, edges included, else 0;
* ``bbox_click_soft_v0``: 1 inside; outside, the soft pixel-distance similarity
  ``exp(-ln 2 * (d / half_life)^2)`` of the distance ``d`` from the click to the
  nearest point of the box, with the contract's half-life policy (the resolved
  ``ScoringContext.half_life_px``, as for point rewards).

The prediction is a point, not a box: the versions declare it
(``RewardIdSpec.parse_prediction``), so the scorer receives the click parsed
here and the box parsed by the box family, the type's owner.

The owner declares them: the distribution's entry point names :data:`family`,
the box family of ``plugin.py`` with these two versions added
(:class:`ClickVersions` passes every other hook to the family's own method, so
the family's parse stays the very bound method the scorer knows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trace_plugins_bbox.geometry import Box
from trace_plugins_bbox.plugin import family as box_family
from trace_tasks.family import (
    AnnotationExplanation,
    AnnotationScore,
    ExplainedItem,
    MatchedPair,
    RewardIdSpec,
    ScoringContext,
    coordinates,
    hookimpl,
    soft_similarity,
)

Click = tuple[float, float]

HIT = "bbox_click_hit_v0"
SOFT = "bbox_click_soft_v0"
#: The explanation's metric: ``row_metrics`` reports ``click_acc`` (the share of clicks inside) for it.
CLICK_METRIC = "click"
INSIDE_KEY = "annotation_click_inside"
HALF_LIFE_KEY = "annotation_point_half_life_px"

#: What the kit checks beyond the generic contract: (click, box, reward) for both versions, inside and on edges.
_INSIDE_EXAMPLES: tuple[tuple[Any, Any, float], ...] = (
    ([60, 120], [10, 20, 110, 220], 1.0),
    ([10, 20], [10, 20, 110, 220], 1.0),  # a corner: edges are inside
    ([110, 150], [10, 20, 110, 220], 1.0),  # the right edge
    ([330, 90], [300, 40, 360, 90], 1.0),  # the bottom edge
)


def parse_click(value: Any) -> Click:
    """Exactly two finite, non-boolean numbers ``[x, y]`` in pixels (a box's four numbers are not a click)."""
    x, y = coordinates(value, 2)
    return (x, y)


def distance_to_box(click: Sequence[float], box: Sequence[float]) -> float:
    """Euclidean distance from the click to the nearest point of the box (0 inside or on an edge; inf on overflow)."""
    x, y = click
    x0, y0, x1, y1 = box
    dx = x0 - x if x < x0 else (x - x1 if x > x1 else 0.0)
    dy = y0 - y if y < y0 else (y - y1 if y > y1 else 0.0)
    return math.hypot(dx, dy)


def inside(click: Sequence[float], box: Sequence[float]) -> bool:
    """Whether the click lies in the box, edges included."""
    x, y = click
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def hit_similarity(click: Click, box: Box, ctx: ScoringContext) -> float:
    return 1.0 if inside(click, box) else 0.0


def soft_click_similarity(click: Click, box: Box, ctx: ScoringContext) -> float:
    # Inside first: the soft kernel of 0 is 1, but a comparison is exact where a distance could round.
    return 1.0 if inside(click, box) else soft_similarity(distance_to_box(click, box), ctx.half_life_px)


_SIMILARITY = {HIT: hit_similarity, SOFT: soft_click_similarity}
_FORMULA = {HIT: "1 inside the box (edges included), else 0", SOFT: "1 inside; outside exp(-ln2 * (d / half_life)^2)"}


class ClickVersions:
    """A family's plugin object plus the two click versions of ``bbox``, which it declares, scores and explains.

    Every hook of ``inner`` is set on this object as ``inner``'s own bound
    method, except score and explain, which answer the click ids and pass
    every other id to ``inner``.
    """

    def __init__(self, inner: object) -> None:
        self.inner = inner
        for name in dir(inner):
            if name.startswith("trace_") and not hasattr(ClickVersions, name):
                setattr(self, name, getattr(inner, name))

    @hookimpl
    def trace_reward_ids(self) -> list[RewardIdSpec]:
        form = "one point [x, y] in pixels of the image"
        # In a declared frame the prompt's frame sentence gives the unit and range; y first, the pair swaps.
        in_frame, in_frame_yx = "one point [x, y]", "one point [y, x]"
        hit_examples: tuple[tuple[Any, Any, float], ...] = (*_INSIDE_EXAMPLES, ([120, 120], [10, 20, 110, 220], 0.0))
        # 32 px right of the right edge at the kit's 32 px half-life: one half.
        soft_examples: tuple[tuple[Any, Any, float], ...] = (*_INSIDE_EXAMPLES, ([142, 120], [10, 20, 110, 220], 0.5))
        return [
            RewardIdSpec(
                HIT,
                "bbox",
                "GUI click: 1 when the predicted point [x, y] is inside the target box, edges included, else 0",
                parse_prediction=parse_click,
                prediction_form=form,
                prediction_examples=hit_examples,
                frame_prediction_form=in_frame,
                frame_prediction_form_yx=in_frame_yx,
            ),
            RewardIdSpec(
                SOFT,
                "bbox",
                "GUI click: 1 inside the target box; outside, the soft pixel-distance similarity of the distance to the box",
                parse_prediction=parse_click,
                prediction_form=form,
                prediction_examples=soft_examples,
                frame_prediction_form=in_frame,
                frame_prediction_form_yx=in_frame_yx,
            ),
        ]

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationScore | None:
        similarity = _SIMILARITY.get(reward_id)
        if similarity is None:
            return self.inner.trace_score_annotation(reward_id, prediction, target, context)  # type: ignore[attr-defined,no-any-return]
        return _score(reward_id, similarity(prediction, target, context), prediction, target, context)

    def native_plan(self, reward_id: str, score: Any) -> tuple[str, str, str, str] | None:
        """The box family's own native plan for the ids it scores (``ShapeFamily.native_plan``); None for a click id.

        The scoring pipeline's native path (the native build) asks the owner of a score hook: this object
        answers for the family it wraps, since every other id's score is that family's, unchanged.
        """
        if reward_id in _SIMILARITY or getattr(score, "__func__", None) is not ClickVersions.trace_score_annotation:
            return None
        if getattr(score, "__self__", None) is not self:
            return None
        ask = getattr(self.inner, "native_plan", None)
        inner_score = getattr(self.inner, "trace_score_annotation", None)
        return ask(reward_id, inner_score) if callable(ask) else None

    def native_frame(self, frame: Any) -> bool:
        """The box family's own answer (``ShapeFamily.native_frame``): its frame hook is passed through unchanged."""
        ask = getattr(self.inner, "native_frame", None)
        return bool(ask(frame)) if callable(ask) else False

    @hookimpl
    def trace_explain_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationExplanation | None:
        similarity = _SIMILARITY.get(reward_id)
        if similarity is None:
            return self.inner.trace_explain_annotation(reward_id, prediction, target, context)  # type: ignore[attr-defined,no-any-return]
        if prediction is None:  # nothing parsed: the box is unmatched
            score = _score(reward_id, 0.0, None, target, context)
            return AnnotationExplanation(
                score, "one pair", CLICK_METRIC, unmatched_targets=(ExplainedItem("", target),), formula="0 (no click)"
            )
        value = similarity(prediction, target, context)
        pair = MatchedPair(ExplainedItem("", prediction), ExplainedItem("", target), value)
        score = _score(reward_id, value, prediction, target, context)
        return AnnotationExplanation(
            score, "one pair", CLICK_METRIC, pairs=(pair,), formula=f"{_FORMULA[reward_id]} = {value:.4g}"
        )


def _score(reward_id: str, value: float, click: Click | None, box: Box, ctx: ScoringContext) -> AnnotationScore:
    hit = 1.0 if click is not None and inside(click, box) else 0.0
    diagnostics = {INSIDE_KEY: hit}
    if reward_id == SOFT:
        diagnostics[HALF_LIFE_KEY] = ctx.half_life_px
    return AnnotationScore(value, diagnostics)


family = ClickVersions(box_family)
