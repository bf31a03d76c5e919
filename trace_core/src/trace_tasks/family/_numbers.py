"""The family API's numeric functions as callers see them: arguments read as plain numbers first.

:func:`trace_tasks.family._distance.soft_similarity` does arithmetic on its arguments, which would run a
``float`` subclass's own methods; the native build's kernels (docs/compiled.md) read such a number as the
plain value it holds. The door exports the wrapper below, which reads the arguments as plain numbers
first (an ``int`` becomes a float, anything else is a ``TypeError``), so every build gives the same
result (issue 37, item 17).
"""

from __future__ import annotations

from typing import Any

from trace_tasks.family._distance import soft_similarity as _soft_similarity

__all__ = ["soft_similarity"]


def _number(value: Any, name: str) -> float:
    if isinstance(value, float):
        return float.__float__(value)  # the float it holds, whatever the subclass overrides
    if isinstance(value, int):  # bool included: True is 1.0, as the compiled boundary reads it
        return float(int.__int__(value))
    raise TypeError(f"soft_similarity: {name} must be a number (an int or a float), got {type(value).__name__}")


def soft_similarity(distance: float, half_life: float) -> float:
    """exp(-ln 2 * (distance / half_life)^2), 0.0 for non-finite or enormous distances.

    ``distance`` and ``half_life`` are read as the plain numbers they hold (a
    ``float`` or ``int`` subclass's own methods are not called); anything else
    is a ``TypeError``. The same in the pure and the compiled build.
    """
    if type(distance) is not float or type(half_life) is not float:
        distance, half_life = _number(distance, "distance"), _number(half_life, "half_life")
    return _soft_similarity(distance, half_life)
