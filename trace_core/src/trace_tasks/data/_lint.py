"""Warnings on the annotation contract's authoring rules: data that validates but breaks what the contract asks.

An instance that :func:`~trace_tasks.data.instance_problems` accepts is scored
honestly; it may still not be what its author meant (docs/contracts.md §13:
pixel coordinates, the scalar type for one witness, a map only for several
roles, a counting task annotating exactly the counted objects). Those breaches
are **warnings**: each has a rule id (:data:`WARNING_RULES`), a ``$``-path and a
message saying what to change, and none ever changes a score.

* :func:`instance_warnings` gives the rules one instance can break on its own;
* :class:`DatasetLint` streams a dataset: per instance its problems and
  warnings (the image path too, from the instances file's folder), and at
  :meth:`DatasetLint.finish` the rules of a **group** of instances (same answer
  type and annotation type, optionally the same value of a ``group_by`` field):
  a counting task's count that disagrees with its set, a group of one-item
  sets. Groups keep running counts only (and a bounded list of line numbers),
  never an instance, so memory is bounded whatever the number of instances.

Every geometric rule asks the owning family (its ``draw`` capability) where an
item lies; a family that cannot draw gets no geometric warning.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

import attrs

from trace_tasks.data._compiled import CompiledInstance
from trace_tasks.data._records import TraceInstance, TrainInstance
from trace_tasks.data._validation import Parts, check
from trace_tasks.errors import Problem, shown
from trace_tasks.plugins import (
    FLAT_ITEM_LENGTHS,
    AnnotationTypeEntry,
    AnswerTypeSpec,
    Box,
    Point,
    Polyline,
    Registry,
    extent_points,
    get_registry,
    is_flat_item,
    items_of,
)
from trace_tasks.scoring import UNPARSED, Size, half_life_px, read_string_literal, resolve_frame, resolve_mode

__all__ = [
    "BIG_IMAGE_PX",
    "MAX_GROUPS",
    "MAX_LISTED_PER_GROUP",
    "MIN_BIG_IMAGE_GROUP",
    "MIN_GROUP_INSTANCES",
    "SMALL_IMAGE_PX",
    "WARNING_RULES",
    "DataWarning",
    "DatasetLint",
    "dataset_warnings",
    "instance_warnings",
    "parts_warnings",
]

#: Every warning rule, by id, with what it checks (docs/cli.md lists an example of each).
WARNING_RULES: dict[str, str] = {
    "normalized-coordinates": (
        "every coordinate of a target within [0, 1] on an image larger than 2 px (or of unknown size), or within "
        "[0, 1000] while reaching past an image smaller than 800 px, or, over a group, never past 1000 on images "
        "of 1250 px or more"
    ),
    "duplicate-items": "equal items inside one target set (or one set of a set-map)",
    "count-mismatch": (
        "an integer answer other than the size of its set target, in a group where most instances answer "
        "their set's size (a counting task)"
    ),
    "single-item-set": "a group whose every set target (or every set of its set-maps) holds exactly one item",
    "single-item-sequence": "a group whose every sequence target holds exactly one item",
    "single-key-map": "a map or set-map target with exactly one key",
    "empty-map": "a map target with no key",
    "missing-image-size": "a point or segment instance without an image size (image_size or size keys in metadata)",
    "conflicting-image-size": "image_size and the image size in metadata disagree",
    "zero-length-segment": "a segment whose two endpoints are one point",
    "image-missing": "an image path that names no file (from the current directory or the instances file's folder)",
}

#: Fewest instances a group needs before a group rule speaks.
MIN_GROUP_INSTANCES = 3
#: Most groups tracked by one :class:`DatasetLint` (a ``group_by`` field with a value per instance stays bounded).
MAX_GROUPS = 10_000
#: Most ``count-mismatch`` lines listed per group; the rest are counted in one group-level warning.
MAX_LISTED_PER_GROUP = 20
#: Most line numbers quoted in a group-level message.
GROUP_LINES_SHOWN = 5
#: Most duplicate items reported per instance.
MAX_DUPLICATES_SHOWN = 5
#: An image side of at most this many pixels is far below 1000 (0-1000 coordinates reach past it).
SMALL_IMAGE_PX = 800
#: An image side of at least this many pixels is far above 1000 (pixel coordinates reach past 1000 on it).
BIG_IMAGE_PX = 1250
#: Fewest targets on such large images, all within [0, 1000], before the group is warned.
MIN_BIG_IMAGE_GROUP = 10

_VALUE = "$.annotation_gt.value"


@attrs.frozen(slots=True)
class DataWarning:
    """One warning: its rule id (a key of :data:`WARNING_RULES`), what to change, and where.

    ``path`` is the ``$``-path inside the instance (``None`` for a warning about
    a group of instances), ``line`` the instance's line (or position) when the
    warning came from a :class:`DatasetLint`. ``str()`` is
    ``warning[RULE]: PATH: MESSAGE`` (``warning[RULE]: MESSAGE`` for a group).
    Not a Python :class:`Warning`: nothing is raised or passed to :mod:`warnings`.
    """

    rule: str
    message: str
    path: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"warning[{self.rule}]: {where}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "line": self.line, "path": self.path, "message": self.message}


# --- what the families say about a type ---


@attrs.frozen(slots=True)
class _TypeInfo:
    shape: str
    #: scored by distance with the point half-life (its items draw as points or polylines); None: cannot tell
    distance: bool | None
    #: the owner's types by shape: the scalar or set type to suggest
    siblings: Mapping[str, str]


_type_infos: dict[str, _TypeInfo] = {}
_type_registry: list[object] = [None]


def _type_info(entry: AnnotationTypeEntry, registry: Registry) -> _TypeInfo:
    if _type_registry[0] is not registry:
        _type_infos.clear()
        _type_registry[0] = registry
    info = _type_infos.get(entry.name)
    if info is None:
        shape = entry.spec.shape if entry.spec is not None else ""
        siblings: dict[str, str] = {}
        for other in registry.annotation_types.values():
            other_shape = other.spec.shape if other.spec is not None else ""
            if other.plugin == entry.plugin and other_shape:
                siblings.setdefault(other_shape, other.name)
        info = _type_infos[entry.name] = _TypeInfo(shape, _distance_from_examples(entry, shape), siblings)
    return info


def _distance_from_examples(entry: AnnotationTypeEntry, shape: str) -> bool | None:
    """Whether the type's declared examples draw as points or polylines (None: no example can tell)."""
    for example in entry.spec.examples if entry.spec is not None else ():
        try:
            parsed = entry.parse(annotation_type=entry.name, value=example)
        except Exception:
            continue
        for _, item in _items(shape, parsed) or ():
            drawn = _drawn(entry, item)
            if drawn:
                return any(isinstance(d, (Point, Polyline)) for d in drawn)
    return None


