"""A toy family used by the in-process plugin tests: 1-D intervals with two reward versions.

It follows the recipe of docs/plugins.md "Offering a new reward version": the
type declares both ``interval_iou_v0`` and ``interval_iou_v1`` and
``trace_resolve_reward_id`` names the owner's default (``current``; a user pin
can still choose the other). It also adds an answer type, may declare extra
reward ids through ``trace_reward_ids``, explains its scores, draws an
interval, recognises a one-item list as a native spelling and scales an
interval (its x only), so every hook in ``trace_tasks.plugins.hookspecs`` has an implementation
here, and it records each hook call, so tests can prove each hook was exercised.

:class:`DefaultHijacker` is the plugin contract v2 forbids: it owns nothing but
answers ``trace_resolve_reward_id`` for ``interval``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trace_tasks import (
    AnnotationExplanation,
    AnnotationParseError,
    AnnotationScore,
    AnnotationTypeSpec,
    AnswerTypeSpec,
    ExplainedItem,
    MatchedPair,
    NativeFormat,
    RewardIdSpec,
    ScoringContext,
    hookimpl,
)
from trace_tasks.family import coordinates
from trace_tasks.plugins import Drawable, Polyline

V0 = "interval_iou_v0"
V1 = "interval_iou_v1"

Interval = tuple[float, float]


def iou(a: Interval, b: Interval) -> float:
    """v0: plain 1-D IoU (0 for disjoint intervals, and when a length overflows)."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    if not (union > 0 and math.isfinite(union)):  # [-1e308, 1e308] is 2e308 long: inf, and inf - inf is NaN
        return 0.0
    return min(1.0, inter / union)


def giou01(a: Interval, b: Interval) -> float:
    """v1: generalized IoU mapped to [0, 1], so near misses earn partial credit (0 when a length overflows)."""
    hull = max(a[1], b[1]) - min(a[0], b[0])
    union = (a[1] - a[0]) + (b[1] - b[0]) - max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    if not (hull > 0 and union > 0 and math.isfinite(hull) and math.isfinite(union)):
        return 0.0
    giou = iou(a, b) - (hull - union) / hull
    return min(1.0, max(0.0, (giou + 1.0) / 2.0))


class IntervalFamily:
    """Owns annotation type ``interval`` and answer type ``hex_color``.

    ``current`` is the id ``trace_resolve_reward_id`` answers: the owner's
    default, which new contracts get unless the user pins another id.
    ``extra_ids`` are returned from ``trace_reward_ids`` (none by default).
    """

    def __init__(self, current: str = V1, extra_ids: Sequence[RewardIdSpec] = ()) -> None:
        self.current = current
        self.extra_ids = list(extra_ids)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    @hookimpl
    def trace_annotation_types(self) -> Sequence[AnnotationTypeSpec]:
        self.calls.append(("trace_annotation_types", ()))
        return [
            AnnotationTypeSpec(
                "interval", (V0, V1), "a 1-D interval [lo, hi]", shape="scalar",
                examples=([0, 10], [2.5, 4]), parsed_value="tuple (lo, hi) of floats with lo < hi",
            )
        ]  # fmt: skip

    @hookimpl
    def trace_reward_ids(self) -> Sequence[RewardIdSpec]:
        self.calls.append(("trace_reward_ids", ()))
        return list(self.extra_ids)

    @hookimpl
    def trace_answer_types(self) -> Sequence[AnswerTypeSpec]:
        self.calls.append(("trace_answer_types", ()))
        return [AnswerTypeSpec("hex_color", reads_json_strings=False, description="#rrggbb, case-insensitive")]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        self.calls.append(("trace_resolve_reward_id", (annotation_type,)))
        return self.current if annotation_type == "interval" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> Interval | None:
        if annotation_type != "interval":
            return None  # not ours: through pm.hook, the owner answers
        self.calls.append(("trace_parse_annotation", (annotation_type,)))
        lo, hi = coordinates(value, 2)
        if not lo < hi:
            raise AnnotationParseError("an interval needs lo < hi")
        return (lo, hi)

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: Interval, target: Interval, context: ScoringContext
    ) -> AnnotationScore | None:
        if reward_id not in (V0, V1):
            return None
        self.calls.append(("trace_score_annotation", (reward_id,)))
        return _score(reward_id, prediction, target)

    @hookimpl
    def trace_explain_annotation(
        self, reward_id: str, prediction: Interval | None, target: Interval, context: ScoringContext
    ) -> AnnotationExplanation | None:
        if reward_id not in (V0, V1):
            return None
        self.calls.append(("trace_explain_annotation", (reward_id,)))
        if prediction is None:
            return AnnotationExplanation(
                AnnotationScore(0.0, {}), "one pair", "iou", unmatched_targets=(ExplainedItem("", target),),
                formula="no parsed prediction: 0",
            )  # fmt: skip
        score = _score(reward_id, prediction, target)
        pair = MatchedPair(ExplainedItem("", prediction), ExplainedItem("", target), score.reward)
        return AnnotationExplanation(score, "one pair", "iou" if reward_id == V0 else "giou01", (pair,))

    @hookimpl
    def trace_draw_annotation(self, annotation_type: str, item: Interval) -> Sequence[Drawable] | None:
        if annotation_type != "interval":
            return None
        self.calls.append(("trace_draw_annotation", (annotation_type,)))
        return [Polyline([(item[0], 0.0), (item[1], 0.0)])]

    @hookimpl
    def trace_native_annotation(self, annotation_type: str, value: object) -> NativeFormat | None:
        if annotation_type != "interval":
            return None
        self.calls.append(("trace_native_annotation", (annotation_type,)))
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            return NativeFormat("[[lo, hi]] (a list holding the one interval)", "[lo, hi]", value[0])
        return None

    @hookimpl
    def trace_scale_annotation(self, annotation_type: str, value: Interval, scale_x: float, scale_y: float) -> Interval | None:
        if annotation_type != "interval":
            return None
        self.calls.append(("trace_scale_annotation", (annotation_type,)))
        return (value[0] * scale_x, value[1] * scale_x)

    @hookimpl
    def trace_frame_annotation(
        self, annotation_type: str, value: Interval, scale_x: float, scale_y: float, y_first: bool
    ) -> Interval | None:
        if annotation_type != "interval":
            return None
        self.calls.append(("trace_frame_annotation", (annotation_type,)))
        if y_first:
            return None  # an interval on the x axis has no y-first spelling: that frame is refused
        return (value[0] * scale_x, value[1] * scale_x)

    @hookimpl
    def trace_reread_annotation(self, annotation_type: str, value: object) -> dict[str, object] | None:
        if annotation_type != "interval":
            return None
        self.calls.append(("trace_reread_annotation", (annotation_type,)))
        # [start, length] read as [start, start + length]
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
            return {"start_length": (float(value[0]), float(value[0]) + float(value[1]))}
        return {}

    def hooks_called(self) -> set[str]:
        return {name for name, _ in self.calls}


def _score(reward_id: str, prediction: Interval, target: Interval) -> AnnotationScore:
    reward = iou(prediction, target) if reward_id == V0 else giou01(prediction, target)
    return AnnotationScore(reward, {"annotation_interval_reward_version": 0.0 if reward_id == V0 else 1.0})


class DefaultHijacker:
    """Owns no type, yet answers ``trace_resolve_reward_id`` for ``interval``: a load error under contract v2."""

    def __init__(self, answer: str = V0) -> None:
        self.answer = answer

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return self.answer if annotation_type == "interval" else None
