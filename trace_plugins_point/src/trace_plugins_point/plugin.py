"""The trace_tasks plugin of the point family: five types, five ``*_soft_distance_v0`` ids.

``point_sequence`` also offers ``point_sequence_aligned_distance_v0`` (pinnable,
never current by itself): the same soft distance over an order-preserving
alignment instead of index pairs, so one missing point does not shift every later pair.

The entry point names :data:`family` itself; ``AlignedShapeFamily`` (a
``ShapeFamily``) supplies every hook.
"""

from __future__ import annotations

from trace_plugins_point.geometry import is_point, parse_point, similarity, similarity_matrix
from trace_tasks.family import AlignedShapeFamily, ImageBlind, Primitive, half_life_diagnostic

POINT = Primitive(
    name="point",
    parse_item=parse_point,
    is_item=is_point,
    similarity=similarity,
    matrix=similarity_matrix,
    metric="similarity",
    extra_diagnostics=half_life_diagnostic,
    drawn_as="point",  # drawn as one Point(x, y): the lint reads it without drawing
    examples=([120, 80], [40, 300]),
    parsed_item="tuple (x, y) of floats",
    json_schema={"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
    item_form="[x, y]",
    item_help="in pixels of the image, x to the right and y down from its top-left corner",
    native_keys=("point_2d", "point"),
    flat_xy=True,  # items are flat (x, y, ...) tuples: scaling and declared frames for free
    # the kit's parse of a point depends on the value only; the image-blind point is the image centre
    pure_parse=True,
    image_blind=ImageBlind(lambda width, height: [width / 2, height / 2]),
    # the native build scores point and point_set from plain JSON with this very similarity (docs/compiled.md)
    native="soft_point",
)

family = AlignedShapeFamily(
    POINT,
    {
        "point": ("scalar", "point_soft_distance_v0"),
        "point_set": ("set", "point_set_soft_distance_v0"),
        "point_sequence": ("sequence", ("point_sequence_soft_distance_v0", "point_sequence_aligned_distance_v0")),
        "point_map": ("map", "point_map_soft_distance_v0"),
        "point_set_map": ("set_map", "point_set_map_soft_distance_v0"),
    },
    aligned=("point_sequence_aligned_distance_v0",),
)
