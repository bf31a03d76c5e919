"""The common-ending shortcut of ``extract`` returns exactly what the general path returns.

``plain_final_object`` skips the backward scan when a response ends in a compact
``{"answer"...}`` JSON object. Every response is extracted twice here, with the
shortcut and with it switched off, and the two extractions must be equal; the
text around the object is built from the characters that confuse scanners
(braces, brackets, quotes, backslashes, fences, tags).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trace_tasks.reading._extraction as extraction
from trace_tasks.reading._extraction import ANSWER_AND_ANNOTATION_KEYS, ANSWER_KEYS, extract, plain_final_object

PIECES = [*'ab {}[]"\\:,`\n<>/', "answer", "```", "<answer>", "</answer>", '{"answer"']
TRICKY = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False), TRICKY
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=3), max_leaves=12
)


def _general(text: str, keys: frozenset[str]) -> extraction.Extraction:
    """The general path: ``plain_tried=True`` skips the shortcut (a patch of ``plain_final_object`` would not:
    compiled code calls it directly, and the test would compare the shortcut with itself)."""
    return extract(text, keys, plain_tried=True)


def _response(prefix: str, payload: dict[str, Any], compact: bool, ascii_only: bool, suffix: str) -> str:
    body = json.dumps(payload, separators=(",", ":") if compact else (", ", ": "), ensure_ascii=ascii_only)
    return prefix + body + suffix


@settings(max_examples=200, deadline=None)
@given(
    prefix=TRICKY,
    answer=VALUES,
    annotation=VALUES,
    extra=st.dictionaries(TRICKY, VALUES, max_size=2),
    with_annotation=st.booleans(),
    compact=st.booleans(),
    ascii_only=st.booleans(),
    suffix=st.sampled_from(["", "\n", "  \n\t", "}", "\n}", " tail", "```"]),
)
def test_shortcut_equals_general_path(
    prefix: str,
    answer: Any,
    annotation: Any,
    extra: dict[str, Any],
    with_annotation: bool,
    compact: bool,
    ascii_only: bool,
    suffix: str,
) -> None:
    payload: dict[str, Any] = {"answer": answer}
    if with_annotation:
        payload["annotation"] = annotation
    payload.update({k: v for k, v in extra.items() if k not in payload})
    text = _response(prefix, payload, compact, ascii_only, suffix)
    for keys in (ANSWER_KEYS, ANSWER_AND_ANNOTATION_KEYS):
        assert repr(extract(text, keys)) == repr(_general(text, keys))


@pytest.mark.parametrize(
    "text",
    [
        'Reasoning with a stray " quote and { brace.\n{"answer":"B","annotation":[1,2,3,4]}',
        'x {"answer": 1} then {"answer":{"answer":2}}',  # the last {"answer" is nested: general path
        '{"answer":"}\\"{"}',
        '{"answer":"a\\\\"}',
        'prose\\{"answer":3}',
        '{"answer":NaN}',  # JSON that the stdlib reads: same either way
        "{'answer': 'literal'}",
        '{"answer":1,"answer":2}',
    ],
)
def test_examples_equal_general_path(text: str) -> None:
    for keys in (ANSWER_KEYS, ANSWER_AND_ANNOTATION_KEYS):
        # repr: a NaN payload is not equal to itself, its repr is
        assert repr(extract(text, keys)) == repr(_general(text, keys))


def test_shortcut_taken_for_the_common_ending() -> None:
    text = 'I counted the bars {twice}.\n{"answer":"B","annotation":[10,20,30,40]}\n'
    ext = plain_final_object(text, ANSWER_AND_ANNOTATION_KEYS)
    assert ext is not None
    assert ext.payload == {"answer": "B", "annotation": [10, 20, 30, 40]}
    assert ext.format.schema_ok and ext.source == "the final block"
    assert plain_final_object(text, ANSWER_KEYS) is not None
    assert not plain_final_object(text, ANSWER_KEYS).format.schema_ok  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"answer":"B"}\n```',  # fenced: the general path
        '{"answer":"B"} Hope this helps.',  # trailing prose
        '{ "answer": "B" }',  # not compact
        '{"answer":"B"',  # truncated
        "{'answer': 'B'}",  # a Python literal
        '{"annotation":[1,2,3,4],"answer":"B"}',  # answer not first
    ],
)
def test_shortcut_declines_other_endings(text: str) -> None:
    assert plain_final_object(text, ANSWER_AND_ANNOTATION_KEYS) is None
