"""What a family says about one geometric item: the input of the collection shapes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from trace_tasks.errors import FamilyDefinitionError
from trace_tasks.plugins import FLAT_DRAWINGS, Drawable, ImageBlind, ScoringContext, flat_drawing

Matrix = Callable[[Sequence[Any], Sequence[Any], ScoringContext], Sequence[Sequence[float]]]


@attrs.frozen(slots=True, kw_only=True)
class Primitive:
    """One geometric primitive (a box, a point, a segment...).

    ``parse_item`` raises :class:`~trace_tasks.errors.AnnotationParseError` on a
    bad item; ``is_item`` tells whether a raw value looks like a single item (so
    a set or sequence given one flat item can be read as a one-item
    collection). Both may be left out by a plugin that only adds a reward
    version to a type someone else parses (:class:`~trace_tasks.family.ShapeRewards`).

    ``similarity`` returns a finite float in [0, 1] and depends on nothing but
    its arguments: parsed items that compare equal score equally (large sets
    collapse repeated items before matching); ``matrix`` returns the
    pairwise similarity of two item lists (rows: predictions). A list of lists
    must hold exactly ``similarity``'s values: its matched cells are summed as
    the reward, which saves a second similarity pass on the hot path (a matrix
    built by :func:`pairwise` holds them by construction). A numpy array only chooses the pairs
    and their ``similarity`` is summed instead, so a vectorized matrix cannot
    change the last bit of a reward.

    ``metric`` names the diagnostics (``iou`` or ``similarity``); ``wrapper_key``
    is a mapping key whose list value also counts as a collection (``bboxes``);
    ``extra_diagnostics`` adds per-type fields after the shape's own.

    For tools and the family test kit: ``draw`` turns one parsed item into
    drawables (pixel coordinates), or ``drawn_as`` declares the common
    drawing of a ``flat_xy`` item instead (``"box"``, ``"point"`` or
    ``"polyline"``: :func:`~trace_tasks.family.flat_drawing`), which the
    family then draws with and declares for every type
    (``AnnotationTypeSpec.drawn_as``: the dataset lint reads the items'
    coordinates instead of drawing each one); give one or the other.
    ``examples`` are raw items that parse (give two distinct ones, so sets can
    be permuted); ``parsed_item`` says in words what ``parse_item`` returns.

    For prompts, constrained decoding and diagnostics: ``json_schema`` is the
    JSON Schema of one raw item in canonical form (``None``: inferred from
    ``examples`` when they are all arrays of numbers, or arrays of such
    arrays, of one size); ``item_form`` writes one item literally
    (``[x0, y0, x1, y1]``) and ``item_help`` says what its numbers are;
    ``native_keys`` are the mapping keys under which model families put one
    item in their native output (Qwen-VL's ``bbox_2d``), recognised in a
    prediction that does not parse; ``scale`` returns a parsed item with its x
    coordinates times ``scale_x`` and its y coordinates times ``scale_y``
    (:func:`scale_xy` for a flat tuple of x, y pairs), for the tools' check of
    normalised coordinates.

    Declared capabilities, passed on to every type of a
    :class:`~trace_tasks.family.ShapeFamily` (``AnnotationTypeSpec``):
    ``pure_parse`` says ``parse_item`` depends on the raw item only and returns
    a value nothing changes later (a tuple of floats), so the scoring pipeline
    may remember a ground truth's parse by its content; ``image_blind`` is what
    an image-blind policy answers for one item (:class:`~trace_tasks.family.ImageBlind`:
    the whole image for a box, the centre for a point), for ``trace-tasks audit``.
    normalised coordinates; ``swap`` returns a parsed item with each coordinate
    pair written ``(y, x)`` read as ``(x, y)``. ``flat_xy`` says the parsed item
    is a flat tuple of alternating x and y coordinates (a point, a box's
    corners, a segment's ends): the family then gets ``scale`` (:func:`scale_xy`)
    and ``swap`` (:func:`swap_xy`) for free when they are not given. With both,
    the family converts a prediction written in a declared coordinate frame
    (``trace_frame_annotation``: ``prediction_frame``); without, it cannot, and
    declaring a frame for its types is an ``OptionError`` naming the family.
    ``rereadings`` maps a reading's name to a rewrite of one raw item a model
    may write otherwise into the canonical raw item (``"xywh"``: ``[x, y, w, h]``
    to ``[x, y, x + w, y + h]``; raise or return anything that does not parse
    when it does not apply), for the tools' mismatch readings
    (``trace_reread_annotation``); never the reward.
    """

    name: str
    similarity: Callable[[Any, Any, ScoringContext], float]
    matrix: Matrix
    metric: str
    parse_item: Callable[[Any], Any] | None = None
    is_item: Callable[[Any], bool] | None = None
    wrapper_key: str | None = None
    promote_single: bool = True
    extra_diagnostics: Callable[[ScoringContext], Mapping[str, float]] | None = None
    draw: Callable[[Any], Sequence[Drawable]] | None = None
    examples: tuple[Any, ...] = ()
    parsed_item: str = ""
    json_schema: Mapping[str, Any] | None = None
    item_form: str = ""
    item_help: str = ""
    native_keys: tuple[str, ...] = ()
    scale: Callable[[Any, float, float], Any] | None = None
    pure_parse: bool = False
    image_blind: ImageBlind | None = None
    swap: Callable[[Any], Any] | None = None
    flat_xy: bool = False
    rereadings: Mapping[str, Callable[[Any], Any]] = attrs.field(factory=dict)

    drawn_as: str = attrs.field(default="")

    @drawn_as.validator
    def _check_drawn_as(self, attribute: attrs.Attribute[Any], value: str) -> None:
        if value == "":
            return
        if value not in FLAT_DRAWINGS:
            raise FamilyDefinitionError(f"primitive {self.name!r}: drawn_as must be one of {FLAT_DRAWINGS} or '', got {value!r}")
        if not self.flat_xy:
            raise FamilyDefinitionError(
                f"primitive {self.name!r}: drawn_as={value!r} draws flat (x, y, ...) items: set flat_xy=True"
            )
        if self.draw is not None:
            raise FamilyDefinitionError(
                f"primitive {self.name!r}: give draw or drawn_as, not both (drawn_as={value!r} draws the item)"
            )

    @property
    def drawer(self) -> Callable[[Any], Sequence[Drawable]] | None:
        """``draw``, or the drawing ``drawn_as`` declares."""
        if self.draw is not None or not self.drawn_as:
            return self.draw
        kind = self.drawn_as
        return lambda item: flat_drawing(kind, item)

    @property
    def scaler(self) -> Callable[[Any, float, float], Any] | None:
        """``scale``, or :func:`scale_xy` for a ``flat_xy`` primitive."""
        return self.scale if self.scale is not None else scale_xy if self.flat_xy else None

    @property
    def swapper(self) -> Callable[[Any], Any] | None:
        """``swap``, or :func:`swap_xy` for a ``flat_xy`` primitive."""
        return self.swap if self.swap is not None else swap_xy if self.flat_xy else None

    native: str | None = None


def scale_xy(item: Sequence[float], scale_x: float, scale_y: float) -> tuple[float, ...]:
    """A flat item of alternating x and y coordinates (a point, a box's corners, a segment's ends), scaled."""
    if len(item) == 4:  # a box or a segment: the same products, without a generator per item
        x0, y0, x1, y1 = item
        return (x0 * scale_x, y0 * scale_y, x1 * scale_x, y1 * scale_y)
    if len(item) == 2:
        x, y = item
        return (x * scale_x, y * scale_y)
    return tuple(value * (scale_x if i % 2 == 0 else scale_y) for i, value in enumerate(item))


def swap_xy(item: Sequence[float]) -> tuple[float, ...]:
    """A flat item of ``(y, x)`` pairs read as ``(x, y)`` pairs: each pair's two numbers swapped."""
    return tuple(item[i + 1 - 2 * (i % 2)] for i in range(len(item)))


def pairwise(similarity: Callable[[Any, Any, ScoringContext], float]) -> Matrix:
    """A pure-Python similarity matrix from a pair function (fine for small sets)."""

    def matrix(preds: Sequence[Any], gts: Sequence[Any], ctx: ScoringContext) -> list[list[float]]:
        return [[similarity(p, g, ctx) for g in gts] for p in preds]

    return matrix
