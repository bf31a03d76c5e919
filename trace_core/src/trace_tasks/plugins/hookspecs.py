# Hook specs are signatures with docstrings only; pluggy never calls their bodies. Said here, beside
# them, so that any mypy run over this module (with or without the workspace's config) knows it.
# mypy: disable-error-code="empty-body"
"""Hook specifications of trace_tasks (the plugin contract, version 2), in three phases.

* **load time**: ``trace_annotation_types``, ``trace_reward_ids``,
  ``trace_answer_types``, ``trace_resolve_reward_id``; asked once when the
  registry is built;
* **per response**: ``trace_parse_annotation``, ``trace_score_annotation``;
  called by the scoring pipeline on the responsible plugin only; and the
  optional ``trace_native_annotation``, asked only after a prediction failed
  to parse;
* **declared frames**: the optional ``trace_frame_annotation``, asked per
  response only when the caller declares a ``prediction_frame`` other than
  ``pixel``;
* **tools**: ``trace_explain_annotation``, ``trace_draw_annotation``,
  ``trace_scale_annotation``, ``trace_reread_annotation``; optional, asked by
  ``trace-tasks explain``, reports and frame checks.

A plugin is a module or object exposing functions marked with
``trace_tasks.hookimpl`` and named like the specs below; it is found through an
entry point in the ``trace_tasks`` group (the value may name a module or an
object in it, ``pkg.plugin:family``).

Ownership, in one paragraph: an annotation type has exactly one **owner**, the
plugin that declares it in ``trace_annotation_types``; the owner parses values
of the type, draws them, and names the type's *default* reward id. A reward id
is declared by whichever plugin scores it, for any type (its own types through
``AnnotationTypeSpec.reward_ids``, anyone's through ``trace_reward_ids``), and
its scorer receives the owner's parsed values. Which id is *current* is the
owner's default unless the user pins another (``TRACE_TASKS_REWARD_IDS`` or
:func:`trace_tasks.pin_reward_id`); installing a plugin never changes it.

Every hook is a real pluggy hook: ``registry.manager.hook.<name>(...)`` returns
the responsible plugin's answer, because every other plugin returns ``None``
(the per-call hooks are ``firstresult``). The registry asks the collecting and
resolving hooks once, when it is built, checks the answers, and keeps direct
references to each responsible implementation, so scoring a response is a dict
lookup and one call, never a broadcast.
"""

from __future__ import annotations

from collections.abc import Sequence

import pluggy

from trace_tasks.plugins._drawables import Drawable
from trace_tasks.plugins._markers import PROJECT_NAME
from trace_tasks.plugins._records import (
    AnnotationExplanation,
    AnnotationScore,
    AnnotationTypeSpec,
    AnswerTypeSpec,
    NativeFormat,
    RewardIdSpec,
    ScoringContext,
)

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


# -------------------------------------------------------------------------
# load time: asked once, when the registry is built; answers are checked and indexed
# -------------------------------------------------------------------------


@hookspec
def trace_annotation_types() -> Sequence[AnnotationTypeSpec]:
    """Declare the annotation types this plugin owns, with the reward ids it scores for them.

    Called by the registry once, when it is built, on every plugin; all results
    are collected. Two plugins declaring one type is a load error. An owner must
    implement ``trace_parse_annotation`` and ``trace_resolve_reward_id``, and
    ``trace_score_annotation`` for the ids it lists.

    :returns: the :class:`~trace_tasks.family.AnnotationTypeSpec` of every
        type this plugin owns (an empty sequence, or ``None``, when it owns
        none); each spec may declare the capabilities ``pure_parse`` (the
        pipeline's target memo) and ``image_blind`` (``trace-tasks audit``).
    """


@hookspec
def trace_reward_ids() -> Sequence[RewardIdSpec]:
    """Declare reward versions this plugin scores for types it may not own.

    Called by the registry once, on every plugin; all results are collected.
    This is how a third party adds ``bbox_giou_v1`` for ``bbox``. A reward id
    declared twice (here or in ``trace_annotation_types``) is a load error; an
    id for a type no installed plugin owns is listed by ``trace-tasks plugins``
    as a problem and cannot be pinned.

    :returns: a :class:`~trace_tasks.family.RewardIdSpec` per reward version
        this plugin scores for a type declared by ``trace_annotation_types``
        (its own or another plugin's); empty or ``None`` for none.
    """


@hookspec
def trace_answer_types() -> Sequence[AnswerTypeSpec]:
    """Declare answer types (``integer``, ``matrix``, ...) scored by ``answer_exact_match_v0``.

    Called once at load on every plugin; the results are collected. The core
    registers its eight built-in types through this hook too.

    :returns: the :class:`~trace_tasks.AnswerTypeSpec` of every answer type
        this plugin adds; empty or ``None`` for none.
    """


