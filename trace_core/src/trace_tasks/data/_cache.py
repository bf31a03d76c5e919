"""Compiled instances by content: a bounded, thread-safe LRU, so a GRPO group pays for its ground truth once."""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import Any

from trace_tasks.data._compiled import CompiledInstance, compile_instance
from trace_tasks.data._keys import content_key
from trace_tasks.errors import InstanceError, OptionError, Problem
from trace_tasks.limits import (
    INSTANCE_ENTRY_BYTES_PER_CONTAINER,
    INSTANCE_ENTRY_BYTES_PER_KEY_BYTE,
    INSTANCE_ENTRY_MIN_BYTES,
    MAX_INSTANCE_CACHE_BYTES,
)
from trace_tasks.plugins import Registry, get_registry

__all__ = ["InstanceCache"]

#: What the cache holds per instance: the compiled instance, or the problems of an invalid one.
_Entry = CompiledInstance | tuple[Problem, ...]


def entry_cost(key: bytes | str) -> int:
    """The estimated bytes a cached compiled instance keeps, from its key's length and the containers it
    opens (see ``limits.py``): a pickle's ``]`` and ``}`` opcodes, a JSON text's ``[`` and ``{``."""
    opened = key.count(b"]") + key.count(b"}") if isinstance(key, bytes) else key.count("[") + key.count("{")
    return INSTANCE_ENTRY_MIN_BYTES + INSTANCE_ENTRY_BYTES_PER_KEY_BYTE * len(key) + INSTANCE_ENTRY_BYTES_PER_CONTAINER * opened


class InstanceCache:
    """Compiled instances by content: a bounded LRU keyed by the instance's exact content.

    A GRPO group of 8-16 rollouts, or a dataset seen every epoch, pays for its
    ground truth once. Invalid instances are remembered too: :meth:`compile`
    raises the same :class:`InstanceError` again (naming the new ``record``).
    The key is the instance's pickle (:func:`~trace_tasks.data._keys.content_key`:
    ``1``, ``1.0`` and ``true`` differ; the same content in another key order
    is compiled again, with the same result); an instance that cannot be
    pickled is compiled without the cache. The cache empties itself when the
    plugin registry is rebuilt. Safe to share between threads.

    Bounded by entries (``maxsize``) and by bytes (``maxbytes``, default
    :data:`~trace_tasks.limits.MAX_INSTANCE_CACHE_BYTES`): each entry is charged
    :func:`entry_cost` of its key, an estimate measured on large instances, so a
    stream of distinct megabyte labels keeps memory flat instead of growing to
    ``maxsize`` of them. An entry costing more than ``maxbytes`` is not kept.
    """

    def __init__(self, maxsize: int = 4096, maxbytes: int = MAX_INSTANCE_CACHE_BYTES) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 0:
            raise OptionError(f"maxsize must be a non-negative integer, got {maxsize!r}")
        if not isinstance(maxbytes, int) or isinstance(maxbytes, bool) or maxbytes < 0:
            raise OptionError(f"maxbytes must be a non-negative integer, got {maxbytes!r}")
        self.maxsize = maxsize
        self.maxbytes = maxbytes
        #: The estimated bytes of the entries held (:func:`entry_cost` of each key).
        self.nbytes = 0
        self._entries: collections.OrderedDict[bytes, _Entry] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._registry: Registry | None = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0

    def compile(self, data: Mapping[str, Any], *, record: str | None = None) -> CompiledInstance:
        """The compiled instance of ``data``, from the cache when the same content was compiled before.

        Raises :class:`InstanceError` for an invalid instance (cached by content as well).
        """
        key = content_key(data) if self.maxsize else None
        if key is None:
            return compile_instance(data, record=record)
        registry = get_registry()
        with self._lock:
            if self._registry is not registry:
                self._entries.clear()
                self.nbytes = 0
                self._registry = registry
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if entry is None:
            try:
                entry = compile_instance(data)
            except InstanceError as exc:
                entry = exc.problems
            with self._lock:
                self.misses += 1
                cost = entry_cost(key)
                if self._registry is registry and key not in self._entries and cost <= self.maxbytes:
                    self._entries[key] = entry
                    self.nbytes += cost
                    while len(self._entries) > self.maxsize or self.nbytes > self.maxbytes:
                        dropped, _ = self._entries.popitem(last=False)
                        self.nbytes -= entry_cost(dropped)
        if isinstance(entry, tuple):
            raise InstanceError(entry, record=record)
        return entry
