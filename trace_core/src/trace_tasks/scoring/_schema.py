"""The final object as a JSON Schema, and as the instruction a prompt carries (docs/contracts.md §3.8).

:func:`response_json_schema` assembles the schema of a mode's final object
(exactly its keys, ``additionalProperties: false``) from the value schemas the
types' owners declare through the plugin contract (``AnswerTypeSpec.json_schema``,
``AnnotationTypeSpec.json_schema``); :func:`format_instructions` renders the
same contract as prompt text. A registered type that declares no schema gets
an unconstrained value and a ``$comment`` saying so. Both describe the
*canonical* final object: the spellings the scorer also reads for
compatibility (JSON-literal strings for numbers, annotation strings, Python
literals, the ``bboxes`` wrapper, one flat item for a set) are left out, so
a constrained decoder emits the form prompts ask for.

Given an ``instance`` (a record with ``answer_gt``, ``annotation_gt``), both
take the types from it and, for a map or set-map type, its role keys: the
required and only keys of the annotation (never anything else of the target:
no value, no set's size).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.errors import OptionError, UnknownTypeError, suggest
from trace_tasks.plugins import JSON_SCHEMA_DIALECT, AnnotationTypeEntry, AnswerTypeSpec, Registry, get_registry
from trace_tasks.reading import is_mapping, read_annotation_string
from trace_tasks.scoring._frames import PIXEL, RELATIVE_FRAMES
from trace_tasks.scoring._options import ANNOTATION_ONLY, ANSWER, resolve_answer_tag, resolve_mode
from trace_tasks.scoring._schema_frames import frame_of, frame_schema, frame_words

__all__ = ["format_instructions", "response_json_schema"]


def _answer_spec(registry: Registry, answer_type: Any) -> AnswerTypeSpec:
    if not isinstance(answer_type, str) or not answer_type.strip():
        raise OptionError(f"answer_type must be a non-empty string, got {answer_type!r}")
    spec = registry.answer_types.get(answer_type.strip())
    if spec is None:
        raise UnknownTypeError(
            f"unknown answer type {answer_type.strip()!r}{suggest(answer_type.strip(), registry.answer_types)}; "
            f"registered: {', '.join(sorted(registry.answer_types))}"
        )
    return spec


def _annotation_entry(registry: Registry, annotation_type: Any) -> AnnotationTypeEntry:
    if not isinstance(annotation_type, str) or not annotation_type.strip():
        raise OptionError(
            f"annotation_type must be a non-empty string in answer_and_annotation mode (and annotation_only), got {annotation_type!r}"
        )
    return registry.annotation_type(annotation_type.strip())  # MissingFamilyError / UnknownTypeError


def _version_form(entry: AnnotationTypeEntry, frame: str = PIXEL) -> tuple[str, tuple[Any, ...]] | None:
    """The current reward version's own prediction form (in words for ``frame``) and example predictions, when it
    declares one.

    A pinned click version of ``bbox`` (``bbox_click_hit_v0``) reads a point ``[x, y]``, not the box the type
    holds: the prompt and schema ask for what the reward reads.
    """
    reward = get_registry().reward_ids.get(entry.current_reward_id)
    spec = reward.spec if reward is not None else None
    if spec is None or spec.parse_prediction is None or not spec.prediction_form:
        return None
    words = _in_frame(frame, spec.prediction_form, spec.frame_prediction_form, spec.frame_prediction_form_yx)
    return words, tuple(example[0] for example in spec.prediction_examples)


def _value_words(entry: AnnotationTypeEntry, frame: str) -> str:
    """How to write a value of ``entry``'s type in ``frame``, as its owner says it ("" when it says nothing)."""
    spec = entry.spec
    if spec is None:
        return ""
    return _in_frame(frame, spec.value_format or spec.description, spec.frame_value_format, spec.frame_value_format_yx)


