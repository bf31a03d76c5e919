"""The trace_tasks plugin of the box family: five types, five ``*_soft_iou_v0`` reward ids.

``bbox_sequence`` also offers ``bbox_sequence_aligned_iou_v0`` (pinnable, never
current by itself): the same IoU over an order-preserving alignment instead of
index pairs, so one missing box does not shift every later pair.

The entry point names :data:`family` itself; ``AlignedShapeFamily`` (a
``ShapeFamily``) supplies every hook.
"""

from __future__ import annotations

from trace_plugins_bbox.geometry import iou, iou_matrix, is_box, parse_box, xywh_corners
from trace_tasks.family import AlignedShapeFamily, ImageBlind, Primitive

BOX = Primitive(
    name="bbox",
    parse_item=parse_box,
    is_item=is_box,
    similarity=iou,
    matrix=iou_matrix,
    metric="iou",
    wrapper_key="bboxes",
    drawn_as="box",  # drawn as one Box(x0, y0, x1, y1): the lint reads the corners without drawing
    examples=([10, 20, 110, 220], [300, 40, 360, 90]),
    parsed_item="tuple (x0, y0, x1, y1) of floats with x0 < x1 and y0 < y1",
    json_schema={"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
    item_form="[x0, y0, x1, y1]",
    item_help="its left, top, right and bottom edges in pixels of the image, x0 < x1 and y0 < y1",
    native_keys=("bbox_2d", "bbox", "box"),
    flat_xy=True,  # items are flat (x, y, ...) tuples: scaling and declared frames for free
    rereadings={"xywh": xywh_corners},  # a mismatch the tools name, never a reward
    # the kit's parse of a box depends on the value only; the image-blind box covers the whole image
    pure_parse=True,
    image_blind=ImageBlind(lambda width, height: [0, 0, width, height], averaged=True),
    # the native build scores bbox and bbox_set from plain JSON with this very IoU (docs/compiled.md)
    native="iou",
)

family = AlignedShapeFamily(
    BOX,
    {
        "bbox": ("scalar", "bbox_soft_iou_v0"),
        "bbox_set": ("set", "bbox_set_soft_iou_v0"),
        "bbox_sequence": ("sequence", ("bbox_sequence_soft_iou_v0", "bbox_sequence_aligned_iou_v0")),
        "bbox_map": ("map", "bbox_map_soft_iou_v0"),
        "bbox_set_map": ("set_map", "bbox_set_map_soft_iou_v0"),
    },
    aligned=("bbox_sequence_aligned_iou_v0",),
)
