"""The trace_tasks plugin of the circle family: ``circle`` and ``circle_set``.

Everything here uses trace-core's public plugin API: the hook marker, the
records, and the collection shapes of :mod:`trace_tasks.shapes`. The family
supplies one :class:`~trace_tasks.shapes.Primitive` (how to read one circle and
how similar two circles are); the core's shapes turn it into the parser and
scorer of a scalar and of a set (Hungarian matching, extra and missing circles
penalised), with the same diagnostics as the official families.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_tasks import AnnotationScore, AnnotationTypeSpec, ScoringContext, hookimpl
from trace_tasks.shapes import Primitive, make_parser, make_scorer, pairwise
from trace_plugins_circle.geometry import iou, is_circle, parse_circle

CIRCLE = Primitive(
    name="circle",
    parse_item=parse_circle,
    is_item=is_circle,
    similarity=iou,
    # Sets of circles are small: a pure-Python matrix is faster than numpy there.
    matrix=pairwise(iou),
    metric="iou",
)

#: annotation type -> (collection shape, current reward id, description)
TYPES = {
    "circle": ("scalar", "circle_soft_iou_v0", "one circle [cx, cy, r] scored by IoU"),
    "circle_set": ("set", "circle_set_soft_iou_v0", "unordered circles, Hungarian-matched IoU"),
}

PARSERS = {name: make_parser(shape, CIRCLE) for name, (shape, _, _) in TYPES.items()}
SCORERS = {rid: make_scorer(shape, CIRCLE) for shape, rid, _ in TYPES.values()}


@hookimpl
def trace_annotation_types() -> Sequence[AnnotationTypeSpec]:
    """Declare both types, each with the one reward id it offers today."""
    return [AnnotationTypeSpec(name, (rid,), text) for name, (_, rid, text) in TYPES.items()]


@hookimpl
def trace_resolve_reward_id(annotation_type: str) -> str | None:
    """The current id for our own types; ``None`` for anyone else's (firstresult hook)."""
    entry = TYPES.get(annotation_type)
    return entry[1] if entry else None


@hookimpl
def trace_parse_annotation(annotation_type: str, value: object) -> Any:
    """Only called for ``circle`` and ``circle_set``: the core dispatches by owner."""
    return PARSERS[annotation_type](value)


@hookimpl
def trace_score_annotation(reward_id: str, prediction: Any, target: Any, context: ScoringContext) -> AnnotationScore:
    """Only called with our own reward ids, on values our parser produced."""
    return SCORERS[reward_id](prediction, target, context)