@hookspec(firstresult=True)
def trace_resolve_reward_id(annotation_type: str) -> str | None:
    """Return the **default** reward id of ``annotation_type`` if this plugin owns it, else ``None``.

    Called by the registry once per type when it is built, on each plugin
    separately: a non-owner returning anything but ``None`` is a load error,
    so no plugin can change another's current id. The id must be declared for
    the type. The registry caches the answer; the user's pin, if any, then
    takes precedence (the hook does not know about pins).

    :param annotation_type: a type some plugin declared in ``trace_annotation_types``.
    :returns: the type's default reward id (one declared for it) when this
        plugin owns the type, else ``None``.
    """


# -------------------------------------------------------------------------
# per response: called on the responsible plugin only, through a direct reference
# -------------------------------------------------------------------------


@hookspec(firstresult=True)
def trace_parse_annotation(annotation_type: str, value: object) -> object:
    """Turn a raw value (model output or ``annotation_gt.value``) into the type's parsed value.

    Called per response on the type's owner only (the registry keeps a direct
    reference), twice: target and prediction. ``value`` is whatever JSON or the
    literal reader produced: any type, possibly hostile. Return the parsed value
    (never ``None``) documented for the type; raise
    :class:`trace_tasks.AnnotationParseError` when the value does not have the
    declared shape (any other exception also fails the response, but is a bug).
    Return ``None`` for a type you do not own.

    :param annotation_type: the type whose owner is called (you, when you are asked directly).
    :param value: the raw value: ``annotation_gt.value`` (target) or the
        response's ``annotation`` (prediction), hostile input.
    :returns: the parsed value, never ``None`` for a type you own; ``None`` for
        a type you do not own.
    :raises trace_tasks.AnnotationParseError: when ``value`` is not a value of the type.
    """


@hookspec(firstresult=True)
def trace_score_annotation(reward_id: str, prediction: object, target: object, context: ScoringContext) -> AnnotationScore | None:
    """Score a parsed prediction against a parsed target under ``reward_id``.

    Called per response on the plugin that declared ``reward_id`` (a direct
    reference), with two values returned by the type owner's parse hook.
    Return an :class:`~trace_tasks.family.AnnotationScore`: a finite reward in
    [0, 1] and finite ``annotation_*`` diagnostics in reporting order. Anything
    else is a plugin bug: the response counts as an annotation failure and a
    WARNING names the plugin once. Return ``None`` for an id you do not score.

    :param reward_id: the reward id to score under (current for the type, or pinned).
    :param prediction: the owner's parse of the response's annotation.
    :param target: the owner's parse of ``annotation_gt.value``.
    :param context: the image size and the resolved point half-life, from the core.
    :returns: the :class:`~trace_tasks.family.AnnotationScore`, or ``None`` for an
        id you do not score.
    """


@hookspec(firstresult=True)
def trace_native_annotation(annotation_type: str, value: object) -> NativeFormat | None:
    """Recognise a model-native spelling of a predicted value that did not parse as ``annotation_type``.

    Optional capability, called by the scoring pipeline on the type's owner
    only, and only after the owner's parse hook refused a predicted value
    (never for a value that parses, so it costs nothing on the hot path).
    ``value`` is the raw predicted value (or, when the response holds no final
    object, the value its final block holds). Return a
    :class:`~trace_tasks.family.NativeFormat` naming the shape found and the one
    the contract expects when ``value`` has a shape a model family is known to
    write (Qwen-VL's ``[{"bbox_2d": [...], "label": ...}]``, a one-item list
    for a single box): the result dict then reports
    ``annotation_native_format`` 1.0 and ``trace-tasks explain`` prints both.
    The reward is unchanged: the value still did not parse. Return ``None``
    otherwise, and for a type you do not own; an exception is a plugin bug
    (logged once, read as ``None``).

    :param annotation_type: the type the prediction failed to parse as (you own it).
    :param value: the raw predicted value that did not parse (hostile input).
    :returns: a :class:`~trace_tasks.family.NativeFormat` when ``value`` is a known
        model-native spelling, else ``None``.
    """


@hookspec(firstresult=True)
def trace_frame_annotation(annotation_type: str, value: object, scale_x: float, scale_y: float, y_first: bool) -> object | None:
    """Convert a parsed ``value`` of ``annotation_type`` written in a declared coordinate frame into pixels.

    Optional capability, called by the scoring pipeline on the type's owner with
    a parsed prediction, only when the caller declares a ``prediction_frame``
    other than ``pixel`` (docs/contracts.md, "Coordinate frames"). When
    ``y_first``, every coordinate pair was written ``(y, x)`` (Gemini's
    ``[ymin, xmin, ymax, xmax]``) and is read as ``(x, y)`` first; then every x
    is multiplied by ``scale_x`` and every y by ``scale_y`` (positive, finite).
    Return a value the type's score hooks accept (a parsed value in pixels),
    or ``None`` for a type you do not own. A family without this hook cannot
    take a declared frame: the option is then an ``OptionError`` naming it,
    never a silent zero. A :class:`~trace_tasks.family.Primitive` that declares
    ``flat_xy`` gets it for free.

    :param annotation_type: the stripped type name of the prediction.
    :param value: the owner's parse of the predicted annotation, as written.
    :param scale_x: what every x is multiplied by (the image width over the frame's extent).
    :param scale_y: what every y is multiplied by (the image height over the frame's extent).
    :param y_first: every coordinate pair was written ``(y, x)``: swap first.
    :returns: the parsed value in the image's pixels, or ``None`` for a type
        you do not own (or a frame you cannot take).
    """


