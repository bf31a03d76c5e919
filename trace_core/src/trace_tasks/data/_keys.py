"""Exact keys for caller data (instances, contracts, answers): remembered work is found by content."""

from __future__ import annotations

import io
import pickle
from typing import Any

__all__ = ["content_key"]


def content_key(value: Any) -> bytes | None:
    """``value``'s pickle: equal bytes are equal content of equal types (``None`` when it cannot be pickled).

    Every type has its own opcodes (``1``, ``1.0`` and ``true`` differ; floats
    bit for bit; a numpy array carries its dtype and shape; a subclass names its
    class), so two values with one key are alike for every check and score. The
    pickler runs without its memo ("fast" mode), so sharing leaves no trace: a
    row decoded from JSON (whose parser shares repeated keys) and the same row
    built in Python get one key. Key order does count: the same content in
    another order is checked or compiled again, with the same result.

    ``marshal`` writes any buffer (a numpy array, a ``bytearray``) as plain
    bytes, so an int and a float array of the same bits would share a key; a
    canonical JSON text with sorted keys cost four times as much.
    """
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True  # no memo: the bytes follow the content, not which objects are shared
    try:
        pickler.dump(value)
    except Exception:  # a lock, a lambda, a local class, a cycle, nesting too deep: no key
        return None
    return out.getvalue()