def _items(shape: str, target: Any) -> Iterable[tuple[Any, Any]] | None:
    """``(place, item)`` for every item of a parsed target of ``shape``; None when the shape is not known.

    ``place`` is ``None`` (scalar), the index (set, sequence), the key (map) or
    ``(key, index)`` (set-map): :func:`_suffix` writes it as a path only for the
    rare item a warning names. Iterated once, never stored.
    """
    if shape == "scalar":
        return ((None, target),)
    if shape in ("set", "sequence") and isinstance(target, list):
        return enumerate(target)
    if shape == "map" and isinstance(target, dict):
        return target.items()
    if shape == "set_map" and isinstance(target, dict) and all(isinstance(v, list) for v in target.values()):
        return (((key, n), item) for key, items in target.items() for n, item in enumerate(items))
    return None


def _suffix(shape: str, place: Any) -> str:
    """The ``$``-path suffix of an item's ``place`` (see :func:`_items`)."""
    if shape in ("set", "sequence"):
        return f"[{place}]"
    if shape == "map":
        return f"[{place!r}]"
    if shape == "set_map":
        return f"[{place[0]!r}][{place[1]}]"
    return ""


def _drawn(entry: AnnotationTypeEntry, item: Any) -> list[Any] | None:
    draw = entry.draw
    if draw is None:
        return None
    try:
        shapes = draw(annotation_type=entry.name, item=item)
    except Exception:  # a family's drawing bug: validate's frame check reports it, the lint stays silent
        return None
    return list(shapes) if isinstance(shapes, (list, tuple)) else None


# --- one instance ---


@attrs.frozen(slots=True)
class _Facts:
    """What the group rules need of one valid instance, and its own warnings."""

    warnings: tuple[DataWarning, ...]
    answer_type: str
    annotation_type: str
    shape: str
    #: item counts: (n,) for a set or sequence, one per key for a set-map; None otherwise
    sizes: tuple[int, ...] | None
    #: the answer when it is an integer (a count), else None
    count: int | None
    #: 0: no large image; 1: a target on an image >= BIG_IMAGE_PX reaching past 1000; 2: one staying within [0, 1000]
    big: int
    size: Size | None
    siblings: Mapping[str, str]


def _count(spec: AnswerTypeSpec, value: Any) -> int | None:
    used = read_string_literal(value) if spec.reads_json_strings else value
    if type(used) is int:
        return used
    if type(used) is float and used.is_integer() and abs(used) < 2**53:
        return int(used)
    return None


def _size_text(size: Size) -> str:
    return f"{size[0]:g}x{size[1]:g}"


_INF = float("inf")
_TUPLE = frozenset((tuple,))
#: :meth:`_Extent._read_all`'s default place: each zero-length polyline noted by its index.
_BY_INDEX = object()