def _in_frame(frame: str, pixel: str, x_first: str, y_first: str) -> str:
    """The words for ``frame``: ``pixel`` in pixels, else the declared frame's (x or y first), when the family gives
    them; the pixel words say "pixels of the image", which a prompt asking for 0-1000 must not say too."""
    if frame == PIXEL:
        return pixel
    words = y_first if RELATIVE_FRAMES.get(frame, (0, False))[1] else x_first
    return words or pixel


@attrs.frozen(slots=True)
class _Parts:
    """What a schema or an instruction is built from: the mode, both types' specs, an instance's role keys."""

    mode: str
    spec: AnswerTypeSpec | None  # None in annotation_only mode (no answer)
    entry: AnnotationTypeEntry | None  # None in answer mode
    roles: tuple[str, ...] | None = None  # a map type's role keys, from an instance


_MAPS = ("map", "set_map")


def _instance_type(instance: Mapping[str, Any], side: str, given: Any) -> Any:
    """The type name of ``instance[side]``, or ``given`` (which must then agree with it)."""
    gt = instance.get(side)
    name = gt.get("type") if is_mapping(gt) else None
    if not isinstance(name, str) or not name.strip():
        raise OptionError(f"instance: {side}.type must be a non-empty string, got {name!r}")
    if given is not None and (not isinstance(given, str) or given.strip() != name.strip()):
        raise OptionError(f"{side.replace('_gt', '_type')}={given!r} disagrees with the instance's {side}.type {name!r}")
    return name


