"""Hook specifications of trace_tasks.

A plugin is a module (or object) exposing functions marked with
``trace_tasks.hookimpl`` and named like the specs below; it is found through an
entry point in the ``trace_tasks`` group. Families are indexed **once**, when the
registry is first built: per response, the core calls the owning plugin's
implementation directly through a dict lookup, never by walking every plugin.

The annotation types and reward ids a plugin declares are owned by that plugin;
two plugins claiming the same type or id is an error (see ``errors.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pluggy

from trace_tasks.specs import AnnotationScore, AnnotationTypeSpec, AnswerTypeSpec, ScoringContext

from trace_tasks.markers import PROJECT_NAME

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


@hookspec
def trace_annotation_types() -> Sequence[AnnotationTypeSpec]:
    """Declare the annotation types this plugin owns and the reward ids it offers.

    Called once by the registry when plugins are loaded, on every plugin; the
    results of all plugins are collected. Return a sequence of
    :class:`~trace_tasks.specs.AnnotationTypeSpec` (an empty one, or no
    implementation, when the plugin owns no annotation type).

    A plugin that declares a type must also implement ``trace_parse_annotation``;
    one that declares a reward id must implement ``trace_score_annotation``.
    """


@hookspec
def trace_answer_types() -> Sequence[AnswerTypeSpec]:
    """Declare answer types (``integer``, ``matrix``, ...) scored by ``answer_exact_match_v0``.

    Called once at load on every plugin; the results are collected. The core
    registers its eight built-in types through this hook too.
    """


@hookspec(firstresult=True)
def trace_resolve_reward_id(annotation_type: str) -> str | None:
    """Return the current versioned reward id for ``annotation_type``.

    Called once per declared annotation type when the registry is built (the
    answer is cached; contracts are then resolved by dict lookup). The first
    non-``None`` result wins, so a plugin answers only for the types it owns and
    returns ``None`` for the rest. The id returned must be one the type's owner
    declared in ``trace_annotation_types``; the builder never falls back to the
    "latest" version on its own.
    """


@hookspec
def trace_parse_annotation(annotation_type: str, value: object) -> object:
    """Turn a raw annotation value (model output or ``annotation_gt.value``) into a typed value.

    Called per response, directly on the plugin that owns ``annotation_type``
    (not broadcast). ``value`` is whatever JSON or the literal reader produced:
    any type, possibly hostile. Return the typed value the plugin's score hook
    understands; raise :class:`trace_tasks.AnnotationParseError` when the value
    does not have the declared shape. Any other exception is also treated as a
    parse failure, but is a bug in the plugin.
    """


@hookspec
def trace_score_annotation(
    reward_id: str, prediction: object, target: object, context: ScoringContext
) -> AnnotationScore:
    """Score a parsed prediction against a parsed target under ``reward_id``.

    Called per response, directly on the plugin that owns ``reward_id``, with two
    values returned by that plugin's ``trace_parse_annotation``. Return an
    :class:`~trace_tasks.specs.AnnotationScore`: a finite reward in [0, 1] and the
    type's numeric diagnostics, in reporting order (the core adds them to the
    result dict as they are).
    """