class _Extent:
    """The bounding range of every coordinate of a target, and what the drawables say on the way."""

    __slots__ = ("distance", "max_x", "max_y", "min_x", "min_y", "points", "xs", "ys", "zero_segments")

    def __init__(self) -> None:
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.min_x = self.min_y = _INF
        self.max_x = self.max_y = -_INF
        self.points = 0
        self.distance = False
        self.zero_segments: list[tuple[Any, tuple[float, float]]] = []

    def measure(self, entry: AnnotationTypeEntry, shape: str, target: Any) -> _Extent:
        """Take in what every item of a parsed ``target`` of ``shape`` draws as, and compute the range.

        A type that declares ``drawn_as`` has its items read as the drawing it
        declares (:func:`~trace_tasks.family.flat_drawing`; the family kit
        checks the declaration): the same coordinates, without a drawable and
        a hook call per item, all items at once. Any other type's owner draws
        each item, as it does an item not in the declared form.
        """
        kind = entry.spec.drawn_as if entry.spec is not None else ""
        if kind:
            flat = items_of(target, shape)
            if flat is not None and self._read_all(kind, flat):
                if self.zero_segments:  # indices so far: the places only for the rare warning
                    places = [place for place, _ in _items(shape, target) or ()]
                    self.zero_segments = [(places[n], point) for n, point in self.zero_segments]
                return self.close()
        items = _items(shape, target)
        if items is None:
            return self
        if kind:
            for place, item in items:
                if is_flat_item(kind, item):
                    self._read_all(kind, [item], place)
                else:
                    self._draw_each(entry, ((place, item),))  # not the declared form: its owner draws it
        else:
            self._draw_each(entry, items)
        return self.close()

    def _read_all(self, kind: str, flat: list[Any], place: Any = _BY_INDEX) -> bool:
        """What :func:`~trace_tasks.family.flat_drawing` draws of each item of ``flat``; False (nothing taken) unless all are flat.

        A zero-length polyline is noted with its index in ``flat`` (or ``place``, for one item).
        """
        if not set(map(type, flat)) <= _TUPLE:
            return False
        lengths, size = set(map(len, flat)), FLAT_ITEM_LENGTHS.get(kind)
        if not (lengths <= {size} if size is not None else all(n >= 2 and n % 2 == 0 for n in lengths)):
            return False
        coordinates = list(chain.from_iterable(flat))
        self.xs += coordinates[0::2]
        self.ys += coordinates[1::2]
        if kind != "box" and flat:
            self.distance = True
        if kind == "polyline":
            for n, item in enumerate(flat):
                if len(item) >= 4 and len(set(zip(item[0::2], item[1::2], strict=True))) == 1:
                    self.zero_segments.append((n if place is _BY_INDEX else place, (float(item[0]), float(item[1]))))
        return True

    def _draw_each(self, entry: AnnotationTypeEntry, items: Iterable[tuple[Any, Any]]) -> None:
        """Ask the owner to draw each ``(place, item)`` and take in what it draws (as :func:`_drawn`, in one loop)."""
        draw, name = entry.draw, entry.name
        if draw is None:
            return
        xs, ys = self.xs, self.ys
        for place, item in items:
            try:
                drawn = draw(annotation_type=name, item=item)
            except Exception:  # a family's drawing bug: validate's frame check reports it, the lint stays silent
                continue
            if type(drawn) is not list and not isinstance(drawn, (list, tuple)):
                continue
            for shape in drawn:
                kind = type(shape)
                if kind is Box:  # the common drawables first, without the generator
                    xs += (shape.x0, shape.x1)
                    ys += (shape.y0, shape.y1)
                    continue
                if kind is Point:
                    self.distance = True
                    xs.append(shape.x)
                    ys.append(shape.y)
                    continue
                if isinstance(shape, Polyline):
                    self.distance = True
                    points = shape.points
                    if len(points) >= 2 and len(set(points)) == 1:
                        self.zero_segments.append((place, points[0]))
                    if kind is Polyline:  # its points are its extent: no generator
                        for x, y in points:
                            xs.append(x)
                            ys.append(y)
                        continue
                for x, y in extent_points(shape):
                    xs.append(x)
                    ys.append(y)

    def close(self) -> _Extent:
        """Compute the range of the coordinates added."""
        xs, ys = self.xs, self.ys
        self.points = len(xs)
        if xs:
            try:
                self.min_x, self.max_x, self.min_y, self.max_y = min(xs), max(xs), min(ys), max(ys)
            except TypeError:  # coordinates that do not compare (a family's bug): nothing measured, no warning
                self.points = 0
        return self

    def within(self, bound: float) -> bool:
        return self.points > 0 and self.min_x >= 0 and self.min_y >= 0 and self.max_x <= bound and self.max_y <= bound


