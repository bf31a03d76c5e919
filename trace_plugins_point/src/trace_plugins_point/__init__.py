"""trace_tasks family of pixel points: point, point_set, point_sequence, point_map, point_set_map."""

from trace_plugins_point.geometry import parse_point, similarity, similarity_matrix

__all__ = ["parse_point", "similarity", "similarity_matrix"]
