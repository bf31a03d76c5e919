"""Describing how a response was read, and showing any value a family returns on one safe line.

:func:`candidate_used` names the candidate of an :class:`~trace_tasks.reading.Extraction`
(the pipeline's own, kept in its trail), so the explanation can never drift
from what the scorer did.

Whatever a family returns (an explanation's items, labels, similarities,
texts) is shown through :func:`show_value`, :func:`item_name`,
:func:`plain` and :func:`show_number`, which never raise and never print
more than a line.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping
from typing import Any

from trace_tasks.reading import Extraction


def candidate_used(ext: Extraction) -> str:
    """Which candidate of the response scoring used, in words."""
    if ext.payload is None:
        if ext.last_answer_tag is not None:
            return "none (no mapping holds answer or annotation); the last <answer> tag is the atomic answer"
        return "none (no mapping holds answer or annotation); the whole response is the atomic answer"
    if ext.source == "the final block":
        return ext.source
    return f"recovered from {ext.source}"


#: Longest rendering of one value (an item, a key) in the report.
SHOW_VALUE_CHARS = 120
#: Longest item label (a map key) in the report.
SHOW_LABEL_CHARS = 40
_SHOW_DEPTH = 8


class _Out:
    """Text pieces with a character budget: rendering stops once the budget is spent."""

    __slots__ = ("left", "parts")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.left = limit

    def put(self, text: str) -> None:
        if self.left > 0:
            self.parts.append(text[: self.left])
            self.left -= len(text)


def _integer(value: Any) -> str:
    try:
        return str(int(value))
    except ValueError:  # more digits than int -> str allows
        return f"<int of {int(value).bit_length()} bits>"


def _render(value: Any, out: _Out, depth: int) -> None:
    if depth > _SHOW_DEPTH:
        out.put("...")
        return
    try:
        if value is None or isinstance(value, bool):
            out.put(repr(value))
        elif isinstance(value, numbers.Integral):
            out.put(_integer(value))
        elif isinstance(value, numbers.Real):
            out.put(f"{float(value):g}")
        elif isinstance(value, str):
            out.put(repr(value[: SHOW_VALUE_CHARS + 1]))
        elif isinstance(value, Mapping):
            out.put("{")
            for n, (key, item) in enumerate(value.items()):
                if out.left <= 0:
                    break
                out.put(", " if n else "")
                _render(key, out, depth + 1)
                out.put(": ")
                _render(item, out, depth + 1)
            out.put("}")
        elif isinstance(value, (list, tuple)):
            out.put("[")
            for n, item in enumerate(value):
                if out.left <= 0:
                    break
                out.put(", " if n else "")
                _render(item, out, depth + 1)
            out.put("]")
        else:
            out.put(repr(value))
    except Exception:  # a hostile __repr__, __iter__, __float__...
        out.put(f"<unprintable {type(value).__name__}>")


def show_value(value: Any, limit: int = SHOW_VALUE_CHARS) -> str:
    """One line for any value: floats with ``:g``, lists, tuples and dicts recursively, the rest ``repr``, capped."""
    out = _Out(limit + 1)
    _render(value, out, 0)
    text = "".join(out.parts).replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def plain(value: Any, limit: int = SHOW_VALUE_CHARS) -> str:
    """A family's text (a method, a formula) on one line, capped; anything not a string through :func:`show_value`."""
    if not isinstance(value, str):
        return show_value(value, limit)
    text = _printable(value[: limit + 1])
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def _printable(text: str) -> str:
    """``text`` with newlines, control characters and lone surrogates escaped (it can always be printed)."""
    return text if text.isprintable() else "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


_SURROGATE = re.compile("[\ud800-\udfff]")
#: What a lone surrogate is shown as: U+FFFD, the replacement character.
REPLACEMENT = "\ufffd"


def without_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many there were.

    A lone surrogate is valid in JSON (``"\\ud800"``) and in a Python string,
    but it is not Unicode text: no UTF-8 terminal or file can hold it.
    """
    if text.isascii():
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): printable, and still pointing at it."""
    if text.isascii():
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def surrogate_note(count: int, *, in_json: bool = False) -> str:
    """The note saying that the response holds ``count`` lone surrogates, and how they are shown."""
    shown = "kept as JSON escapes here" if in_json else f"shown here as U+FFFD ({REPLACEMENT})"
    return (
        f"the response holds {count} lone surrogate{'s' * (count != 1)} (valid as JSON escapes such as \\ud800, "
        f"but not Unicode text), {shown}; scoring read the text as it is"
    )


def item_name(prefix: str, label: Any) -> str:
    """``T#0``, ``P[left]``, ``P[left]#1`` for an explained item's label (``#0``, ``left``, ``left#1``)."""
    text = _printable(label[: SHOW_LABEL_CHARS + 1]) if isinstance(label, str) else show_value(label, SHOW_LABEL_CHARS)
    if len(text) > SHOW_LABEL_CHARS:
        text = text[: SHOW_LABEL_CHARS - 3] + "..."
    if not text or text.startswith("#"):
        return prefix + text
    key, sep, index = text.rpartition("#")
    if sep and key and index.isdigit():
        return f"{prefix}[{key}]#{index}"
    return f"{prefix}[{text}]"


def show_number(value: Any, digits: int = 4) -> str:
    """A similarity or reward with ``digits`` decimals; anything else through :func:`show_value`."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            return f"{float(value):.{digits}f}"
        except Exception:
            pass
    return show_value(value, 24)
