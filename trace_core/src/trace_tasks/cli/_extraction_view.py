"""Describing how a response was read: which candidate scoring used, and the answer forms.

The candidate and the atomic-answer rule come from :mod:`trace_tasks.extraction`
itself (``Extraction.source`` and ``Extraction.answer``), so the explanation can
never drift from what the scorer does.
"""

from __future__ import annotations
from typing import Any

from trace_tasks.answers import _BOOL, _DICT, _LIST, canonical, read_string_literal
from trace_tasks.extraction import extract


def candidate_used(response: str, required_keys: frozenset[str]) -> tuple[str, Any]:
    """``(description, recovered mapping or None)`` of the candidate scoring used."""
    ext = extract(response, required_keys)
    if ext.payload is None:
        if ext.last_answer_tag is not None:
            return "none (no mapping holds answer or annotation); the last <answer> tag is the atomic answer", None
        return "none (no mapping holds answer or annotation); the whole response is the atomic answer", None
    if ext.source == "the final block":
        return ext.source, ext.payload
    return f"recovered from {ext.source}", ext.payload


def predicted_answer(response: str, required_keys: frozenset[str]) -> Any:
    """The answer value scoring compares."""
    return extract(response, required_keys).answer(response)


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
