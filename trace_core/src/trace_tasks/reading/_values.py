"""Plain Python values from numpy ones, and the cheap tests of values the hot path uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, with the common ``dict`` case checked first.

    An ABC ``isinstance`` costs several times a plain type test, and the scorer
    asks this of every instance field and parsed object.
    """
    return type(value) is dict or isinstance(value, Mapping)


_LIST = frozenset((list,))


def holds_only(value: Any, kinds: frozenset[type]) -> bool:
    """Whether ``value`` is a list, or a list of lists, whose items' exact types are all in ``kinds``.

    The answer checks' shortcut for the usual targets (``[2, 0, 1]``, a matrix
    of whole numbers): type tests in C, no walk.
    """
    if type(value) is not list:
        return False
    held = set(map(type, value))
    return held <= kinds or (held == _LIST and all(set(map(type, row)) <= kinds for row in value))


#: Built-in types no numpy value has (``np.float64`` subclasses ``float`` but is not ``float``).
_PLAIN_TYPES = frozenset((list, dict, str, int, float, bool, tuple, type(None)))


def from_numpy(value: Any) -> Any:
    """A numpy array or scalar as plain Python values; anything else unchanged.

    Datasets read through pandas, pyarrow or parquet hand ground truth over as
    numpy arrays and scalars (``np.int64(7)`` is not an ``int``); without this
    they would silently never match. Object arrays are converted element-wise.
    """
    if type(value) in _PLAIN_TYPES:  # the hot path's values: no numpy lookup at all
        return value
    import numpy as np  # already imported by every caller; kept local to keep this module light

    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [from_numpy(v) for v in value]
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
