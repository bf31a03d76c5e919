"""Reading an annotation from a response's tool calls (the ``tool_call`` option, docs/contracts.md §3.9).

Opt-in and declared: the caller names the tool and the argument(s) that carry the geometry; the
annotation is read from the **last** call of that tool in the forms models emit:

* Hermes / Qwen ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (``arguments`` may be a JSON string);
* a JSON function call object ``{"name": ..., "arguments": ...}`` anywhere in the text;
* a call written as text, ``click(x=100, y=200)`` or positional ``click(100, 200)`` (positional
  arguments map to the declared names in order);
* an argument value written as NeMo Gym's ``<point>(x, y)</point>`` (or ``<point>x y</point>``) reads as ``[x, y]``.

A call of another tool is never read, and only the last call of the tool counts. Hostile text costs
linear time: candidates are found by one linear pass each (``<tool_call>`` blocks by ``str.find``, not
a lazy regular expression, which rescans to the end from every unclosed tag), tried from the end of
the text, at most ``MAX_RECOVERY_CANDIDATES`` of them, each read within ``_MAX_CALL_CHARS`` characters
and under the response's literal budget (the caller's ``literal_budget``). The candidates tried share
one budget of characters scanned: the text's length plus two calls' worth (:func:`_scan_budget`).
Reading stops when it is spent, so a flood of unclosed calls, each of which would be scanned up to
``_MAX_CALL_CHARS`` characters, earns nothing in time linear in the text, while the last real call,
tried first, is always read in full.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.limits import MAX_RECOVERY_CANDIDATES, MAX_RESPONSE_CHARS
from trace_tasks.reading._literals import load_json, load_json_or_literal
from trace_tasks.reading._values import is_mapping

__all__ = ["ToolCall", "ToolCallReading", "read_tool_call"]

#: The longest span read as one call (a call's text, or a ``<tool_call>`` block's content).
_MAX_CALL_CHARS = 16_384
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
#: ``<point>(x, y)</point>``, ``<point>x y</point>``: one way to match each text (no two adjacent
#: quantifiers over the same whitespace, which backtrack quadratically on a long run of spaces).
_POINT = re.compile(r"\s*<point>\s*(?:\(\s*)?(-?[\d.eE+-]+)(?:\s*,|[^\S ]* )\s*(-?[\d.eE+-]+)\s*(?:\)\s*)?</point>\s*")
#: An identifier ending a call's head, read backwards (``[A-Za-z_][\w.-]*`` at the end, found in linear time).
_NAME_REVERSED = re.compile(r"[\w.-]*")
_NAME_START = re.compile(r"[A-Za-z_]")


@attrs.frozen(slots=True, cache_hash=True)
class ToolCall:
    """The declared tool call: the tool's ``name`` and the argument names whose values form the annotation.

    ``single``: one argument whose value is the geometry (``"coordinate"``, ``"bbox_2d"``); otherwise the
    values of ``arguments``, in order, form it (``["x", "y"]``).
    """

    name: str
    arguments: tuple[str, ...]
    single: bool = True

    @property
    def declared(self) -> float:
        """1.0: the result's echo (``trace_tool_call``)."""
        return 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "argument": self.arguments[0] if self.single else list(self.arguments)}


@attrs.frozen(slots=True)
class ToolCallReading:
    """What the reader found: ``found`` a call of the tool (its ``form``), ``value`` the annotation read from it
    (``None`` when the call lacks the argument), ``text`` the call as written (cut short)."""

    found: bool = False
    value: Any = None
    form: str = ""
    text: str = ""


NOT_FOUND = ToolCallReading()


