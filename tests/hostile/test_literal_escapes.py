"""A Python literal reads the same whatever the process's warning filters (``reading._literals.escapes_as_read``).

``ast.literal_eval`` warns of an invalid escape in a string (``'a\\[b'``:
``DeprecationWarning``, ``SyntaxWarning`` from 3.12) and of an octal escape
above ``\\377`` (3.12+); under a filter that makes warnings errors (``-W
error``, ``filterwarnings = error``) the warning becomes a ``SyntaxError``, so
the same model output was a literal under the default filters and none under
``error``, and warned on stderr besides. The reader now rewrites those escapes
as what Python reads, so both filters give the default's reading, silently.
"""

from __future__ import annotations

import warnings
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trace_tasks.reading._literals import escapes_as_read, load_literal


def _read(text: str, action: str) -> tuple[tuple[Any, bool], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        found = load_literal(text)
    return found, [str(w.message) for w in caught]


CASES = {
    r"['a\[b', 1]": (["a\\[b", 1], True),
    r"'\8'": ("\\8", True),
    r"'\777'": ("\u01ff", True),  # octal above \377: 3.12+ warns, every version reads the character
    r"r'\['": ("\\[", True),  # a raw string reads no escape
    r"'\N{BULLET}'": ("\u2022", True),
    r"'\\['": ("\\[", True),
    r"""('\[', "\]")""": (("\\[", "\\]"), True),
    '"""a\\\nb\\["""': ("ab\\[", True),  # a line continuation inside a triple-quoted string
    r"'\x4'": (None, False),  # malformed: refused whatever the filters
    r"'\08'": ("\x008", True),
}


def test_each_escape_reads_as_python_reads_it_by_default_and_warns_nothing() -> None:
    for text, expected in CASES.items():
        for action in ("error", "default"):
            found, caught = _read(text, action)
            assert found == expected, (text, action)
            assert caught == [], (text, action)


def test_text_without_string_tokens_or_backslashes_is_unchanged() -> None:
    assert escapes_as_read("[1, 2.5, (3, 4)]") == "[1, 2.5, (3, 4)]"
    assert escapes_as_read("[1, '\\") == "[1, '\\"  # does not tokenize: left to the reader, which refuses it
    assert load_literal("[1, '\\") == (None, False)


_BODY = st.lists(st.sampled_from(["\\", "[", "q", "8", "7", "0", "x", "N", "u", "a", "n", "'", '"', "{", "}"]), max_size=8)
_STRING = st.tuples(st.sampled_from(["", "r", "b", "u"]), st.sampled_from(["'", '"']), _BODY.map("".join)).map(
    lambda parts: f"{parts[0]}{parts[1]}{parts[2]}{parts[1]}"
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_STRING, max_size=4).map(lambda strings: "[" + ", ".join(strings) + "]"))
def test_the_reading_does_not_depend_on_the_warning_filters(text: str) -> None:
    strict, _ = _read(text, "error")
    default, _ = _read(text, "ignore")
    assert strict == default