def _own_warnings(
    entry: AnnotationTypeEntry,
    target: Any,
    size_image: Size | None,
    size_meta: Size | None,
    info: _TypeInfo,
    skip: Collection[str] = (),
) -> tuple[list[DataWarning], int]:
    """The warnings one valid instance earns on its own, less the rules in ``skip``; and its large-image evidence.

    ``skip``: rules not to check (the adapters pass the rules they have logged
    already). When it holds both rules the drawn coordinates decide
    (``normalized-coordinates``, ``zero-length-segment``), and the type's
    examples tell whether it is scored by distance, no item is drawn (the
    large-image evidence is then 0: only :class:`DatasetLint` reads it, and it
    skips nothing).
    """
    shape = info.shape
    name = entry.name
    found: list[DataWarning] = []
    size = size_image or size_meta
    distance = info.distance
    big = 0
    coordinates, zeros = "normalized-coordinates" not in skip, "zero-length-segment" not in skip
    draw = coordinates or zeros or (distance is None and size is None and "missing-image-size" not in skip)
    if draw:
        extent = _Extent().measure(entry, shape, target) if target is not UNPARSED else _Extent()
        if coordinates:
            big = _coordinate_warnings(extent, size, found)
        if zeros:
            for place, point in extent.zero_segments:
                found.append(
                    DataWarning(
                        "zero-length-segment",
                        f"the segment starts and ends at ({point[0]:g}, {point[1]:g}): a segment of zero length is a point, "
                        "and a segment witnesses a line-like relation; give its two distinct endpoints, or use the point "
                        "type for one location",
                        _VALUE + _suffix(shape, place),
                    )
                )
        if distance is None:
            distance = extent.distance
    if "duplicate-items" not in skip:
        if shape == "set" and isinstance(target, list):
            _duplicates(target, "", "the set", found)
        elif shape == "set_map" and isinstance(target, dict) and all(isinstance(v, list) for v in target.values()):
            for key, values in target.items():
                _duplicates(values, f"[{key!r}]", f"the set of key {key!r}", found)
    if shape in ("map", "set_map") and isinstance(target, dict):
        _map_warnings(name, shape, target, info, found, skip)
    if distance and size_image is None and size_meta is None and "missing-image-size" not in skip:
        found.append(
            DataWarning(
                "missing-image-size",
                f"missing, and metadata holds no image size either: a {name} target is scored by distance, and without "
                f"a size its half-life is a fixed {half_life_px(None):g} px whatever the image (the size policy gives "
                f"{half_life_px((640, 480)):g} px on 640x480, {half_life_px((1920, 1080)):.0f} px on 1920x1080), so the "
                'same answers score differently; add "image_size": [width, height] of the image the coordinates are pixels of',
                "$.image_size",
            )
        )
    if size_image is not None and size_meta is not None and size_image != size_meta and "conflicting-image-size" not in skip:
        found.append(
            DataWarning(
                "conflicting-image-size",
                f"gives the image size {_size_text(size_meta)}, image_size says {_size_text(size_image)}: the scorer's "
                "half-life and validate's frame check use image_size; make the two agree (the coordinates are pixels of one image)",
                "$.metadata",
            )
        )
    return found, big


def _facts(
    data: Mapping[str, Any],
    spec: AnswerTypeSpec | None,  # None: no answer (annotation_only)
    entry: AnnotationTypeEntry,
    target: Any,
    size_image: Size | None,
    size_meta: Size | None,
    registry: Registry,
) -> _Facts:
    info = _type_info(entry, registry)
    shape = info.shape
    found, big = _own_warnings(entry, target, size_image, size_meta, info)
    sizes: tuple[int, ...] | None = None
    if shape in ("set", "sequence") and isinstance(target, list):
        sizes = (len(target),)
    elif shape == "set_map" and isinstance(target, dict) and all(isinstance(v, list) for v in target.values()):
        sizes = tuple(len(v) for v in target.values())
    size = size_image or size_meta
    name = entry.name
    answer = data.get("answer_gt")
    value = answer.get("value") if type(answer) is dict or isinstance(answer, Mapping) else None
    if spec is None:  # no answer: its type named "none" (the contract's), nothing counted
        return _Facts(tuple(found), "none", name, shape, sizes, None, big, size, info.siblings)
    return _Facts(tuple(found), spec.name, name, shape, sizes, _count(spec, value), big, size, info.siblings)


