"""trace_tasks family of pixel boxes: bbox, bbox_set, bbox_sequence, bbox_map, bbox_set_map."""

from trace_plugins_bbox.geometry import iou, iou_matrix, parse_box

__all__ = ["iou", "iou_matrix", "parse_box"]
