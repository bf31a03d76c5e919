"""Reading JSON, and (for compatibility) Python literal mappings, without ever raising.

JSON is the contract. Some existing pipelines emit Python literals
(``{'answer': (1, 2)}``), so a bounded literal reader is tried second. It never
evaluates code (``ast.literal_eval`` only builds constants and containers) and it
refuses oversized or deeply nested text up front, so a hostile string costs at
most a few milliseconds. Every failure is reported as "not parsed".
"""

from __future__ import annotations

import ast
import json
from typing import Any

from trace_tasks.limits import MAX_LITERAL_CHARS, MAX_LITERAL_DEPTH

_json_loads = json.JSONDecoder().decode
_OPENERS = frozenset("([{")
_CLOSERS = frozenset(")]}")


def load_json(text: str) -> tuple[Any, bool]:
    """``json.loads`` that reports failure instead of raising (depth, digits, syntax)."""
    try:
        return _json_loads(text), True
    except (ValueError, RecursionError, MemoryError, TypeError):
        return None, False


def _nesting_depth(text: str, limit: int) -> int:
    # Counts brackets inside quotes too: an over-estimate is a safe refusal.
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