# -------------------------------------------------------------------------
# tools: optional capabilities for explain, reports and frame checks, never needed to score
# -------------------------------------------------------------------------


@hookspec(firstresult=True)
def trace_explain_annotation(
    reward_id: str, prediction: object, target: object, context: ScoringContext
) -> AnnotationExplanation | None:
    """Explain a score: the assignment the scorer used, its pairs, unmatched items and keys.

    Optional capability, called on the plugin that declared ``reward_id`` by
    the scoring pipeline when a tool keeps the run's trail (``trace-tasks
    explain``, reports), right after ``trace_score_annotation`` with the very
    same values and context; never in an ordinary scoring call. ``prediction`` is ``None`` when nothing parsed (every target item
    is then unmatched). Its ``score`` must equal what ``trace_score_annotation``
    returns for the same values. Return ``None`` for an id you do not score.

    :param reward_id: the reward id just scored.
    :param prediction: the parsed prediction the score hook got, or ``None``
        when nothing parsed.
    :param target: the parsed target the score hook got.
    :param context: the very context the score hook got.
    :returns: an :class:`~trace_tasks.family.AnnotationExplanation` whose score
        equals the score hook's, or ``None`` for an id you do not score.
    """


@hookspec(firstresult=True)
def trace_draw_annotation(annotation_type: str, item: object) -> Sequence[Drawable] | None:
    """Turn one parsed item of ``annotation_type`` into drawables in pixel coordinates.

    Optional capability, called by tools on the type's owner with an item of an
    :class:`~trace_tasks.family.AnnotationExplanation` (for a scalar type, the
    parsed value itself). Returns boxes, points, polylines, polygons, circles or
    labels from :mod:`trace_tasks.family` (the drawables). Return ``None`` for a type you do
    not own.

    :param annotation_type: the type of the item (you own it).
    :param item: one parsed item (an explanation's ``ExplainedItem.value``, or a
        scalar type's parsed value).
    :returns: the drawables in pixel coordinates, or ``None`` for a type you do
        not own or an item you cannot draw.
    """


@hookspec(firstresult=True)
def trace_scale_annotation(annotation_type: str, value: object, scale_x: float, scale_y: float) -> object | None:
    """Return the parsed ``value`` of ``annotation_type`` with every x multiplied by ``scale_x``, every y by ``scale_y``.

    Optional capability, called on the type's owner by the scoring pipeline
    when a tool keeps the run's trail (``trace-tasks explain``, reports), with
    a parsed prediction: read as normalised coordinates (0-1: scaled by the
    image size; 0-1000: by the size / 1000) it is scored again, and the tools
    hint at normalised coordinates when a reading scores clearly better; never
    in an ordinary scoring call. Return a value the type's score hooks accept
    (a parsed value), or ``None`` for a type you do not own or a value you
    cannot scale.

    :param annotation_type: the type of ``value`` (you own it).
    :param value: a parsed prediction of the type.
    :param scale_x: the factor for every x coordinate (the image width, or width / 1000).
    :param scale_y: the factor for every y coordinate.
    :returns: the scaled parsed value, or ``None`` for a type you do not own or
        a value you cannot scale.
    """


@hookspec(firstresult=True)
def trace_reread_annotation(annotation_type: str, value: object) -> dict[str, object] | None:
    """Other readings of a raw predicted ``value`` that a model is known to write, as parsed values by name.

    Optional capability, called on the type's owner by the scoring pipeline
    when a tool keeps the run's trail with hints (``trace-tasks explain``,
    reports, :func:`~trace_tasks.scoring.row_mismatches`); never in an ordinary
    scoring call, never into the reward. Return ``{reading: parsed value}`` for
    each reading under which ``value`` parses (``{"xywh": ...}``: boxes written
    ``[x, y, width, height]`` read as corners), each a value the type's score
    hooks accept; an empty mapping when none applies; ``None`` for a type you do
    not own. ``ShapeFamily`` implements it from ``Primitive.rereadings``.

    :param annotation_type: the stripped type name of the prediction.
    :param value: the raw predicted annotation value, as the model wrote it.
    :returns: ``{reading name: parsed value}`` for each reading under which
        ``value`` parses (possibly empty), or ``None`` for a type you do not own.
    """