def _coordinate_warnings(extent: _Extent, size: Size | None, found: list[DataWarning]) -> int:
    """``normalized-coordinates`` of one target; returns the large-image evidence for the group rule."""
    if extent.points == 0:
        return 0
    if extent.within(1) and (size is None or max(size) > 2):
        if size is None:
            how = (
                "and the instance gives no image size: normalised coordinates? the contract wants pixels of the image "
                '(docs/contracts.md §5.2): multiply each x by the image width and each y by its height, and add "image_size"'
            )
        else:
            how = (
                f"on a {_size_text(size)} image: normalised coordinates, where the contract wants pixels of the image "
                f"(docs/contracts.md §5.2): multiply each x by {size[0]:g} (the width) and each y by {size[1]:g} (the height)"
            )
        found.append(DataWarning("normalized-coordinates", f"every coordinate of the target is within [0, 1] {how}", _VALUE))
        return 0
    if size is None:
        return 0
    width, height = size
    if extent.within(1000):
        past = []
        if width <= SMALL_IMAGE_PX and extent.max_x > width:
            past.append(f"x up to {extent.max_x:g}")
        if height <= SMALL_IMAGE_PX and extent.max_y > height:
            past.append(f"y up to {extent.max_y:g}")
        if past:
            found.append(
                DataWarning(
                    "normalized-coordinates",
                    f"every coordinate of the target is within [0, 1000] and some reach past the {_size_text(size)} image "
                    f"({', '.join(past)}): coordinates normalised to 0-1000, as some models write them? the contract wants "
                    f"pixels of the image: convert each x to x * {width:g} / 1000 and each y to y * {height:g} / 1000",
                    _VALUE,
                )
            )
            return 0
    if width < BIG_IMAGE_PX and height < BIG_IMAGE_PX:
        return 0
    return 2 if extent.within(1000) else 1


def _duplicates(items: list[Any], key_path: str, where: str, found: list[DataWarning]) -> None:
    first: dict[Any, int] = {}
    repeated: list[tuple[int, int]] = []
    try:
        for n, item in enumerate(items):
            if item in first:
                repeated.append((n, first[item]))
            else:
                first[item] = n
    except TypeError:  # an unhashable parsed item (a third-party family): no duplicate check
        return
    if not repeated:
        return
    total = len(items)
    distinct = total - len(repeated)
    for n, original in repeated[:MAX_DUPLICATES_SHOWN]:
        found.append(
            DataWarning(
                "duplicate-items",
                f"equals item [{original}] of {where}: a set lists each witness once, and with the copies a prediction "
                f"naming each object once scores at most {distinct}/{total} of the annotation reward; remove the copy "
                "(or, for distinct objects, give each its own coordinates)",
                f"{_VALUE}{key_path}[{n}]",
            )
        )
    if len(repeated) > MAX_DUPLICATES_SHOWN:
        found.append(
            DataWarning(
                "duplicate-items",
                f"and {len(repeated) - MAX_DUPLICATES_SHOWN} more items of {where} equal an earlier one",
                f"{_VALUE}{key_path}",
            )
        )


def _map_warnings(
    name: str, shape: str, target: dict[Any, Any], info: _TypeInfo, found: list[DataWarning], skip: Collection[str] = ()
) -> None:
    if len(target) == 1:
        if "single-key-map" in skip:
            return
        (key,) = target
        if shape == "map":
            scalar = info.siblings.get("scalar")
            instead = f"the scalar type {scalar!r}" if scalar else "a scalar type"
            message = (
                f"a {name} with one key ({key!r}): a map binds several roles and is not a cardinality workaround; one "
                f"witness is {instead}: write the value of {key!r} as a {scalar or 'scalar'} annotation (and its contract)"
            )
        else:
            single = info.siblings.get("set")
            instead = f"the set type {single!r}" if single else "a set type"
            message = (
                f"a {name} with one key ({key!r}): a map binds several roles; the witnesses of one role are {instead}: "
                f"write the set of {key!r} as a {single or 'set'} annotation (and its contract)"
            )
        found.append(DataWarning("single-key-map", message, _VALUE))
    elif not target and shape == "map" and "empty-map" not in skip:
        found.append(
            DataWarning(
                "empty-map",
                f"a {name} with no key binds no role, and the empty prediction {{}} earns its full annotation reward; give "
                "each role's witness, or use a set type when there may be no witness (an empty set is a valid zero count)",
                _VALUE,
            )
        )


def parts_warnings(data: Mapping[str, Any], parts: Parts) -> tuple[DataWarning, ...]:
    """The instance warnings of a valid instance from what validation found (for :func:`instance_report`)."""
    facts = _parts_facts(data, parts, get_registry())
    return facts.warnings if facts is not None else ()


def _linted(data: Mapping[str, Any], parts: Parts) -> AnnotationTypeEntry | None:
    """The owner's entry when validation found what the lint reads (a known answer type, the owner, the parsed target)."""
    unknown_answer = parts.answer_spec is None and data.get("answer_gt") is not None
    return None if unknown_answer or parts.target is UNPARSED else parts.entry


def _parts_facts(data: Mapping[str, Any], parts: Parts, registry: Registry) -> _Facts | None:
    entry = _linted(data, parts)
    if entry is None:
        return None
    return _facts(data, parts.answer_spec, entry, parts.target, parts.size_image, parts.size_meta, registry)


def _compiled_facts(instance: CompiledInstance, registry: Registry) -> _Facts:
    return _facts(
        instance.data,
        instance.answer_spec,
        instance.annotation_entry,
        instance.target,
        instance._size_image,
        instance._size_meta,
        registry,
    )