def read_tool_call(response: str, tool: ToolCall) -> ToolCallReading:
    """The annotation of the response's last call of ``tool`` (:data:`NOT_FOUND` when there is none). Never raises."""
    text = response if len(response) <= MAX_RESPONSE_CHARS else response[-MAX_RESPONSE_CHARS:]
    if tool.name not in text:
        return NOT_FOUND
    candidates: list[tuple[int, str, int, int]] = []  # (end, form, start, stop), tried from the last end
    candidates.extend(_tag_blocks(text))
    name = re.escape(tool.name)
    for match in re.finditer(r'"name"\s*:\s*"' + name + r'"', text):
        start = text.rfind("{", max(0, match.start() - _MAX_CALL_CHARS), match.start())
        if start >= 0:
            candidates.append((match.end(), "JSON function call", start, -1))
    for match in re.finditer(r"(?<![\w.\"'])" + name + r"\s*\(", text):
        candidates.append((match.end(), "text call", match.end(), -1))
    candidates.sort(reverse=True)
    inside_tags = [(start, stop) for _, form, start, stop in candidates if form == "<tool_call>"]
    budget = _scan_budget(text)
    for _, form, start, stop in candidates[:MAX_RECOVERY_CANDIDATES]:
        limit = min(_MAX_CALL_CHARS, budget)
        if limit <= 0:
            break  # the budget is spent: what is left is a flood (linear time)
        if form == "<tool_call>":
            budget -= stop - start  # the blocks do not overlap: together they are at most the text
            block = text[start:stop].strip()
            call = _json_call(block) if len(block) <= limit else None
        elif form == "JSON function call":
            if any(a <= start < b for a, b in inside_tags):
                continue  # the object of a <tool_call> block: read as that block
            block, scanned = _object_at(text, start, limit)
            budget -= scanned
            call = _json_call(block)
        else:
            call, scanned = _text_call(text, start, limit)
            budget -= scanned
        if call is None or call[0] != tool.name:
            continue
        _, keywords, positional, written = call
        return ToolCallReading(True, _geometry(tool, keywords, positional), form, written[:200])
    return NOT_FOUND


def _scan_budget(text: str) -> int:
    """How many characters the candidates of ``text`` may scan together: its length and two whole calls."""
    return len(text) + 2 * _MAX_CALL_CHARS


def _tag_blocks(text: str) -> list[tuple[int, str, int, int]]:
    """Each ``<tool_call>...</tool_call>`` block as a candidate ``(end, form, start, stop)`` of its content.

    A block ends at the first closing tag after its opening one, and the next block is looked for after
    it, as ``<tool_call>(.*?)</tool_call>`` would match; but an opening tag with no closing tag after it
    ends the search (no later one can close either), so each character is looked at about once.
    """
    blocks = []
    at = text.find(_OPEN)
    while at != -1:
        close = text.find(_CLOSE, at + len(_OPEN))
        if close == -1:
            break
        end = close + len(_CLOSE)
        blocks.append((end, "<tool_call>", at + len(_OPEN), close))
        at = text.find(_OPEN, end)
    return blocks


def _object_at(text: str, start: int, limit: int = _MAX_CALL_CHARS) -> tuple[str, int]:
    """The balanced ``{...}`` starting at ``start`` (strings respected), within ``limit`` characters ("" when
    unclosed), and how many characters were scanned."""
    depth, quoted, escaped = 0, False, False
    stop = min(len(text), start + limit)
    for i in range(start, stop):
        ch = text[i]
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1], i + 1 - start
    return "", stop - start


def _json_call(block: str) -> tuple[str, dict[str, Any], list[Any], str] | None:
    """``(name, keyword arguments, [], text)`` of a JSON function call object, or None."""
    if not block or len(block) > _MAX_CALL_CHARS:
        return None
    value, ok = load_json(block)
    if not ok:
        value, ok = load_json_or_literal(block)
    if not ok or not is_mapping(value):
        return None
    function = value.get("function")  # OpenAI's {"type": "function", "function": {...}}
    if is_mapping(function) and "name" in function:
        value = function
    name, arguments = value.get("name"), value.get("arguments", value.get("parameters"))
    if isinstance(arguments, str):  # arguments as a JSON string (OpenAI, some Hermes templates)
        arguments, ok = load_json(arguments)
        if not ok:
            return None
    if not isinstance(name, str) or not is_mapping(arguments):
        return None
    return name, {str(k): v for k, v in arguments.items()}, [], block