def _role_keys(instance: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The role keys of the instance's map target, stripped as the parser strips them."""
    value = instance["annotation_gt"].get("value")
    if isinstance(value, str):
        value, ok = read_annotation_string(value)
        if not ok:
            value = None
    if not is_mapping(value) or not value:
        raise OptionError(f"instance: annotation_gt.value of a {name} must be a non-empty mapping of role keys")
    keys = tuple((key if isinstance(key, str) else str(key)).strip() for key in value)
    if "" in keys or len(set(keys)) < len(keys):
        raise OptionError(
            "instance: annotation_gt.value has a blank key or two keys that are one once stripped; "
            "check it with trace_tasks.instance_problems"
        )
    return keys


def _parts(answer_type: Any, annotation_type: Any, trace_reward_mode: Any, instance: Any = None) -> _Parts:
    mode = resolve_mode(trace_reward_mode)
    if instance is not None:
        if not is_mapping(instance):
            raise OptionError(f"instance must be an instance record (a mapping), got {type(instance).__name__}")
        if mode != ANNOTATION_ONLY:
            answer_type = _instance_type(instance, "answer_gt", answer_type)
        if mode != ANSWER:
            annotation_type = _instance_type(instance, "annotation_gt", annotation_type)
    registry = get_registry()
    # annotation_only asks for no answer (a given answer type is still checked, as a given annotation type in answer mode)
    spec: AnswerTypeSpec | None = None
    if mode != ANNOTATION_ONLY or answer_type is not None:
        spec = _answer_spec(registry, answer_type)
    if mode == ANNOTATION_ONLY:
        spec = None
    entry = None
    if mode != ANSWER or annotation_type is not None:  # in answer mode a given type is still checked
        entry = _annotation_entry(registry, annotation_type)
    if mode == ANSWER:
        return _Parts(mode, spec, None)
    roles = None
    if instance is not None and entry is not None and entry.spec is not None and entry.spec.shape in _MAPS:
        roles = _role_keys(instance, entry.name)
    return _Parts(mode, spec, entry, roles)


def _with_roles(schema: dict[str, Any], roles: tuple[str, ...] | None) -> dict[str, Any]:
    """A map type's schema with ``roles`` as its required and only keys (the item schema kept)."""
    item = schema.get("additionalProperties")
    if roles is None or schema.get("type") != "object" or not isinstance(item, Mapping):
        return schema
    out = {k: v for k, v in schema.items() if k not in ("additionalProperties", "propertyNames")}
    out["properties"] = {role: copy.deepcopy(dict(item)) for role in roles}
    out["required"] = list(roles)
    out["additionalProperties"] = False
    return out


def _value_schema(declared: Any, description: str, what: str, notes: list[str]) -> dict[str, Any]:
    if declared is None:
        notes.append(f"{what} declares no JSON Schema, so its value is not constrained here")
        return {"description": description} if description else {}
    schema = copy.deepcopy(dict(declared))
    if description and "description" not in schema:
        schema = {"description": description, **schema}
    return schema


def response_json_schema(
    *,
    answer_type: str | None = None,
    annotation_type: str | None = None,
    trace_reward_mode: Any = "answer_and_annotation",
    instance: Mapping[str, Any] | None = None,
    prediction_frame: Any = None,
    resize: Any = None,
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the final object of ``trace_reward_mode`` for these types.

    An object with exactly the mode's keys (``answer``, and ``annotation`` in
    answer-and-annotation mode), all required, ``additionalProperties: false``;
    each value's schema is its type owner's (``AnswerTypeSpec.json_schema``,
    ``AnnotationTypeSpec.json_schema``), or unconstrained with a ``$comment``
    note when the owner declares none. For constrained decoding (vLLM's
    structured outputs take a JSON Schema) and for checking prompts'
    examples. ``annotation_type`` is required in answer-and-annotation mode
    (and checked when given in answer mode). Raises
    :class:`~trace_tasks.errors.OptionError` for a bad mode or a missing type,
    :class:`~trace_tasks.errors.UnknownTypeError` for a type nobody
    registers, :class:`~trace_tasks.errors.MissingFamilyError` for an
    official type whose family is not installed.

    ``instance``: an instance record; the types come from its ``answer_gt`` and
    ``annotation_gt`` (``answer_type``/``annotation_type``, when also given,
    must agree: ``OptionError``), and a map or set-map type's annotation gets
    the target's role keys as its ``properties``, all ``required``,
    ``additionalProperties: false``. Nothing else of the target is used: no
    value, no set's size.

    ``prediction_frame`` (the scorer option, docs/contracts.md §5.7): every
    number of the annotation's schema is bounded by the frame, ``minimum`` 0
    and ``maximum`` 1000 (integers) for ``rel1000`` and ``rel1000_yx``, 999 for
    ``rel999``, 1 (numbers) for ``rel1``; for ``resized`` with an ``instance``
    giving the image size, the larger side of the resized input (``resize``:
    the scorer option's smart_resize parameters). ``pixel`` (the default)
    changes nothing. A family that cannot convert the frame: ``OptionError``.
    """
    parts = _parts(answer_type, annotation_type, trace_reward_mode, instance)
    mode, spec, entry = parts.mode, parts.spec, parts.entry
    frame = frame_of(prediction_frame, entry)
    bounds = ""
    notes: list[str] = []
    properties: dict[str, Any] = {}
    titled: list[str] = []
    if spec is not None:
        properties["answer"] = _value_schema(spec.json_schema, spec.description, f"answer type {spec.name!r}", notes)
        titled.append(f"answer {spec.name}")
    title = f"trace_tasks final object ({mode} mode): "
    if entry is not None:
        type_spec = entry.spec
        declared = type_spec.json_schema if type_spec is not None else None
        words = _value_words(entry, frame)
        form = _version_form(entry, frame)
        if form is not None:  # the current version reads its prediction in its own form (a click for a box)
            declared, words = None, form[0]
        what = f"annotation type {entry.name!r}" if form is None else f"the reward version {entry.current_reward_id!r}"
        value_schema = _value_schema(declared, words, what, notes)
        value_schema, bounds = frame_schema(value_schema, frame, instance, resize)
        properties["annotation"] = _with_roles(value_schema, parts.roles)
        named = f"annotation {entry.name}"
        if parts.roles is not None:
            named += f" (role keys {', '.join(map(repr, parts.roles))})"
        titled.append(named)
    title += ", ".join(titled)
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": title,
        "description": "The one final JSON object a response ends with (docs/contracts.md §3.1); "
        + (f"coordinates in the {frame} frame: {bounds}." if bounds else "pixel coordinates."),
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if notes:
        schema["$comment"] = "; ".join(notes)
    return schema


def _example(examples: Any) -> tuple[bool, Any]:
    for value in examples or ():
        return True, copy.deepcopy(value)
    return False, None


def format_instructions(
    *,
    answer_type: str | None = None,
    annotation_type: str | None = None,
    trace_reward_mode: Any = "answer_and_annotation",
    format_accept_answer_tag: Any = False,
    instance: Mapping[str, Any] | None = None,
    prediction_frame: Any = None,
    resize: Any = None,
) -> str:
    """The prompt text asking for the final object of :func:`response_json_schema`: its keys, how to write
    each value (pixel coordinates, the items' shape), and an example object.

    ``format_accept_answer_tag=True`` asks for the object inside ``<answer>...</answer>``
    (the option of the same name, docs/contracts.md §3.7). ``instance``: as for
    :func:`response_json_schema`; a map type's role keys are named as the only
    keys to use, and the example uses them. ``prediction_frame`` and ``resize``: the
    coordinates are asked for in that frame (its range, y first for
    ``rel1000_yx``). Same errors as :func:`response_json_schema`.
    """
    parts = _parts(answer_type, annotation_type, trace_reward_mode, instance)
    spec, entry, roles = parts.spec, parts.entry, parts.roles
    frame = frame_of(prediction_frame, entry)
    tagged = resolve_answer_tag(format_accept_answer_tag)
    annotation_shape = f"<{entry.name}>" if entry is not None else ""
    if entry is not None and roles is not None:
        annotation_shape = "{" + ", ".join(f"{json.dumps(role, ensure_ascii=False)}: ..." for role in roles) + "}"
    if spec is None:  # annotation_only
        shape = f'{{"annotation": {annotation_shape}}}'
    elif entry is None:
        shape = f'{{"answer": <{spec.name}>}}'
    else:
        shape = f'{{"answer": <{spec.name}>, "annotation": {annotation_shape}}}'
    if tagged:
        lines = [
            "End your reply with the final object inside answer tags, <answer>OBJECT</answer>, and write nothing "
            "after the closing tag. OBJECT is one JSON object with exactly these keys:"
        ]
    else:
        lines = ["End your reply with one JSON object with exactly these keys, and write nothing after it:"]
    lines.append(f"  {shape}")
    example: dict[str, Any] = {}
    complete = True
    if spec is not None:
        lines.append(f'- "answer": {spec.description or f"a value of type {spec.name}"} ({spec.name}).')
        complete, example["answer"] = _example(spec.examples)
    if entry is not None:
        type_spec = entry.spec
        words = _value_words(entry, frame)
        form = _version_form(entry, frame)
        if form is not None:
            words = form[0]
        lines.append(f'- "annotation": {words or f"a value of type {entry.name}"}.')
        if roles is not None:
            names = ", ".join(json.dumps(role, ensure_ascii=False) for role in roles)
            lines.append(f"  Its keys are exactly these role keys, each once: {names}.")
        lines.append(frame_words(frame, instance, resize))
        has_annotation, annotation = _example(type_spec.examples if type_spec is not None else ())
        if form is not None:
            has_annotation, annotation = _example(form[1])
        if has_annotation and roles is not None and is_mapping(annotation) and annotation:
            # The type's example items under the instance's keys; a set-map's roles all get one list,
            # so the example's sizes cannot be read as the target's.
            items = list(annotation.values())
            if entry.spec is not None and entry.spec.shape == "set_map":
                items = items[:1]
            annotation = {role: items[i % len(items)] for i, role in enumerate(roles)}
        example["annotation"] = annotation
        # The types' examples are pixels: in another frame they would teach the wrong range, so none is shown.
        complete = complete and has_annotation and frame == "pixel"
    if complete:
        text = json.dumps(example, ensure_ascii=False)
        lines.append(f"Example: <answer>{text}</answer>" if tagged else f"Example: {text}")
    return "\n".join(lines)