def instance_warnings(data: Any, *, cls: type[TraceInstance] = TrainInstance, skip: Collection[str] = ()) -> list[DataWarning]:
    """Every warning one instance earns on its own (an empty list when it keeps every authoring rule).

    ``data`` is an instance dict as read from the data, or a
    :class:`~trace_tasks.data.CompiledInstance` (not validated again). An
    instance with problems has no warnings: its problems come first
    (:func:`~trace_tasks.data.instance_problems`). The rules that need a
    dataset (a group of instances, the instances file's folder) are
    :class:`DatasetLint`'s. ``skip``: rule ids not to check (their warnings are
    left out, and the work only they need is not done: the trainer adapters,
    which log each rule once per process, skip the rules they have logged).
    """
    registry = get_registry()
    if isinstance(data, CompiledInstance):
        info = _type_info(data.annotation_entry, registry)
        return _own_warnings(data.annotation_entry, data.target, data._size_image, data._size_meta, info, skip)[0]
    problems, parts = check(data, cls, registry)
    owner = _linted(data, parts) if not problems else None
    if owner is None:
        return []
    info = _type_info(owner, registry)
    return _own_warnings(owner, parts.target, parts.size_image, parts.size_meta, info, skip)[0]


# --- a dataset ---


def _image_warning(data: Mapping[str, Any], image_dir: str | None) -> DataWarning | None:
    image = data.get("image")
    if not isinstance(image, str) or not image or "\0" in image:
        return None
    candidates = [image]
    if image_dir is not None and not os.path.isabs(image):
        candidates.append(os.path.join(image_dir, image))
    for candidate in candidates:
        try:
            if os.path.isfile(candidate):
                return None
        except (OSError, ValueError):  # a name the system refuses (too long, undecodable)
            continue
    same = len(candidates) == 1 or os.path.abspath(candidates[1]) == os.path.abspath(image)
    tried = "from the current directory" + ("" if same else f" and from {image_dir}, the instances file's folder")
    return DataWarning(
        "image-missing",
        f"{shown(image, 120)} names no file (tried {tried}): explain --png and report draw on a blank canvas instead of the "
        "image (scoring never reads it); fix the path (relative to the instances file) or leave the field out",
        "$.image",
    )


def _group_value(data: Mapping[str, Any], field: str) -> str:
    """The value of ``field`` (a top-level key, or a dotted path such as ``metadata.task``) as a short text."""
    value: Any = data.get(field, _MISSING)
    if value is _MISSING and "." in field:
        value = data
        for step in field.split("."):
            value = value.get(step, _MISSING) if isinstance(value, Mapping) else _MISSING
            if value is _MISSING:
                break
    if value is _MISSING:
        return f"no {field}"
    try:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = repr(text[:80] + ("..." if len(text) > 80 else ""))
    return f"{field}={text}"


_MISSING: Any = object()


def _lines_text(lines: list[int], total: int) -> str:
    shown = ", ".join(str(n) for n in lines)
    return f"lines {shown}{', ...' if total > len(lines) else ''}"


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


