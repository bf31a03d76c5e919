"""trace_tasks family of undirected pixel segments: segment, segment_set."""

from trace_plugins_segment.geometry import parse_segment, segment_distance, similarity

__all__ = ["parse_segment", "segment_distance", "similarity"]
