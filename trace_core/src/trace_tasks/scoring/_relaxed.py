"""Evaluation answer policies: ChartQA's relaxed number match and option letters as models write them.

An evaluation view, never the default training reward (``answer_exact_match_v0``
scores ``19.49`` against ``19.5`` as 0, by contract). Both readers are linear in
the text (one pass of regular expressions without nested repetition) and return
``None``/``False`` on anything they cannot read; a text that names two different
numbers or two different letters earns nothing (a hedge is not an answer).
"""

from __future__ import annotations

import math
import re
from typing import Any

from trace_tasks.limits import MAX_RESPONSE_CHARS
from trace_tasks.scoring._answers import read_string_literal

__all__ = ["RELAXED_TOLERANCE", "read_number", "read_option_letter", "relaxed_match", "relaxed_number_match"]

#: ChartQA's relaxed accuracy: within 5% of the target, relative.
RELAXED_TOLERANCE = 0.05

#: The minus sign (U+2212) of typeset mathematics, as models copy it from LaTeX-rendered text: a sign, not a
#: separator (read as nothing, "−5" was the number 5: a sign error earned the reward).
_MINUS = "\u2212"
# A number as written in an answer: sign, digits with optional thousands commas, a decimal part, an exponent.
_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"|(?<![\w.])[-+\u2212]?\.\d+(?:[eE][-+]?\d+)?"
)
# The letter forms, case-insensitive ("(b)", "b.", "\boxed{b}"), except "the answer is a ...", where a lower-case
# letter is an article: "Answer: b" (with its colon) reads, "the answer is a dog" does not.
_LETTER_FORMS = (
    re.compile(r"\(([A-Za-z])\)"),  # (B)
    re.compile(r"(?:^|\s)([A-Za-z])[.)](?=\s|$)"),  # B.  B) Settings
    re.compile(r"(?i:answer)(?:\s+is)?(?:\s*[:：])?[ \t]*\(?([A-Z])\b"),  # Answer: B, the answer is B
    re.compile(r"(?i:answer)(?:\s+is)?\s*[:：][ \t]*\(?([a-z])\b"),  # Answer: b
    re.compile(r"\\boxed\{\s*\(?([A-Za-z])\)?\s*\}"),  # \boxed{B}
)


def read_number(value: Any) -> float | None:
    """The one number a predicted answer names, or ``None`` (none, two different ones, not finite)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)  # an int beyond the floats (10**400) overflows: no number
        except OverflowError:
            return None
        return number if math.isfinite(number) else None
    if not isinstance(value, str) or len(value) > MAX_RESPONSE_CHARS:
        return None
    found: set[float] = set()
    for match in _NUMBER.finditer(value):
        try:
            number = float(match.group(0).replace(",", "").replace(_MINUS, "-"))
        except (ValueError, OverflowError):
            return None
        if not math.isfinite(number):
            return None
        found.add(number)
        if len(found) > 1:
            return None
    return found.pop() if found else None


def relaxed_number_match(predicted: Any, target: Any, tolerance: float = RELAXED_TOLERANCE) -> bool:
    """ChartQA's relaxed accuracy: ``|p - t| <= tolerance * |t|`` (a target of 0 needs exactly 0)."""
    p, t = read_number(predicted), read_number(target)
    if p is None or t is None:
        return False
    return abs(p - t) <= tolerance * abs(t)


def read_option_letter(value: Any) -> str | None:
    """The one option letter a predicted answer names (upper case), or ``None``.

    Read from ``B``, ``(B)``, ``B.``, ``B) Settings``, ``Answer: B`` and ``\\boxed{B}``;
    two different letters (``(B) or (C)``) give ``None``.
    """
    if not isinstance(value, str) or len(value) > MAX_RESPONSE_CHARS:
        return None
    text = value.strip()
    if len(text) == 1:
        return text.upper() if text.isascii() and text.isalpha() else None
    found: set[str] = set()
    for form in _LETTER_FORMS:
        found.update(letter.upper() for letter in form.findall(text))
        if len(found) > 1:
            return None
    return found.pop() if found else None


def relaxed_match(predicted: Any, relaxed: tuple[str, Any], tolerance: float = RELAXED_TOLERANCE) -> bool:
    """``answer_relaxed_match_v0``: ``relaxed`` is ``(answer type, raw answer_gt value)``.

    ``number``: :func:`relaxed_number_match` within ``tolerance`` (relative);
    ``option_letter``: the one letter the prediction names equals the target's.
    Both values are first read as every answer type but ``string`` reads them
    (:func:`~trace_tasks.scoring._answers.read_string_literal`): the target
    ``'"B"'`` is ``B``, as it is for the exact match.
    """
    kind, target = relaxed
    predicted, target = read_string_literal(predicted), read_string_literal(target)
    if kind == "number":
        return relaxed_number_match(predicted, target, tolerance)
    letter = read_option_letter(predicted)
    return letter is not None and isinstance(target, str) and letter == target.strip().upper()
