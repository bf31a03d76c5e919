"""Exact keys for caller data (instances, contracts, answers): remembered work is found by content."""

from __future__ import annotations

import io
import pickle
import sys
from typing import Any

import numpy as np

from trace_tasks.limits import MAX_JSON_DEPTH

__all__ = ["content_key"]

#: Values the depth walk never looks into: pickled without recursing.
_FLAT = frozenset((str, int, float, bool, type(None), bytes, complex))
_CONTAINERS = (dict, list, tuple, set, frozenset)


def _plain_and_shallow(value: Any) -> bool:
    """Whether ``value`` is plain data (containers, scalars, numeric arrays) nested at most ``MAX_JSON_DEPTH`` deep.

    One iterative walk; anything the pickler would reach through ``__reduce__`` (an
    object, an object array) is not plain, as its depth cannot be seen from here.
    """
    stack = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_JSON_DEPTH:
            return False
        kind = type(item)
        if kind is dict:
            push((list(item), depth + 1))  # the keys: a tuple key holds values too
            item = item.values()
        elif kind in _CONTAINERS:
            pass
        elif kind is np.ndarray and not item.dtype.hasobject:
            continue
        else:
            return False
        for inner in item:
            if type(inner) not in _FLAT:
                push((inner, depth + 1))
    return True


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

    The C pickler recurses once per level, bounded only by the interpreter's
    recursion limit: under the default limit a deep value raises (no key), but
    a host that raises the limit would let ``[[[...]]]`` 50,000 deep overflow
    the C stack (SIGSEGV) before any check could name it. So under a limit
    above ``MAX_JSON_DEPTH`` a value is walked first, iteratively, and one
    nested deeper (or reaching objects the walk cannot see into) has no key.
    """
    if sys.getrecursionlimit() > MAX_JSON_DEPTH and not _plain_and_shallow(value):
        return None
    try:
        out, pickler = _idle.pop()  # atomic: each pickler serves one call at a time, whatever the threads
    except IndexError:
        out = io.BytesIO()
        pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.fast = True  # no memo: the bytes follow the content, not which objects are shared
    try:
        pickler.dump(value)
    except Exception:  # a lock, a lambda, a local class, a cycle, nesting too deep: no key (and the pickler is dropped)
        return None
    key = out.getvalue()
    if len(key) <= _REUSED_BUFFER_BYTES and len(_idle) < _IDLE_MAX:
        out.seek(0)
        out.truncate()
        _idle.append((out, pickler))
    return key


#: Picklers (with their buffers) between two :func:`content_key` calls: building one costs more than
#: pickling a small instance (a pickler in fast mode keeps nothing from one dump to the next).
_idle: list[tuple[io.BytesIO, pickle.Pickler]] = []
#: Most idle picklers kept (one per thread keying at once is enough) ...
_IDLE_MAX = 16
#: ... and the largest key after which a pickler is still kept (its buffer's memory is not).
_REUSED_BUFFER_BYTES = 1 << 20
