"""Cheap type checks for the per-response hot path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, with the common ``dict`` case checked first.

    An ABC ``isinstance`` costs several times a plain type test, and the scorer
    asks this of every instance field and parsed object.
    """
    return type(value) is dict or isinstance(value, Mapping)
