"""Describing how a response was read: the final block and which candidate was used.

Mirrors the recovery order of :mod:`trace_tasks.extraction` (final block, whole
response, top-level objects, fenced blocks, ``<answer>`` tags, each last to
first) with a human label per candidate, and names the first candidate whose
parsed value equals the mapping the scorer actually recovered.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trace_tasks.answers import _BOOL, _DICT, _LIST, canonical, read_string_literal
from trace_tasks.extraction import answer_tags, extract, fenced_blocks, top_level_objects
from trace_tasks.limits import MAX_RESPONSE_CHARS
from trace_tasks.literals import load_json_or_literal


def _labelled_candidates(text: str) -> Iterator[tuple[str, str]]:
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        yield "the whole response", stripped
    spans = top_level_objects(text)
    for k, (a, b) in reversed(list(enumerate(spans, start=1))):
        yield f"top-level object {k} of {len(spans)} (characters {a}-{b})", text[a:b]
    blocks = fenced_blocks(text)
    for k, block in reversed(list(enumerate(blocks, start=1))):
        yield f"fenced block {k} of {len(blocks)}", block
    tags = answer_tags(text)
    for k, tag in reversed(list(enumerate(tags, start=1))):
        yield f"<answer> tag {k} of {len(tags)}", tag


def candidate_used(response: str, required_keys: frozenset[str]) -> tuple[str, Any]:
    """``(description, recovered mapping or None)`` of the candidate scoring used."""
    text = response if len(response) <= MAX_RESPONSE_CHARS else response[-MAX_RESPONSE_CHARS:]
    ext = extract(text, required_keys)
    if ext.payload is None:
        if ext.last_answer_tag is not None:
            return "none (no mapping holds answer or annotation); the last <answer> tag is the atomic answer", None
        return "none (no mapping holds answer or annotation); the whole response is the atomic answer", None
    if ext.payload is ext.format.payload:
        return "the final block", ext.payload
    for label, candidate in _labelled_candidates(text):
        value, ok = load_json_or_literal(candidate)
        if ok and value == ext.payload:
            return f"recovered from {label}", ext.payload
    return "recovered from an earlier candidate", ext.payload


def predicted_answer(response: str, payload: Mapping[str, Any] | None, required_keys: frozenset[str]) -> Any:
    """The answer value scoring compares (as in ``reward_scoring._predicted_answer``)."""
    answer = payload.get("answer") if payload is not None else None
    if answer is not None:
        return answer
    if payload is None:
        tags = answer_tags(response)
        if tags:
            return tags[-1].strip()
    return response.strip()


def readable(value: Any) -> Any:
    """A canonical answer form turned back into plain JSON-like values for display."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == _LIST:
        return [readable(v) for v in value[1]]
    if isinstance(value, tuple) and len(value) == 2 and value[0] == _DICT:
        return {k: readable(v) for k, v in value[1]}
    if isinstance(value, tuple) and len(value) == 2 and value[0] == _BOOL:
        return value[1]
    return value


def canonical_form(value: Any, reads_json_strings: bool) -> str:
    """The normalized form the exact matcher compares, as text."""
    if reads_json_strings:
        value = read_string_literal(value)
    try:
        return repr(readable(canonical(value)))
    except Exception as exc:  # too deep or odd: the matcher counts it as no match
        return f"<cannot normalize: {type(exc).__name__}>"
