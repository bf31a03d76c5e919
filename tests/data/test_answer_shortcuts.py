"""The answer checks' shortcuts for plain values give exactly what the full walks give.

Validation checks every distinct answer a dataset holds (the reward server: every label it meets). For a whole
number, text, a finite float, or a list (of lists) of those, two shortcuts skip walks that cannot find anything:
``_unmatchable_item`` (the index_list and matrix types' own check) and the self-match and key-collision walks of
``_scored_value_problems``. Compared here with the walks on generated values, odd ones included (booleans, NaN,
infinities, mappings with colliding keys, JSON-literal strings, deep nesting).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_tasks.data import _validation
from trace_tasks.plugins import BUILTIN_ANSWER_TYPES, _answer_types

LEAF = st.one_of(
    st.integers(-(10**20), 10**20),
    st.text(max_size=6),
    st.sampled_from(["B", " b ", "7", '"x"', "[1, 2]", "{}", "null", "true", "1e999"]),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "A", " a", "b", "1"]), inner, max_size=3),
        st.tuples(inner, inner),
    ),
    max_leaves=12,
)
#: Floats the shortcuts must send to the walks (not even equal to themselves), and ordinary ones.
SPECIAL = st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.5, -0.0])
#: The shortcuts' own domain, generated densely: whole numbers, text, floats, and lists (of lists) of those.
PLAIN = st.one_of(
    st.integers(),
    st.text(max_size=4),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.one_of(st.integers(-5, 5), st.text(max_size=2), st.booleans(), st.none(), SPECIAL), max_size=5),
    st.lists(st.lists(st.one_of(st.integers(-5, 5), st.sampled_from(["x", "X "]), SPECIAL), max_size=3), max_size=3),
)


@settings(max_examples=400, deadline=None)
@given(value=st.one_of(VALUE, PLAIN))
def test_the_unmatchable_shortcut_is_the_walk(value: Any) -> None:
    assert _answer_types._unmatchable_item(value) == _answer_types._unmatchable_walk(value)


def _problems(spec: Any, value: Any) -> tuple[Any, Any]:
    parts = _validation.Parts()
    try:
        found = _validation._scored_value_problems(spec, value, parts)
    except Exception as exc:  # what _answer_value_rules turns into a problem: compared by type
        return ("raised", type(exc)), None
    return found, parts.answer


@settings(max_examples=600, deadline=None)
@given(spec=st.sampled_from(BUILTIN_ANSWER_TYPES), value=st.one_of(VALUE, PLAIN))
def test_the_plain_answer_shortcut_finds_what_the_walks_find(spec: Any, value: Any) -> None:
    with_shortcut = _problems(spec, value)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_validation, "_plain_answer", lambda value: False)
        walked = _problems(spec, value)
    assert repr(with_shortcut) == repr(walked)  # repr: a NaN inside compares unequal to itself


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (7, True),
        ("B", True),
        (2.5, True),
        ([2, 0, 1], True),
        ([[1, 2], [3, "x"]], True),
        (float("nan"), False),
        (float("inf"), False),
        (True, False),
        ([True, 1], False),
        ([1.5, 2], False),
        ([[1, {"a": 1}]], False),
        ({"a": 1}, False),
        ((1, 2), False),
        ([[[1]]], False),
    ],
)
def test_what_counts_as_plain(value: Any, plain: bool) -> None:
    assert _validation._plain_answer(value) is plain
