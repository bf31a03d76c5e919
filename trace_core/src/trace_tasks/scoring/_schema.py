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
"""

from __future__ import annotations

import copy
import json
from typing import Any

from trace_tasks.errors import OptionError, UnknownTypeError, suggest
from trace_tasks.plugins import JSON_SCHEMA_DIALECT, AnnotationTypeEntry, AnswerTypeSpec, Registry, get_registry
from trace_tasks.scoring._options import ANSWER, resolve_answer_tag, resolve_mode

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
        raise OptionError(f"annotation_type must be a non-empty string in answer_and_annotation mode, got {annotation_type!r}")
    return registry.annotation_type(annotation_type.strip())  # MissingFamilyError / UnknownTypeError


def _parts(
    answer_type: Any, annotation_type: Any, trace_reward_mode: Any
) -> tuple[str, AnswerTypeSpec, AnnotationTypeEntry | None]:
    mode = resolve_mode(trace_reward_mode)
    registry = get_registry()
    spec = _answer_spec(registry, answer_type)
    entry = None
    if mode != ANSWER or annotation_type is not None:  # in answer mode a given type is still checked
        entry = _annotation_entry(registry, annotation_type)
    return mode, spec, (entry if mode != ANSWER else None)


def _value_schema(declared: Any, description: str, what: str, notes: list[str]) -> dict[str, Any]:
    if declared is None:
        notes.append(f"{what} declares no JSON Schema, so its value is not constrained here")
        return {"description": description} if description else {}
    schema = copy.deepcopy(dict(declared))
    if description and "description" not in schema:
        schema = {"description": description, **schema}
    return schema


def response_json_schema(
    *, answer_type: str, annotation_type: str | None = None, trace_reward_mode: Any = "answer_and_annotation"
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
    """
    mode, spec, entry = _parts(answer_type, annotation_type, trace_reward_mode)
    notes: list[str] = []
    properties = {"answer": _value_schema(spec.json_schema, spec.description, f"answer type {spec.name!r}", notes)}
    title = f"trace_tasks final object ({mode} mode): answer {spec.name}"
    if entry is not None:
        type_spec = entry.spec
        declared = type_spec.json_schema if type_spec is not None else None
        words = (type_spec.value_format or type_spec.description) if type_spec is not None else ""
        properties["annotation"] = _value_schema(declared, words, f"annotation type {entry.name!r}", notes)
        title += f", annotation {entry.name}"
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": title,
        "description": "The one final JSON object a response ends with (docs/contracts.md §3.1); pixel coordinates.",
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
    answer_type: str,
    annotation_type: str | None = None,
    trace_reward_mode: Any = "answer_and_annotation",
    format_accept_answer_tag: Any = False,
) -> str:
    """The prompt text asking for the final object of :func:`response_json_schema`: its keys, how to write
    each value (pixel coordinates, the items' shape), and an example object.

    ``format_accept_answer_tag=True`` asks for the object inside ``<answer>...</answer>``
    (the option of the same name, docs/contracts.md §3.7). Same errors as :func:`response_json_schema`.
    """
    _, spec, entry = _parts(answer_type, annotation_type, trace_reward_mode)
    tagged = resolve_answer_tag(format_accept_answer_tag)
    shape = f'{{"answer": <{spec.name}>}}' if entry is None else f'{{"answer": <{spec.name}>, "annotation": <{entry.name}>}}'
    if tagged:
        lines = [
            "End your reply with the final object inside answer tags, <answer>OBJECT</answer>, and write nothing "
            "after the closing tag. OBJECT is one JSON object with exactly these keys:"
        ]
    else:
        lines = ["End your reply with one JSON object with exactly these keys, and write nothing after it:"]
    lines.append(f"  {shape}")
    lines.append(f'- "answer": {spec.description or f"a value of type {spec.name}"} ({spec.name}).')
    has_answer, answer = _example(spec.examples)
    example: dict[str, Any] = {"answer": answer}
    complete = has_answer
    if entry is not None:
        type_spec = entry.spec
        words = ""
        if type_spec is not None:
            words = type_spec.value_format or type_spec.description
        lines.append(f'- "annotation": {words or f"a value of type {entry.name}"}.')
        lines.append(
            "Coordinates are pixels of the image as you are given it: x from its left edge, y from its top edge. "
            "Do not normalise them (no 0-1 or 0-1000 scale)."
        )
        has_annotation, annotation = _example(type_spec.examples if type_spec is not None else ())
        example["annotation"] = annotation
        complete = complete and has_annotation
    if complete:
        text = json.dumps(example, ensure_ascii=False)
        lines.append(f"Example: <answer>{text}</answer>" if tagged else f"Example: {text}")
    return "\n".join(lines)
