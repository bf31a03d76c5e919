"""The trace_tasks plugin of the point family: five types, five ``*_soft_distance_v0`` ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks import AnnotationScore, AnnotationTypeSpec, ScoringContext, hookimpl
from trace_tasks.shapes import Primitive, make_parser, make_scorer
from trace_plugins_point.geometry import is_point, parse_point, similarity, similarity_matrix


def _half_life(ctx: ScoringContext) -> Mapping[str, float]:
    return {"annotation_point_half_life_px": ctx.half_life_px}


POINT = Primitive(
    name="point",
    parse_item=parse_point,
    is_item=is_point,
    similarity=similarity,
    matrix=similarity_matrix,
    metric="similarity",
    extra_diagnostics=_half_life,
)

#: annotation type -> (collection shape, current reward id)
TYPES = {
    "point": ("scalar", "point_soft_distance_v0"),
    "point_set": ("set", "point_set_soft_distance_v0"),
    "point_sequence": ("sequence", "point_sequence_soft_distance_v0"),
    "point_map": ("map", "point_map_soft_distance_v0"),
    "point_set_map": ("set_map", "point_set_map_soft_distance_v0"),
}

PARSERS = {name: make_parser(shape, POINT) for name, (shape, _) in TYPES.items()}
SCORERS = {rid: make_scorer(shape, POINT) for shape, rid in TYPES.values()}


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
