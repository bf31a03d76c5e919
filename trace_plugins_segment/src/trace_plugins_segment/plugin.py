"""The trace_tasks plugin of the segment family: ``segment`` and ``segment_set``.

The entry point names :data:`family` itself; ``ShapeFamily`` supplies every hook.
"""

from __future__ import annotations

from trace_plugins_segment.geometry import parse_segment, similarity, similarity_matrix
from trace_tasks.family import ImageBlind, Primitive, ShapeFamily, half_life_diagnostic

_POINT_SCHEMA = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}

SEGMENT = Primitive(
    name="segment",
    parse_item=parse_segment,
    is_item=lambda value: False,
    similarity=similarity,
    matrix=similarity_matrix,
    metric="similarity",
    promote_single=False,  # a lone segment is not a one-item segment_set
    extra_diagnostics=half_life_diagnostic,
    drawn_as="polyline",  # drawn as the Polyline through its two ends: the lint reads them without drawing
    examples=([[10, 10], [200, 40]], [[50, 300], [50, 120]]),
    parsed_item="tuple (x0, y0, x1, y1) of floats, the two endpoints in the order given",
    json_schema={"type": "array", "items": _POINT_SCHEMA, "minItems": 2, "maxItems": 2},
    item_form="[[x0, y0], [x1, y1]]",
    item_help="its two endpoints in pixels of the image, in either order",
    native_keys=("line_2d", "segment"),
    flat_xy=True,  # items are flat (x, y, ...) tuples: scaling and declared frames for free
    # the kit's parse of a segment depends on the value only; the image-blind segment is the diagonal
    pure_parse=True,
    image_blind=ImageBlind(lambda width, height: [[0, 0], [width, height]]),
    # the native build scores segment and segment_set from plain JSON with this very similarity (docs/compiled.md)
    native="soft_segment",
)

family = ShapeFamily(
    SEGMENT,
    {
        "segment": ("scalar", "segment_soft_distance_v0"),
        "segment_set": ("set", "segment_set_soft_distance_v0"),
    },
)