def _text_call(
    text: str, open_at: int, limit: int = _MAX_CALL_CHARS
) -> tuple[tuple[str, dict[str, Any], list[Any], str] | None, int]:
    """``(name, keywords, positional, text)`` of ``name(...)`` whose ``(`` ends at ``open_at`` (None when it is no
    call), and how many characters were scanned (its arguments are looked for within ``limit``)."""
    name_end = text.rfind("(", 0, open_at)
    head = text[max(0, name_end - 200) : name_end].rstrip()
    name = _call_name(head)
    if not name:
        return None, 0
    parts, stop = _split_arguments(text, open_at, limit)
    if parts is None:
        return None, stop - open_at
    keywords: dict[str, Any] = {}
    positional: list[Any] = []
    for part in parts:
        key = re.match(r"^\s*([A-Za-z_]\w*)\s*[=:]\s*(.*)$", part, re.S)
        if key is not None and not part.lstrip().startswith("<"):
            keywords[key.group(1)] = _value(key.group(2))
        elif part.strip():
            positional.append(_value(part))
    return (name, keywords, positional, text[name_end - len(name) : stop]), stop - open_at


def _call_name(head: str) -> str:
    r"""The identifier (``[A-Za-z_][\w.-]*``) that ends ``head``, or "".

    Read backwards: a search for the pattern anchored at the end would try every start in a long run of
    name characters, each to the end of the run (quadratic in it).
    """
    run = _NAME_REVERSED.match(head[::-1])
    tail = head[len(head) - run.end() :] if run is not None else ""
    first = _NAME_START.search(tail)
    return tail[first.start() :] if first is not None else ""


def _split_arguments(text: str, start: int, limit: int = _MAX_CALL_CHARS) -> tuple[list[str] | None, int]:
    """The top-level comma-separated arguments from ``start`` to the matching ``)`` (within ``limit`` characters)."""
    depth, quote, parts, begin = 0, "", [], start
    stop = min(len(text), start + limit)
    for i in range(start, stop):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in "]}>" and depth > 0:
            depth -= 1
        elif ch == ")":
            if depth == 0:
                parts.append(text[begin:i])
                return parts, i + 1
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[begin:i])
            begin = i + 1
    return None, stop


def _value(written: str) -> Any:
    """One argument's value: ``<point>(x, y)</point>`` as ``[x, y]``, else JSON, else a Python literal, else the text."""
    written = written.strip()
    point = _POINT.fullmatch(written)
    if point is not None:
        values = [_number(point.group(1)), _number(point.group(2))]
        return values if None not in values else written
    if written.startswith("(") and written.endswith(")"):
        written = "[" + written[1:-1] + "]"  # a tuple written in a call: its values in order
    value, ok = load_json(written)
    if not ok:
        value, ok = load_json_or_literal(written)
    return value if ok else written


def _number(text: str) -> float | int | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def _geometry(tool: ToolCall, keywords: Mapping[str, Any], positional: list[Any]) -> Any:
    """The declared argument's value (or the declared arguments' values, in order); None when one is missing.

    Positional arguments count only in a call without keyword arguments: the declared names take them in
    order; one declared name with several positional numbers (``click(100, 200)`` for ``"coordinate"``)
    takes them all, in order.
    """
    if tool.single:
        name = tool.arguments[0]
        if name in keywords:
            value = keywords[name]
        elif keywords or not positional:
            return None
        elif len(positional) == 1:
            value = positional[0]
        else:
            value = positional
        return _value(value) if isinstance(value, str) and "<point>" in value else value
    values = []
    for i, name in enumerate(tool.arguments):
        if name in keywords:
            values.append(keywords[name])
        elif i < len(positional) and not keywords:
            values.append(positional[i])
        else:
            return None
    return values
