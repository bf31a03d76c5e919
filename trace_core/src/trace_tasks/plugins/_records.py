"""Records that plugins return from their hooks and the core passes to them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from typing import Any

import attrs

from trace_tasks.errors import FamilyDefinitionError
from trace_tasks.plugins._drawables import FLAT_DRAWINGS

#: The collection shapes a type may declare (``AnnotationTypeSpec.shape``); "" is any other.
SHAPES = ("scalar", "set", "sequence", "map", "set_map")


def _non_empty(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise FamilyDefinitionError(f"{attribute.name} must be a non-empty string without surrounding spaces, got {value!r}")


def _ids(value: object) -> tuple[str, ...]:
    return tuple(value)  # type: ignore[arg-type]


def _values(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


def _shape(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in SHAPES and value != "":
        raise FamilyDefinitionError(f"shape must be one of {SHAPES} or '', got {value!r}")


def _drawn_as(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in FLAT_DRAWINGS and value != "":
        raise FamilyDefinitionError(f"drawn_as must be one of {FLAT_DRAWINGS} or '', got {value!r}")


@attrs.frozen(slots=True)
class ImageBlind:
    """What a policy that never looks at the image answers for a type's items, declared by the type's owner.

    Read by ``trace-tasks audit`` (a reward-hacking baseline: what does a
    dataset pay an answer blind to the image?). ``item(width, height)`` is the
    raw item (as a model would write it) that covers the image without seeing
    it: the whole image for a box (``[0, 0, W, H]``), its centre for a point,
    its diagonal for a segment. The audit lays it out in the type's shape
    (:func:`lay_out`) and scores it through the normal scorer.

    ``averaged``: the coordinate-wise mean of the group's target items is an
    item too (items are flat lists of numbers, as long as ``item``'s), so the
    audit's mean-item policies apply (for boxes: the group's mean box).
    """

    item: Callable[[float, float], Any]
    averaged: bool = False


def lay_out(item: Any, shape: str, keys: Iterable[str] = (), copies: int = 1) -> Any:
    """``item`` as a value of a type of ``shape``: itself, a list of ``copies``, or one per key (``None``: no shape)."""
    if shape == "scalar":
        return item
    if shape in ("set", "sequence"):
        return [item] * copies
    if shape == "map":
        return dict.fromkeys(keys, item)
    if shape == "set_map":
        return {key: [item] for key in keys}
    return None


def items_of(value: Any, shape: str) -> list[Any] | None:
    """The items of a parsed ``value`` of ``shape`` in order (each key's, for a set-map): :func:`lay_out` undone.

    None when ``value`` is not of that shape (or the shape is not one of :data:`SHAPES`).
    """
    if shape == "scalar":
        return [value]
    if shape in ("set", "sequence") and isinstance(value, list):
        return value
    if shape == "map" and isinstance(value, dict):
        return list(value.values())
    if shape == "set_map" and isinstance(value, dict) and all(isinstance(items, list) for items in value.values()):
        return list(chain.from_iterable(value.values()))
    return None


@attrs.frozen(slots=True)
class AnnotationTypeSpec:
    """One annotation type a plugin **owns**: it parses values of the type and names its default reward id.

    ``reward_ids`` lists the versions the owner scores itself (at least one; the
    default among them is what ``trace_resolve_reward_id`` answers). Versions
    other plugins add for the type are declared with ``trace_reward_ids``.

    The rest documents the type and feeds ``trace_tasks.family``: ``shape`` is
    the collection shape (one of :data:`SHAPES`, or "" for anything else; a set
    is checked for permutation invariance, a sequence for order sensitivity),
    ``examples`` are raw values (as JSON would give them) that must parse, and
    ``parsed_value`` says in words what Python value the parse hook returns,
    the contract third-party scorers of the type rely on.

    For prompts and constrained decoding (``trace_tasks.response_json_schema``,
    ``trace_tasks.format_instructions``): ``json_schema`` is the JSON Schema
    (draft 2020-12, a JSON-ready mapping) of a value written in the type's
    canonical form, which every value it accepts should parse as (the family
    kit checks that the examples validate and that a wrong shape does not);
    ``None`` leaves the value unconstrained. ``value_format`` says in words,
    for a prompt, how to write a value (``a box [x0, y0, x1, y1] in pixels``);
    ``frame_value_format`` and ``frame_value_format_yx`` say it for a declared
    prediction frame, x first and y first, without a unit (the prompt's frame
    sentence gives the range: ``a box [x0, y0, x1, y1]``, ``a box [y0, x0, y1, x1]``);
    "" (the default): ``value_format`` is used in every frame.

    Declared capabilities (the core asks them, it never guesses from names):
    ``pure_parse`` says the parse hook depends on the value only (no clock, no
    state, no registry) and returns a value no score hook changes, so the
    scoring pipeline may remember a ground truth's parse by its exact content
    (a GRPO group parses one target once, not 8-16 times; the family kit checks
    the declaration: ``pure-parse``). ``image_blind`` is what an image-blind
    policy answers for the type's items (:class:`ImageBlind`; ``None``: the
    audit's whole-image policies do not apply; the kit checks that it parses:
    ``image-blind``). ``drawn_as`` says every parsed item is a flat tuple of
    alternating x and y coordinates that the owner's draw hook draws as exactly
    :func:`~trace_tasks.family.flat_drawing` of it: ``"box"`` (``(x0, y0, x1, y1)``
    as one ``Box``), ``"point"`` (``(x, y)`` as one ``Point``) or ``"polyline"``
    (the ``Polyline`` through its pairs); the dataset lint then reads a target's
    coordinates from its items instead of drawing each one (the same warnings,
    cheaper: validate, and every label the reward server meets).
    "" (the default): the lint draws each item. The kit checks the declaration
    against the draw hook: ``drawn-as``.
    """

    name: str = attrs.field(validator=_non_empty)
    reward_ids: tuple[str, ...] = attrs.field(converter=_ids)
    description: str = ""
    shape: str = attrs.field(default="", validator=_shape)
    examples: tuple[Any, ...] = attrs.field(default=(), converter=tuple)
    parsed_value: str = ""
    json_schema: Mapping[str, Any] | None = None
    value_format: str = ""
    pure_parse: bool = False
    image_blind: ImageBlind | None = None
    drawn_as: str = attrs.field(default="", validator=_drawn_as)
    frame_value_format: str = ""
    frame_value_format_yx: str = ""

    @reward_ids.validator
    def _check_ids(self, attribute: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
        if not value:
            raise FamilyDefinitionError(f"annotation type {self.name!r} declares no reward ids")
        for rid in value:
            _non_empty(self, attribute, rid)


def _triples(value: Iterable[tuple[Any, Any, float]]) -> tuple[tuple[Any, Any, float], ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class RewardIdSpec:
    """A reward version a plugin scores for an annotation type, which another plugin may own.

    Returned by ``trace_reward_ids``: this is how a third party adds
    ``bbox_giou_v1`` for ``bbox`` without touching the bbox family. The scorer
    receives the values the type's owner parsed. Declaring an id never makes it
    current: only the owner's default or the user's pin does.

    A version whose **prediction** is written in another form than the type's
    value (a click ``[x, y]`` scored against a ``bbox`` target) declares that
    form: ``parse_prediction`` parses one raw predicted value (raising
    ``AnnotationParseError`` on a wrong shape, like a parse hook), and the
    scorer then receives its parse as the prediction and the owner's parse as
    the target; ``prediction_form`` says the form in words
    (``frame_prediction_form`` and ``frame_prediction_form_yx`` in a declared
    prediction frame, x first and y first, without a unit, as
    ``AnnotationTypeSpec.frame_value_format``) and ``prediction_examples`` are ``(prediction, target, reward)`` triples of raw
    values the family test kit parses and scores (the reward to within 1e-12).
    Without ``parse_prediction`` the prediction is the owner's parse, as the
    target is.
    """

    reward_id: str = attrs.field(validator=_non_empty)
    annotation_type: str = attrs.field(validator=_non_empty)
    description: str = ""
    parse_prediction: Callable[[Any], Any] | None = None
    prediction_form: str = ""
    prediction_examples: tuple[tuple[Any, Any, float], ...] = attrs.field(default=(), converter=_triples)
    frame_prediction_form: str = ""
    frame_prediction_form_yx: str = ""


@attrs.frozen(slots=True)
class AnswerTypeSpec:
    """A registered answer type.

    ``reads_json_strings``: a string prediction that is a JSON literal (other than
    ``null``) is read as that literal before comparison. True for every built-in
    type except ``string``, whose answers are compared as written.

    ``check_value``: checks a ground-truth value (``answer_gt.value``) when an
    instance is validated; returns what is wrong with it (a message saying what
    to write instead) or ``None`` when the value is a usable target. ``None``
    (the default) accepts any value.

    ``json_schema``: the JSON Schema (draft 2020-12) of an answer written in
    the type's canonical form, for ``trace_tasks.response_json_schema``
    (``None``: unconstrained); ``examples``: answers in that form, the first of
    which ``trace_tasks.format_instructions`` shows in its example object.
    """

    name: str = attrs.field(validator=_non_empty)
    reads_json_strings: bool = True
    description: str = ""
    check_value: Callable[[Any], str | None] | None = None
    json_schema: Mapping[str, Any] | None = None
    examples: tuple[Any, ...] = attrs.field(default=(), converter=_values)


@attrs.frozen(slots=True)
class NativeFormat:
    """A model-native spelling of an annotation value, recognised by the type's owner.

    Returned by ``trace_native_annotation`` for a predicted value that did not
    parse: ``found`` names the shape found (``'[{"bbox_2d": [x0, y0, x1, y1],
    "label": ...}] (Qwen-VL grounding output)'``), ``expected`` the shape the
    contract expects (``'[x0, y0, x1, y1]'``). ``converted`` is the value
    rewritten in the contract's shape when the owner can say what it would be
    (tools score it to show what the reading would have earned; the reward
    never does), else ``None``.
    """

    found: str
    expected: str
    converted: Any = None


@attrs.frozen(slots=True)
class ScoringContext:
    """What a score hook may need beyond the two values.

    ``half_life_px`` is already resolved by the core: the caller's
    ``point_half_life_px``, else the image-diagonal policy, else 32 px.
    ``image_size`` is ``(width, height)`` when one was found, for information only:
    coordinates are never transformed.
    """

    half_life_px: float
    image_size: tuple[float, float] | None = None


@attrs.frozen(slots=True)
class AnnotationScore:
    """A reward in [0, 1] and the numeric diagnostics reported beside it, in order."""

    reward: float
    diagnostics: Mapping[str, float] = attrs.field(factory=dict)


@attrs.frozen(slots=True)
class ExplainedItem:
    """One item of a parsed value as an explanation reports it.

    ``label`` names it (``#0``, ``left``, ``left#1``; "" for a scalar type's
    value) and ``value`` is the item as the owner parsed it, which the owner's
    ``trace_draw_annotation`` accepts.
    """

    label: str
    value: Any


@attrs.frozen(slots=True)
class MatchedPair:
    """A predicted item, the target it was assigned to, and their similarity (IoU, soft distance...)."""

    prediction: ExplainedItem
    target: ExplainedItem
    similarity: float


@attrs.frozen(slots=True)
class AnnotationExplanation:
    """How a reward was reached: the score and the assignment the scorer actually used.

    Returned by ``trace_explain_annotation``. ``method`` says how items were
    paired ("one pair", "Hungarian assignment", "index-aligned", "by key",
    "by key, then Hungarian assignment"), ``metric`` what a pair's similarity
    is (``iou``, ``similarity``...), and ``formula`` the arithmetic of the
    reward in words (``(0.76 + 0.34) / max(2, 3)``). Unmatched items on either
    side and missing or extra map keys are listed apart.
    """

    score: AnnotationScore
    method: str
    metric: str
    pairs: tuple[MatchedPair, ...] = ()
    unmatched_predictions: tuple[ExplainedItem, ...] = ()
    unmatched_targets: tuple[ExplainedItem, ...] = ()
    missing_keys: tuple[str, ...] = ()
    extra_keys: tuple[str, ...] = ()
    formula: str = ""
