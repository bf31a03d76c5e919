"""The trace_tasks plugin of the box family: five types, five ``*_soft_iou_v0`` reward ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_tasks import AnnotationScore, AnnotationTypeSpec, ScoringContext, hookimpl
from trace_tasks.shapes import Primitive, make_parser, make_scorer
from trace_plugins_bbox.geometry import iou, iou_matrix, is_box, parse_box

BOX = Primitive(
    name="bbox",
    parse_item=parse_box,
    is_item=is_box,
    similarity=iou,
    matrix=iou_matrix,
    metric="iou",
    wrapper_key="bboxes",
)

#: annotation type -> (collection shape, current reward id)
TYPES = {
    "bbox": ("scalar", "bbox_soft_iou_v0"),
    "bbox_set": ("set", "bbox_set_soft_iou_v0"),
    "bbox_sequence": ("sequence", "bbox_sequence_soft_iou_v0"),
    "bbox_map": ("map", "bbox_map_soft_iou_v0"),
    "bbox_set_map": ("set_map", "bbox_set_map_soft_iou_v0"),
}

PARSERS = {name: make_parser(shape, BOX) for name, (shape, _) in TYPES.items()}
SCORERS = {rid: make_scorer(shape, BOX) for shape, rid in TYPES.values()}


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
