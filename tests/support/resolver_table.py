"""What the installed packages must provide, written out by hand from the resolver table of docs/contracts.md §10.

Deliberately not read from ``trace_tasks.plugins.OFFICIAL_TYPES``: these tests
check the installed code against the contract, not against itself.
"""

from __future__ import annotations

#: docs/contracts.md §10, the resolver table: annotation type -> its default reward id.
RESOLVER_TABLE = {
    "bbox": "bbox_soft_iou_v0",
    "bbox_set": "bbox_set_soft_iou_v0",
    "bbox_sequence": "bbox_sequence_soft_iou_v0",
    "bbox_map": "bbox_map_soft_iou_v0",
    "bbox_set_map": "bbox_set_map_soft_iou_v0",
    "point": "point_soft_distance_v0",
    "point_set": "point_set_soft_distance_v0",
    "point_sequence": "point_sequence_soft_distance_v0",
    "segment": "segment_soft_distance_v0",
    "segment_set": "segment_set_soft_distance_v0",
    "point_map": "point_map_soft_distance_v0",
    "point_set_map": "point_set_map_soft_distance_v0",
}

#: Which distribution provides each official type (docs/contracts.md §11).
FAMILY = {
    **{t: "trace-plugins-bbox" for t in RESOLVER_TABLE if t.startswith("bbox")},
    **{t: "trace-plugins-point" for t in RESOLVER_TABLE if t.startswith("point")},
    **{t: "trace-plugins-segment" for t in RESOLVER_TABLE if t.startswith("segment")},
}

#: One well-formed value per official type; predicting it exactly scores 1.0.
SAMPLES = {
    "bbox": [10, 10, 50, 60],
    "bbox_set": [[10, 10, 50, 60], [70, 70, 90, 95]],
    "bbox_sequence": [[10, 10, 50, 60], [70, 70, 90, 95]],
    "bbox_map": {"cat": [10, 10, 50, 60], "dog": [70, 70, 90, 95]},
    "bbox_set_map": {"cat": [[10, 10, 50, 60]], "dog": [[70, 70, 90, 95], [1, 1, 5, 5]]},
    "point": [12, 34],
    "point_set": [[12, 34], [56, 78]],
    "point_sequence": [[12, 34], [56, 78]],
    "point_map": {"apex": [12, 34], "base": [56, 78]},
    "point_set_map": {"vertices": [[12, 34], [56, 78]], "centre": [[30, 30]]},
    "segment": [[0, 0], [40, 30]],
    "segment_set": [[[0, 0], [40, 30]], [[5, 5], [5, 80]]],
}

assert set(FAMILY) == set(RESOLVER_TABLE) == set(SAMPLES)
