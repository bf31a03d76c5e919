"""Compiled instances by content: a bounded, thread-safe LRU, so a GRPO group pays for its ground truth once."""

from __future__ import annotations

import collections
import json
import pickle
import threading
from collections.abc import Mapping
from typing import Any

from trace_tasks.data._compiled import CompiledInstance, compile_instance
from trace_tasks.errors import InstanceError, OptionError, Problem
from trace_tasks.plugins import Registry, get_registry

__all__ = ["InstanceCache"]

#: What the cache holds per instance: the compiled instance, or the problems of an invalid one.
_Entry = CompiledInstance | tuple[Problem, ...]


def _content_key(data: Any) -> str:
    """The canonical JSON of an instance: equal content, equal key (key order ignored; 1, 1.0 and true differ)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _fast_key(data: Any) -> bytes | None:
    """The instance's pickle: a cheap exact key for the same content built the same way (``None`` if none).

    Writing JSON costs about four times as much (every float goes through
    ``repr``), so a repeated instance is found through its pickle first; equal
    pickles always have equal canonical JSON.
    """
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None


class InstanceCache:
    """Compiled instances by content: a bounded LRU keyed by the instance's canonical JSON.

    A GRPO group of 8-16 rollouts, or a dataset seen every epoch, pays for its
    ground truth once. Invalid instances are remembered too: :meth:`compile`
    raises the same :class:`InstanceError` again (naming the new ``record``).
    An instance that is not JSON-serialisable (numpy values, sets) is compiled
    without the cache. The cache empties itself when the plugin registry is
    rebuilt. Safe to share between threads.

    Lookups go through the instance's pickle first (cheap, exact for content
    built the same way), then its canonical JSON (key order ignored).
    """

    def __init__(self, maxsize: int = 4096) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 0:
            raise OptionError(f"maxsize must be a non-negative integer, got {maxsize!r}")
        self.maxsize = maxsize
        self._entries: collections.OrderedDict[str, _Entry] = collections.OrderedDict()
        self._fast: collections.OrderedDict[bytes, str] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._registry: Registry | None = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._fast.clear()

    def _lookup(self, fast: bytes | None, key: str | None, registry: Registry) -> tuple[str | None, _Entry | None]:
        """(the canonical key when known, the cached entry or None); call with the lock held."""
        if self._registry is not registry:
            self._entries.clear()
            self._fast.clear()
            self._registry = registry
        if key is None and fast is not None:
            key = self._fast.get(fast)
            if key is not None:
                self._fast.move_to_end(fast)
        entry = self._entries.get(key) if key is not None else None
        if entry is not None:
            self._entries.move_to_end(key)  # type: ignore[arg-type]
            self.hits += 1
        return key, entry

    def _store(self, fast: bytes | None, key: str, entry: _Entry, registry: Registry) -> None:
        """Remember ``entry`` (bounded); call with the lock held."""
        if not self.maxsize or self._registry is not registry:
            return
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
        if fast is not None:
            self._fast[fast] = key
            self._fast.move_to_end(fast)
            while len(self._fast) > self.maxsize:
                self._fast.popitem(last=False)

    def compile(self, data: Mapping[str, Any], *, record: str | None = None) -> CompiledInstance:
        """The compiled instance of ``data``, from the cache when the same content was compiled before.

        Raises :class:`InstanceError` for an invalid instance (cached by content as well).
        """
        if not self.maxsize:
            return compile_instance(data, record=record)
        registry = get_registry()
        fast = _fast_key(data)
        with self._lock:
            key, entry = self._lookup(fast, None, registry)
        if entry is None and key is None:
            try:
                key = _content_key(data)
            except (TypeError, ValueError, RecursionError):  # not JSON: compile it uncached
                return compile_instance(data, record=record)
            with self._lock:
                key, entry = self._lookup(None, key, registry)
                if entry is not None and fast is not None and key is not None:
                    self._store(fast, key, entry, registry)  # the same content, built another way
        if entry is None:
            try:
                entry = compile_instance(data)
            except InstanceError as exc:
                entry = exc.problems
            with self._lock:
                self.misses += 1
                self._store(fast, key, entry, registry)  # type: ignore[arg-type]
        if isinstance(entry, tuple):
            raise InstanceError(entry, record=record)
        return entry
