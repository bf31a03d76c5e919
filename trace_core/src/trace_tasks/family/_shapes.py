"""Families made of one primitive: :class:`ShapeFamily` and :class:`ShapeRewards`.

A family supplies a :class:`~trace_tasks.family.Primitive` (how to parse
one item, how similar two items are, how to draw one); these classes turn it
into every hook of the plugin contract for the five collection shapes
(scalar, set, sequence, map, set_map), so all families match sets, align
sequences and penalise missing or extra keys the same way, and explain and
draw their scores for free.

* :class:`ShapeFamily` owns annotation types (parse, default reward id, draw)
  and scores its own reward ids; an entry point may name the instance itself.
  From the primitive it also derives each type's JSON Schema and prompt
  wording (``AnnotationTypeSpec.json_schema``, ``value_format``), recognises
  model-native spellings of a value that does not parse
  (``trace_native_annotation``) and scales parsed values for the tools'
  normalised-coordinates check (``trace_scale_annotation``), and converts a
  prediction written in a declared coordinate frame into pixels
  (``trace_frame_annotation``) when the primitive can scale and swap its items.
  The primitive's declared capabilities (``pure_parse``, ``image_blind``, ``drawn_as``) become each type's.
* :class:`ShapeRewards` adds reward versions for types another plugin owns
  (``bbox_giou_v1`` for ``bbox``), scoring the owner's parsed values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

import attrs

from trace_tasks.errors import AnnotationParseError, FamilyDefinitionError
from trace_tasks.family._distance import HALF_LIFE_KEY, half_life_diagnostic
from trace_tasks.family._parsing import make_parser
from trace_tasks.family._primitives import Primitive
from trace_tasks.family._scoring import make_explainer, make_scorer
from trace_tasks.plugins import (
    ROLE_KEY_SCHEMA,
    SHAPES,
    AnnotationExplanation,
    AnnotationScore,
    AnnotationTypeSpec,
    Drawable,
    NativeFormat,
    RewardIdSpec,
    ScoringContext,
    hookimpl,
)
from trace_tasks.reading import from_numpy, is_mapping, read_annotation_string

__all__ = ["ShapeFamily", "ShapeRewards", "TypeRow"]

#: ``(shape, reward id)`` or ``(shape, (default id, other id, ...))``.
TypeRow = tuple[str, Union[str, Sequence[str]]]
#: A flat_xy item's form (``[x0, y0, x1, y1]``) written y first (``[y0, x0, y1, x1]``).
_SWAP_XY = str.maketrans("xyXY", "yxYX")


def _check_shape(shape: str) -> str:
    if shape not in SHAPES:
        raise FamilyDefinitionError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    return shape


class _ShapeScoring:
    """Score and explain hooks for reward ids that are shapes over a primitive."""

    def __init__(self, rewards: Mapping[str, tuple[str, str, Primitive]]) -> None:
        #: reward id -> (annotation type, shape, primitive)
        self.rewards = dict(rewards)
        self.scorers = {rid: make_scorer(_check_shape(shape), prim) for rid, (_, shape, prim) in self.rewards.items()}
        self.explainers = {rid: make_explainer(shape, prim, self.scorers[rid]) for rid, (_, shape, prim) in self.rewards.items()}
        self._made = dict(self.scorers)

    def native_plan(self, reward_id: str, score: Any) -> tuple[str, str, str, str] | None:
        """``(shape, kernel, mean key, half-life key)`` when ``score`` (a registry's score callable) is this
        family's own scoring of ``reward_id`` over a primitive that declares a native kernel
        (``Primitive.native``), else None. The half-life key is ``""`` unless the primitive reports the
        core's :func:`~trace_tasks.family.half_life_diagnostic`.

        The scoring pipeline's native path asks this once per reward id: a subclass that overrides the score
        hook, a scorer replaced after construction, or a primitive with other extra diagnostics keeps Python scoring.
        """
        if (
            getattr(score, "__self__", None) is not self
            or getattr(score, "__func__", None) is not _ShapeScoring.trace_score_annotation
        ):
            return None
        row = self.rewards.get(reward_id)
        if row is None or self.scorers.get(reward_id) is not self._made.get(reward_id):
            return None
        _, shape, prim = row
        if prim.native is None:
            return None
        if prim.extra_diagnostics is None:
            extra = ""
        elif prim.extra_diagnostics is half_life_diagnostic:
            extra = HALF_LIFE_KEY
        else:
            return None
        return shape, prim.native, f"annotation_assigned_{prim.metric}_mean", extra

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationScore | None:
        scorer = self.scorers.get(reward_id)
        return scorer(prediction, target, context) if scorer is not None else None

    @hookimpl
    def trace_explain_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationExplanation | None:
        explainer = self.explainers.get(reward_id)
        return explainer(prediction, target, context) if explainer is not None else None


class ShapeFamily(_ShapeScoring):
    """Every hook of a family whose annotation types are shapes over one primitive.

    ``types`` maps each annotation type to ``(shape, reward_id)``, or to
    ``(shape, (default_id, other_id, ...))`` to offer several versions with the
    first as the default. ``versions`` maps a reward id to the primitive that
    scores it when that is not ``primitive`` (a v1 with another similarity).
    An entry point may name the instance (``bbox = "trace_plugins_bbox.plugin:family"``).
    """

    def __init__(
        self, primitive: Primitive, types: Mapping[str, TypeRow], *, versions: Mapping[str, Primitive] | None = None
    ) -> None:
        self.primitive = primitive
        versions = dict(versions or {})
        #: annotation type -> (shape, reward ids, default first)
        self.types: dict[str, tuple[str, tuple[str, ...]]] = {}
        for name, (shape, ids) in types.items():
            self.types[name] = (_check_shape(shape), (ids,) if isinstance(ids, str) else tuple(ids))
        unknown = set(versions) - {rid for _, ids in self.types.values() for rid in ids}
        if unknown:
            raise FamilyDefinitionError(f"versions names reward ids no type offers: {sorted(unknown)}")
        super().__init__(
            {rid: (name, shape, versions.get(rid, primitive)) for name, (shape, ids) in self.types.items() for rid in ids}
        )
        self.parsers = {name: make_parser(shape, primitive) for name, (shape, _) in self.types.items()}
        self._drawer = primitive.drawer  # ``draw``, or the declared ``drawn_as`` drawing: made once
        # A hook only when the primitive can convert: a family without it makes a declared frame an OptionError.
        self.trace_frame_annotation = self._frame_hook()
        #: (annotation type, reading) -> the parser of values whose items are written that way
        self.reread_parsers = {
            (name, reading): make_parser(shape, _rewritten(primitive, rewrite))
            for name, (shape, _) in self.types.items()
            for reading, rewrite in primitive.rereadings.items()
        }

    def _kit_draws(self) -> bool:
        return type(self).trace_draw_annotation is ShapeFamily.trace_draw_annotation

    def shape_of(self, annotation_type: str) -> str:
        return self.types[annotation_type][0]

    def _examples(self, shape: str) -> tuple[Any, ...]:
        items = list(self.primitive.examples)
        if not items:
            return ()
        if shape == "scalar":
            return tuple(items)
        if shape in ("set", "sequence"):
            return (items,)
        if shape == "map":
            return ({f"k{i}": item for i, item in enumerate(items)},)
        return ({"a": items, "b": items[:1]},)

    def _parsed_value(self, shape: str) -> str:
        item = self.primitive.parsed_item or f"one parsed {self.primitive.name}"
        return {
            "scalar": item,
            "set": f"list of {item}",
            "sequence": f"list of {item}, in order",
            "map": f"dict of stripped str key -> {item}",
            "set_map": f"dict of stripped str key -> list of {item}",
        }[shape]

    def _json_schema(self, shape: str) -> dict[str, Any] | None:
        """The JSON Schema of a value of ``shape`` over the primitive's item schema (``None`` when there is none)."""
        item = (
            dict(self.primitive.json_schema)
            if self.primitive.json_schema is not None
            else infer_item_schema(self.primitive.examples)
        )
        if item is None:
            return None
        if shape == "scalar":
            return item
        if shape in ("set", "sequence"):
            return {"type": "array", "items": item}
        # Keys as the parser takes them (``parsing.parse_map``): stripped, non-empty, unique after
        # stripping. A key without surrounding whitespace is its own stripped form, so two such
        # keys never collide; the schema must not let a constrained decoder write one that fails.
        if shape == "map":
            return {"type": "object", "propertyNames": dict(ROLE_KEY_SCHEMA), "additionalProperties": item}
        return {
            "type": "object",
            "propertyNames": dict(ROLE_KEY_SCHEMA),
            "additionalProperties": {"type": "array", "items": item},
        }

    def _item_words(self, frame: str = "") -> str:
        """One item in words: its form and what its numbers are (pixels); in a declared frame (``frame`` "xy" or
        "yx") its form alone, the frame's axis order, as the prompt's frame sentence gives the unit and range."""
        prim = self.primitive
        form = prim.item_form or f"one {prim.name}"
        if frame == "yx":  # a flat_xy item's form names its x and y coordinates: written y first, they swap
            return form.translate(_SWAP_XY)
        if frame:
            return form
        return f"{form} ({prim.item_help})" if prim.item_help else form

    def _frame_value_formats(self, shape: str) -> tuple[str, str]:
        """``(x first, y first)`` words for a value in a declared frame; ("", "") when the family cannot convert one."""
        prim = self.primitive
        if not (prim.flat_xy and prim.item_form):
            return "", ""
        return self._value_format(shape, "xy"), self._value_format(shape, "yx")

    def _value_format(self, shape: str, frame: str = "") -> str:
        item, name = self._item_words(frame), self.primitive.name
        return {
            "scalar": f"one {name} {item}",
            "set": f"a list of {name} items, each {item}, one per witness, in any order ([] when there is none)",
            "sequence": f"a list of {name} items in the order the task asks for, each {item}",
            "map": f"an object mapping each role key the task names to one {name} {item}",
            "set_map": f"an object mapping each role key the task names to a list of {name} items, each {item}",
        }[shape]

    def expected_form(self, shape: str) -> str:
        """A value of ``shape`` written literally, as diagnostics name it (``[[x0, y0, x1, y1], ...]``)."""
        form = self.primitive.item_form or f"<{self.primitive.name}>"
        return {
            "scalar": form,
            "set": f"[{form}, ...]",
            "sequence": f"[{form}, ...] (in order)",
            "map": f'{{"<role>": {form}, ...}}',
            "set_map": f'{{"<role>": [{form}, ...], ...}}',
        }[shape]

    @hookimpl
    def trace_annotation_types(self) -> list[AnnotationTypeSpec]:
        return [
            AnnotationTypeSpec(
                name,
                ids,
                shape=shape,
                examples=self._examples(shape),
                parsed_value=self._parsed_value(shape),
                json_schema=self._json_schema(shape),
                value_format=self._value_format(shape),
                frame_value_format=self._frame_value_formats(shape)[0],
                frame_value_format_yx=self._frame_value_formats(shape)[1],
                # The kit's collection parsers are pure: the primitive's item parse decides.
                pure_parse=self.primitive.pure_parse and self.primitive.parse_item is not None,
                image_blind=self.primitive.image_blind,
                # Declared only while the kit's own hook draws (a subclass may draw otherwise).
                drawn_as=self.primitive.drawn_as if self._kit_draws() else "",
            )
            for name, (shape, ids) in self.types.items()
        ]

    @hookimpl
    def trace_native_annotation(self, annotation_type: str, value: object) -> NativeFormat | None:
        row = self.types.get(annotation_type)
        if row is None:
            return None
        return _native(self, row[0], value)

    @hookimpl
    def trace_scale_annotation(self, annotation_type: str, value: Any, scale_x: float, scale_y: float) -> Any:
        row = self.types.get(annotation_type)
        scale = self.primitive.scaler
        if row is None or scale is None:
            return None
        return _each_item(row[0], value, lambda item: scale(item, scale_x, scale_y))

    def native_frame(self, frame: Any) -> bool:
        """Whether ``frame`` (a registry entry's ``trace_frame_annotation``) is this family's own conversion of
        flat ``(x, y, ...)`` items (:func:`~trace_tasks.family.scale_xy` after
        :func:`~trace_tasks.family.swap_xy` for a y-first frame), which the native path restates for the
        kernels of :meth:`native_plan`; False for a primitive's own ``scale`` or ``swap`` or another hook.
        """
        prim = self.primitive
        return (
            frame is not None
            and frame is self.trace_frame_annotation
            and prim.flat_xy
            and prim.scale is None
            and prim.swap is None
        )

    def _frame_hook(self) -> Callable[..., Any] | None:
        """``trace_frame_annotation`` when the primitive can scale and swap its items, else ``None`` (no hook)."""
        scale, swap = self.primitive.scaler, self.primitive.swapper
        if scale is None or swap is None:
            return None
        types = self.types

        def trace_frame_annotation(annotation_type: str, value: Any, scale_x: float, scale_y: float, y_first: bool) -> Any:
            row = types.get(annotation_type)
            if row is None:
                return None
            if y_first:
                return _each_item(row[0], value, lambda item: scale(swap(item), scale_x, scale_y))
            if row[0] in ("set", "sequence"):  # the frequent collections: no call per item beyond the scale
                return [scale(item, scale_x, scale_y) for item in value]
            return _each_item(row[0], value, lambda item: scale(item, scale_x, scale_y))

        return hookimpl(trace_frame_annotation)

    @hookimpl
    def trace_reread_annotation(self, annotation_type: str, value: Any) -> dict[str, Any] | None:
        if annotation_type not in self.types:
            return None
        found: dict[str, Any] = {}
        for reading in self.primitive.rereadings:
            try:
                found[reading] = self.reread_parsers[annotation_type, reading](value)
            except AnnotationParseError:
                continue
        return found

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        row = self.types.get(annotation_type)
        return row[1][0] if row is not None else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> Any:
        parser = self.parsers.get(annotation_type)
        return parser(value) if parser is not None else None

    @hookimpl
    def trace_draw_annotation(self, annotation_type: str, item: Any) -> Sequence[Drawable] | None:
        drawer = self._drawer
        if drawer is None or annotation_type not in self.types:
            return None
        return list(drawer(item))


def _rewritten(primitive: Primitive, rewrite: Callable[[Any], Any]) -> Primitive:
    """``primitive`` whose items are read through ``rewrite`` first (a reading of ``Primitive.rereadings``)."""
    parse_item = primitive.parse_item
    assert parse_item is not None, "a primitive with rereadings parses its items"

    def parse(raw: Any) -> Any:
        try:
            canonical = rewrite(raw)
        except (TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:  # not written this way
            raise AnnotationParseError(f"not a rewritable item: {exc}") from None
        return parse_item(canonical)

    return attrs.evolve(primitive, parse_item=parse, native=None)  # another parse: not the kernel's


def _each_item(shape: str, value: Any, change: Any) -> Any:
    """A parsed value of ``shape`` with ``change`` applied to each item."""
    if shape == "scalar":
        return change(value)
    if shape in ("set", "sequence"):
        return [change(item) for item in value]
    if shape == "map":
        return {key: change(item) for key, item in value.items()}
    return {key: [change(item) for item in items] for key, items in value.items()}


class ShapeRewards(_ShapeScoring):
    """Reward versions for annotation types another plugin owns, as shapes over a primitive.

    ``rewards`` maps each new reward id to ``(annotation_type, shape)``; the
    primitive needs only ``similarity``, ``matrix`` and ``metric``: its items
    are the owner's parsed items (see the parsed-value table in
    ``docs/plugins.md``). The ids are declared through ``trace_reward_ids`` and
    become current only when the user pins them.
    """

    def __init__(self, primitive: Primitive, rewards: Mapping[str, tuple[str, str]], *, description: str = "") -> None:
        self.primitive = primitive
        self.description = description
        super().__init__({rid: (name, shape, primitive) for rid, (name, shape) in rewards.items()})

    @hookimpl
    def trace_reward_ids(self) -> list[RewardIdSpec]:
        return [RewardIdSpec(rid, name, self.description) for rid, (name, _, _) in self.rewards.items()]


# --- JSON Schema of one item, inferred from the examples ------------------------------------


def _numeric_structure(value: Any) -> Any:
    """``"n"`` for a number, ``(length, inner)`` for a non-empty array of one structure, else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return "n"
    if isinstance(value, (list, tuple)) and value:
        inner = {repr(_numeric_structure(item)) for item in value}
        first = _numeric_structure(value[0])
        return (len(value), first) if len(inner) == 1 and first is not None else None
    return None


def _structure_schema(structure: Any) -> dict[str, Any]:
    if structure == "n":
        return {"type": "number"}
    length, inner = structure
    return {"type": "array", "items": _structure_schema(inner), "minItems": length, "maxItems": length}


def infer_item_schema(examples: Sequence[Any]) -> dict[str, Any] | None:
    """The JSON Schema of an item whose examples are all arrays of one fixed numeric structure, else ``None``.

    ``[10, 20, 110, 220]`` gives an array of exactly 4 numbers; ``[[10, 10], [200, 40]]``
    an array of 2 arrays of 2 numbers. Anything else (no examples, mixed sizes,
    mappings, strings) has no inferred schema: declare ``Primitive.json_schema``.
    """
    structures = {repr(_numeric_structure(example)) for example in examples}
    if len(structures) != 1:
        return None
    structure = _numeric_structure(examples[0])
    if not isinstance(structure, tuple):
        return None
    return _structure_schema(structure)


# --- model-native spellings of a value that did not parse -------------------------------------

#: The key of a label beside an item in model-native lists (Qwen-VL's grounding output).
LABEL_KEY = "label"


def _item(prim: Primitive, raw: Any) -> bool:
    parse_item = prim.parse_item
    if parse_item is None:
        return False
    try:
        parse_item(raw)
    except AnnotationParseError:
        return False
    return True


def _under_native_key(prim: Primitive, value: Any) -> tuple[str, Any] | None:
    """``(key, item)`` when ``value`` is a mapping holding one item under a native key."""
    if not is_mapping(value):
        return None
    for key in prim.native_keys:
        if key in value and _item(prim, from_numpy(value[key])):
            return key, from_numpy(value[key])
    return None


def _labels_as_keys(labels: list[Any]) -> bool:
    stripped = [label.strip() for label in labels if isinstance(label, str)]
    return len(stripped) == len(labels) and all(stripped) and len(set(stripped)) == len(stripped)


def _native(family: ShapeFamily, shape: str, value: Any) -> NativeFormat | None:
    """What a model wrote instead of a value of ``shape``, when it is a known native spelling."""
    prim = family.primitive
    if isinstance(value, str):
        value, ok = read_annotation_string(value)
        if not ok:
            return None
    value = from_numpy(value)
    expected = family.expected_form(shape)
    form = prim.item_form or f"<{prim.name}>"
    if isinstance(value, (list, tuple)) and value and all(is_mapping(item) for item in value):
        found = [_under_native_key(prim, item) for item in value]
        if all(found):
            pairs = [pair for pair in found if pair is not None]
            key = pairs[0][0]
            items = [item for _, item in pairs]
            labels = [item.get(LABEL_KEY) for item in value]
            label = ', "label": ...' if any(LABEL_KEY in item for item in value) else ""
            converted: Any = None
            if shape == "scalar" and len(items) == 1:
                converted = items[0]
            elif shape in ("set", "sequence"):
                converted = items
            elif shape == "map" and _labels_as_keys(labels):
                converted = {label_.strip(): item for label_, item in zip(labels, items, strict=True)}
            elif shape == "set_map" and all(isinstance(label_, str) and label_.strip() for label_ in labels):
                groups: dict[str, list[Any]] = {}
                for label_, item in zip(labels, items, strict=True):
                    groups.setdefault(label_.strip(), []).append(item)
                converted = groups
            return NativeFormat(
                f'[{{"{key}": {form}{label}}}, ...] (a list of objects, each holding one {prim.name} under "{key}", '
                "as Qwen-VL grounding output writes it)",
                expected,
                converted,
            )
    pair = _under_native_key(prim, value)
    if pair is not None:
        key, item = pair
        converted = item if shape == "scalar" else [item] if shape in ("set", "sequence") else None
        return NativeFormat(f'{{"{key}": {form}, ...}} (one {prim.name} under the key "{key}")', expected, converted)
    if shape == "scalar" and isinstance(value, (list, tuple)) and len(value) == 1 and _item(prim, from_numpy(value[0])):
        return NativeFormat(f"[{form}] (a list holding the one {prim.name})", expected, from_numpy(value[0]))
    return None
