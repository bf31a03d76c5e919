"""The trace_tasks plugin of the point family: five types, five ``*_soft_distance_v0`` ids."""

from __future__ import annotations

from collections.abc import Mapping

from trace_tasks import ScoringContext
from trace_tasks.shapes import Primitive, ShapeFamily
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

family = ShapeFamily(POINT, TYPES)
PARSERS, SCORERS = family.parsers, family.scorers

# This module is the plugin its entry point names; its hooks are the family's.
trace_annotation_types = family.trace_annotation_types
trace_resolve_reward_id = family.trace_resolve_reward_id
trace_parse_annotation = family.trace_parse_annotation
trace_score_annotation = family.trace_score_annotation