class _Group:
    """Running counts of one group; nothing of an instance is kept but a few line numbers."""

    __slots__ = (
        "agree",
        "annotation_type",
        "answer_type",
        "big",
        "big_example",
        "big_within",
        "counted",
        "label",
        "lines",
        "listed",
        "n",
        "shape",
        "siblings",
        "single",
        "unlisted",
    )

    def __init__(self, label: str | None, facts: _Facts) -> None:
        self.label = label
        self.answer_type = facts.answer_type
        self.annotation_type = facts.annotation_type
        self.shape = facts.shape
        self.siblings = facts.siblings
        self.n = 0
        self.lines: list[int] = []
        self.single = 0
        self.counted = 0
        self.agree = 0
        self.listed: list[tuple[int | None, int, int]] = []
        self.unlisted = 0
        self.big = 0
        self.big_within = 0
        self.big_example: tuple[int | None, Size] | None = None

    def add(self, facts: _Facts, line: int | None) -> None:
        self.n += 1
        if line is not None and len(self.lines) < GROUP_LINES_SHOWN:
            self.lines.append(line)
        sizes = facts.sizes
        if sizes and all(size == 1 for size in sizes):
            self.single += 1
        if self.shape == "set" and sizes is not None and facts.count is not None:
            self.counted += 1
            if facts.count == sizes[0]:
                self.agree += 1
            elif len(self.listed) < MAX_LISTED_PER_GROUP:
                self.listed.append((line, facts.count, sizes[0]))
            else:
                self.unlisted += 1
        if facts.big:
            self.big += 1
            self.big_within += facts.big == 2
            if self.big_example is None and facts.size is not None:
                self.big_example = (line, facts.size)

    def describe(self, count: int) -> str:
        label = f"{self.label}, " if self.label else ""
        plural = "s" * (count != 1)
        return (
            f"instance{plural} with {label}{_article(self.answer_type)} {self.answer_type} answer and "
            f"{_article(self.annotation_type)} {self.annotation_type} annotation"
        )

    def warnings(self) -> Iterator[DataWarning]:
        if self.n < MIN_GROUP_INSTANCES:
            return
        yield from self._count_warnings()
        if self.single == self.n:
            yield self._single_warning()
        if self.big >= MIN_BIG_IMAGE_GROUP and self.big_within == self.big and self.big_example is not None:
            line, size = self.big_example
            at = f", line {line}" if line is not None else ""
            yield DataWarning(
                "normalized-coordinates",
                f"the {self.big} targets of the {self.describe(2)} on images of {BIG_IMAGE_PX} px or more (such as "
                f"{_size_text(size)}{at}) all keep every coordinate within [0, 1000]: coordinates normalised to 0-1000? "
                "the contract wants pixels of the image: convert each x to x * width / 1000 and each y to y * height / 1000",
            )

    def _count_warnings(self) -> Iterator[DataWarning]:
        counted, agree = self.counted, self.agree
        if counted < MIN_GROUP_INSTANCES or 2 * agree <= counted or agree == counted:
            return
        context = (
            f"while {agree:,} of the {counted:,} {self.describe(counted)} answer the size of their set (a counting "
            "task): annotate exactly the counted objects (an empty set for a zero count), or correct the answer"
        )
        for line, count, size in self.listed:
            yield DataWarning(
                "count-mismatch",
                f"the answer is {count} but the {self.annotation_type} target holds {size} item{'s' * (size != 1)}, "
                f"so an answer of {count} with {size} item{'s' * (size != 1)} earns the full reward, {context}",
                "$.answer_gt.value",
                line,
            )
        if self.unlisted:
            yield DataWarning(
                "count-mismatch",
                f"and {self.unlisted:,} more {self.describe(self.unlisted)} whose answer is not the size of their set "
                f"(the first {MAX_LISTED_PER_GROUP} are listed), {context}",
            )

    def _single_warning(self) -> DataWarning:
        where = _lines_text(self.lines, self.n)
        group = f"all {self.n:,} {self.describe(self.n)}"
        if self.shape == "sequence":
            scalar = self.siblings.get("scalar", "the scalar type")
            return DataWarning(
                "single-item-sequence",
                f"{group} have a sequence target of exactly one item ({where}): a sequence is for witnesses whose order "
                f"is part of the task, and one witness has no order; write {scalar!r} with the item itself (and its contract)",
            )
        if self.shape == "set_map":
            kind = self.siblings.get("map", "the map type")
            return DataWarning(
                "single-item-set",
                f"{group} hold exactly one item in every set of their target ({where}): one guaranteed witness per "
                f"role is the map type; write {kind!r} with each role's item itself (and its contract)",
            )
        scalar = self.siblings.get("scalar", "the scalar type")
        return DataWarning(
            "single-item-set",
            f"{group} have a set target of exactly one item ({where}): a set is for a variable number of witnesses "
            f"of one role, and one guaranteed witness is the scalar type; write {scalar!r} with the item itself (and its contract)",
        )


