"""Example third-party reward version for trace_tasks: ``bbox_giou_v1`` for ``bbox`` (GIoU rescaled to [0, 1])."""

from trace_plugins_bbox_giou.geometry import giou, giou01

__all__ = ["giou", "giou01"]
