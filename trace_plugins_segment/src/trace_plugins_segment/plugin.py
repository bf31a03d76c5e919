"""The trace_tasks plugin of the segment family: ``segment`` and ``segment_set``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks import AnnotationScore, AnnotationTypeSpec, ScoringContext, hookimpl
from trace_tasks.shapes import Primitive, make_parser, make_scorer
from trace_plugins_segment.geometry import parse_segment, similarity, similarity_matrix


def _half_life(ctx: ScoringContext) -> Mapping[str, float]:
    return {"annotation_point_half_life_px": ctx.half_life_px}


SEGMENT = Primitive(
    name="segment",
    parse_item=parse_segment,
    is_item=lambda value: False,
    similarity=similarity,
    matrix=similarity_matrix,
    metric="similarity",
    promote_single=False,  # a lone segment is not a one-item segment_set
    extra_diagnostics=_half_life,
)

#: annotation type -> (collection shape, current reward id)
TYPES = {
    "segment": ("scalar", "segment_soft_distance_v0"),
    "segment_set": ("set", "segment_set_soft_distance_v0"),
}

PARSERS = {name: make_parser(shape, SEGMENT) for name, (shape, _) in TYPES.items()}
SCORERS = {rid: make_scorer(shape, SEGMENT) for shape, rid in TYPES.values()}


@hookimpl
def trace_annotation_types() -> Sequence[AnnotationTypeSpec]:
    return [AnnotationTypeSpec(name, (rid,)) for name, (_, rid) in TYPES.items()]


@hookimpl
def trace_resolve_reward_id(annotation_type: str) -> str | None:
    entry = TYPES.get(annotation_type)
    return entry[1] if entry else None


@hookimpl
def trace_parse_annotation(annotation_type: str, value: object) -> Any:
    return PARSERS[annotation_type](value)


@hookimpl
def trace_score_annotation(reward_id: str, prediction: Any, target: Any, context: ScoringContext) -> AnnotationScore:
    return SCORERS[reward_id](prediction, target, context)
