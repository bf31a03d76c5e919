"""Reading JSON, and (for compatibility) Python literal mappings, without ever raising.

JSON is the contract. Some existing pipelines emit Python literals
(``{'answer': (1, 2)}``), so a bounded literal reader is tried second. It never
evaluates code (``ast.literal_eval`` only builds constants and containers) and it
refuses oversized or deeply nested text up front, so a hostile string costs at
most a few milliseconds. Every failure is reported as "not parsed".

``ast.literal_eval`` costs up to ~2 us per character, so many strings read one
after another (the values of a 10,000-key set-map, each a 64 KiB literal) could
add up to seconds. :func:`literal_budget` caps the total characters the literal
reader accepts while scoring one response; past it, strings are "not parsed".
"""

from __future__ import annotations

import ast
import json
from contextvars import ContextVar
from typing import Any

from trace_tasks.limits import MAX_LITERAL_CHARS, MAX_LITERAL_DEPTH

_json_loads = json.JSONDecoder().decode
_OPENERS = frozenset("([{")
_CLOSERS = frozenset(")]}")
#: Characters the literal reader may still accept in the current scoring call
#: (a one-item list so nested readers share it); None: no budget in force.
_budget: ContextVar[list[int] | None] = ContextVar("trace_tasks_literal_budget", default=None)
#: What one call to the literal reader costs at least, in budget characters:
#: ``ast.literal_eval`` spends ~15-30 us per call however short the text.
MIN_LITERAL_CHARGE = 64


class literal_budget:
    """Within the block, literal reads draw ``max(len(text), MIN_LITERAL_CHARGE)``
    characters from ``remaining[0]``; a read that does not fit is "not parsed".

    Pass the same list to several blocks to share one budget between them. A
    class rather than ``contextlib.contextmanager``: it is entered on every scored
    response, and a generator-based manager costs several times more.
    """

    __slots__ = ("_remaining", "_token")

    def __init__(self, remaining: list[int]) -> None:
        self._remaining = remaining

    def __enter__(self) -> None:
        self._token = _budget.set(self._remaining)

    def __exit__(self, *exc: object) -> None:
        _budget.reset(self._token)


def load_json(text: str) -> tuple[Any, bool]:
    """``json.loads`` that reports failure instead of raising (depth, digits, syntax)."""
    try:
        return _json_loads(text), True
    except (ValueError, RecursionError, MemoryError, TypeError):
        return None, False


def _nesting_depth(text: str, limit: int) -> int:
    # Exceeds ``limit`` exactly when the bracket nesting does (0 when it cannot).
    # Counts brackets inside quotes too: an over-estimate is a safe refusal.
    # Fast path (three C-speed counts): with at most ``limit`` openers in all,
    # no nesting can exceed ``limit``; only bracket-heavy text walks characters.
    if text.count("(") + text.count("[") + text.count("{") <= limit:
        return 0
    depth = peak = 0
    for ch in text:
        if ch in _OPENERS:
            depth += 1
            if depth > peak:
                peak = depth
                if peak > limit:
                    return peak
        elif ch in _CLOSERS:
            depth -= 1
    return peak


def load_literal(text: str) -> tuple[Any, bool]:
    """Read a Python literal, bounded in size and nesting; failure is ``(None, False)``."""
    if len(text) > MAX_LITERAL_CHARS or "\x00" in text:
        return None, False
    budget = _budget.get()
    if budget is not None:
        cost = max(len(text), MIN_LITERAL_CHARGE)
        if cost > budget[0]:
            return None, False
        budget[0] -= cost
    if _nesting_depth(text, MAX_LITERAL_DEPTH) > MAX_LITERAL_DEPTH:
        return None, False
    try:
        return ast.literal_eval(text.strip()), True
    except Exception:  # SyntaxError, ValueError, MemoryError, RecursionError...: all "not a literal"
        return None, False


def load_json_or_literal(text: str) -> tuple[Any, bool]:
    """JSON first, then the bounded literal reader."""
    value, ok = load_json(text)
    if ok:
        return value, True
    return load_literal(text)


def read_annotation_string(text: str) -> tuple[Any, bool]:
    """Read an annotation given as a string (``"[0, 0, 10, 10]"``, ``"(0, 0, 10, 10)"``)."""
    return load_json_or_literal(text)
