"""The trace_tasks plugin of the circle family: ``circle`` and ``circle_set``.

Everything here uses trace-core's public plugin API. The family supplies one
:class:`~trace_tasks.family.Primitive` (how to read one circle, how similar two
circles are, how to draw one); :class:`~trace_tasks.family.ShapeFamily` turns it
into every hook: parsing and scoring a scalar and a set (Hungarian matching,
extra and missing circles penalised, the official families' diagnostics),
explaining a score and drawing circles. It declares its parse pure (the scorer
remembers a ground truth's parse) and its image-blind item (the audit's
whole-image policy: the inscribed circle). The entry point names :data:`family`.
"""

from __future__ import annotations

from trace_plugins_circle.geometry import iou, is_circle, parse_circle
from trace_tasks.family import Circle, ImageBlind, Primitive, ShapeFamily, pairwise

CIRCLE = Primitive(
    name="circle",
    parse_item=parse_circle,
    is_item=is_circle,
    similarity=iou,
    # Sets of circles are small: a pure-Python matrix is faster than numpy there.
    matrix=pairwise(iou),
    metric="iou",
    draw=lambda c: [Circle(*c)],
    examples=([100, 100, 40], [300, 200, 25]),
    parsed_item="tuple (cx, cy, r) of floats with r > 0",
    # parse_circle depends on the value only and returns a tuple: the scorer may remember a target's parse.
    pure_parse=True,
    # What a policy blind to the image answers (trace-tasks audit): the circle inscribed in the image.
    image_blind=ImageBlind(lambda width, height: [width / 2, height / 2, min(width, height) / 2]),
)

#: annotation type -> (collection shape, reward id); the first id of a type is its default.
family = ShapeFamily(
    CIRCLE,
    {
        "circle": ("scalar", "circle_soft_iou_v0"),
        "circle_set": ("set", "circle_set_soft_iou_v0"),
    },
)
