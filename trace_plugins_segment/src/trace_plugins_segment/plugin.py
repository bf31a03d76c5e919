"""The trace_tasks plugin of the segment family: ``segment`` and ``segment_set``."""

from __future__ import annotations

from collections.abc import Mapping

from trace_tasks import ScoringContext
from trace_tasks.shapes import Primitive, ShapeFamily
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

family = ShapeFamily(SEGMENT, TYPES)
PARSERS, SCORERS = family.parsers, family.scorers

# This module is the plugin its entry point names; its hooks are the family's.
trace_annotation_types = family.trace_annotation_types
trace_resolve_reward_id = family.trace_resolve_reward_id
trace_parse_annotation = family.trace_parse_annotation
trace_score_annotation = family.trace_score_annotation
