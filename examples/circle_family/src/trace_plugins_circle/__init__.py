"""Example third-party trace_tasks family: circles ``[cx, cy, r]`` scored by closed-form IoU."""

from trace_plugins_circle.geometry import intersection_area, iou, parse_circle

__all__ = ["intersection_area", "iou", "parse_circle"]