class DatasetLint:
    """The warnings of a dataset, streamed: :meth:`add` each instance, then :meth:`finish`.

    :meth:`add` validates an instance dict and returns its
    :class:`~trace_tasks.data.InstanceReport`: its problems, and for a valid
    instance its warnings (those of :func:`instance_warnings`, and
    ``image-missing`` for an ``image`` that names no file, tried from the
    current directory, then from ``image_dir``, the instances file's folder).
    :meth:`add_compiled` does the same for an instance compiled already.
    :meth:`finish` gives the group rules' warnings (``count-mismatch``,
    ``single-item-set``, ``single-item-sequence``, the large-image
    ``normalized-coordinates``), those naming a line first, in line order.

    Groups are the valid instances with the same answer type and annotation
    type, and with ``group_by`` (a top-level field, or a dotted path such as
    ``metadata.task``) the same value of that field. Each group keeps counts and
    a few line numbers only; at most :data:`MAX_GROUPS` groups are tracked
    (more add a note to :attr:`notes`). ``lines`` counts the instances added,
    ``counts`` the warnings given so far by rule. ``trace_reward_mode``: the
    output mode the dataset is meant for (``None``: not said); an instance
    without ``answer_gt`` is then a problem unless it is ``annotation_only``.
    """

    def __init__(
        self,
        *,
        group_by: str | None = None,
        image_dir: str | os.PathLike[str] | None = None,
        cls: type[TraceInstance] = TrainInstance,
        trace_reward_mode: Any = None,
        prediction_frame: Any = None,
    ) -> None:
        self.mode = resolve_mode(trace_reward_mode) if trace_reward_mode is not None else None
        self.group_by = group_by
        #: The frame the instances will be scored in: a frame other than pixel needs each one's image size.
        self.prediction_frame = resolve_frame(prediction_frame)
        self.image_dir = None if image_dir is None else os.fspath(image_dir)
        self.cls = cls
        self.lines = 0
        self.counts: Counter[str] = Counter()
        self.notes: list[str] = []
        self._groups: dict[tuple[str | None, str, str], _Group] = {}
        self._untracked = 0
        self._last: tuple[CompiledInstance, _Facts] | None = None

    def add(self, data: Any, line: int | None = None) -> InstanceReport:
        """Validate one instance dict and take it into the groups; its report, warnings included."""
        registry = get_registry()
        self.lines += 1
        problems, parts = check(data, self.cls, registry, self.prediction_frame, mode=self.mode)
        warnings: tuple[DataWarning, ...] = ()
        if not problems:
            facts = _parts_facts(data, parts, registry)
            if facts is not None:
                warnings = self._take(data, facts, line)
        return InstanceReport.of(problems, parts, warnings)

    def add_compiled(self, instance: CompiledInstance, line: int | None = None) -> tuple[DataWarning, ...]:
        """Take a compiled (so valid) instance into the groups; its warnings (one instance met again in a row is looked at once)."""
        self.lines += 1
        last = self._last
        if last is not None and last[0] is instance:
            facts = last[1]
        else:
            facts = _compiled_facts(instance, get_registry())
            self._last = (instance, facts)
        return self._take(instance.data, facts, line)

    def _take(self, data: Mapping[str, Any], facts: _Facts, line: int | None) -> tuple[DataWarning, ...]:
        found = facts.warnings
        image = _image_warning(data, self.image_dir) if "image" in data else None
        if image is not None:
            found = (*found, image)
        if line is not None and found:
            found = tuple(attrs.evolve(w, line=line) for w in found)
        for warning in found:
            self.counts[warning.rule] += 1
        label = _group_value(data, self.group_by) if self.group_by else None
        key = (label, facts.answer_type, facts.annotation_type)
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) >= MAX_GROUPS:
                self._untracked += 1
                return found
            group = self._groups[key] = _Group(label, facts)
        group.add(facts, line)
        return found

    def finish(self) -> list[DataWarning]:
        """The group rules' warnings: those naming a line first (in line order), then those about a whole group."""
        found = [warning for group in self._groups.values() for warning in group.warnings()]
        found.sort(key=lambda w: (w.line is None, w.line or 0))
        for warning in found:
            self.counts[warning.rule] += 1
        if self._untracked:
            self.notes.append(
                f"more than {MAX_GROUPS:,} groups: {self._untracked:,} instances of further groups were not "
                "checked by the group rules (group by a field with fewer values)"
            )
        return found


def dataset_warnings(
    instances: Iterable[Any],
    *,
    group_by: str | None = None,
    image_dir: str | os.PathLike[str] | None = None,
    cls: type[TraceInstance] = TrainInstance,
) -> Iterator[DataWarning]:
    """Every warning of a dataset, streamed: each instance's as it comes, then the group rules'.

    ``instances`` is any iterable of instance dicts (a generator reading a file
    is fine: nothing is kept); each warning's ``line`` is the instance's
    position, from 1. Invalid instances give no warning (their problems are
    :func:`~trace_tasks.data.instance_problems`' business). The options are
    :class:`DatasetLint`'s.
    """
    lint = DatasetLint(group_by=group_by, image_dir=image_dir, cls=cls)
    for number, data in enumerate(instances, 1):
        yield from lint.add(data, number).warnings
    yield from lint.finish()


# --- validation with the warnings ----------------------------------------------------------------


@attrs.frozen(slots=True)
class InstanceReport:
    """Validation with what it parsed on the way: every problem, and the target and image size when found.

    ``target`` is the owner's parse of ``annotation_gt.value`` (``None`` when it
    did not parse or its type is unknown); ``annotation_type`` the stripped type
    name; ``image_size`` the size the scorer would find in the instance. Used by
    ``trace-tasks validate`` for its image-frame check. ``warnings`` are the
    instance's own warnings (:func:`~trace_tasks.data.instance_warnings`; none
    when there is a problem).
    """

    problems: tuple[Problem, ...]
    annotation_type: str | None = None
    target: Any = None
    parsed: bool = False
    image_size: Size | None = None
    warnings: tuple[DataWarning, ...] = ()

    @classmethod
    def of(cls, problems: Sequence[Problem], parts: Parts, warnings: Sequence[DataWarning] = ()) -> InstanceReport:
        """The report of a checked instance: its problems, and what :func:`check` parsed on the way."""
        parsed = parts.target is not UNPARSED
        return cls(
            tuple(problems),
            parts.annotation_type if parts.entry is not None else None,
            parts.target if parsed else None,
            parsed,
            parts.size_image or parts.size_meta,
            tuple(warnings),
        )


def instance_report(data: Any, *, cls: type[TraceInstance] = TrainInstance, prediction_frame: Any = None) -> InstanceReport:
    """:func:`instance_problems`, plus the parsed target, the image size and the instance's warnings."""
    problems, parts = check(data, cls, get_registry(), resolve_frame(prediction_frame))
    return InstanceReport.of(problems, parts, () if problems else parts_warnings(data, parts))
