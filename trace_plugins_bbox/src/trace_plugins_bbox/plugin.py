"""The trace_tasks plugin of the box family: five types, five ``*_soft_iou_v0`` reward ids."""

from __future__ import annotations

from trace_tasks.shapes import Primitive, ShapeFamily
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

family = ShapeFamily(BOX, TYPES)
PARSERS, SCORERS = family.parsers, family.scorers

# This module is the plugin its entry point names; its hooks are the family's.
trace_annotation_types = family.trace_annotation_types
trace_resolve_reward_id = family.trace_resolve_reward_id
trace_parse_annotation = family.trace_parse_annotation
trace_score_annotation = family.trace_score_annotation
