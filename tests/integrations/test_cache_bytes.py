"""The compiled-label caches are bounded by bytes, not only by count (issue 37, item 10).

Bounded by 4,096 entries alone, a stream of distinct 1 MiB labels kept about
3 MiB each (the raw JSON key, the content key and the compiled instance): about
12 GiB at the cap, in a reward server or a trainer's reward worker. Each cache
now charges an entry an estimate measured on large instances
(``limits.INSTANCE_ENTRY_BYTES_PER_KEY_BYTE`` per byte of its key) against
``limits.MAX_INSTANCE_CACHE_BYTES``.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator

import pytest

from trace_tasks import limits
from trace_tasks.data import InstanceCache
from trace_tasks.integrations import _common, verl
from trace_tasks.integrations.openrlhf import score_queries

from .helpers import INSTANCES, RESPONSES, instance

BOUND = 8 * 1024 * 1024


def _label(i: int, size: int = 256 * 1024) -> str:
    """A distinct valid instance about ``size`` bytes long, as the JSON string a dataset column holds."""
    answer = {"type": "string", "value": f"{i}-" + "x" * size}
    return json.dumps(instance(answer, {"type": "bbox", "value": [0, 0, 10, 10]}))


@pytest.fixture
def small_caches(monkeypatch: pytest.MonkeyPatch) -> Iterator[InstanceCache]:
    cache = InstanceCache(maxbytes=BOUND)
    monkeypatch.setattr(_common, "INSTANCE_CACHE", cache)  # the server validates through this one too
    monkeypatch.setattr(_common, "_RAW_MAX_BYTES", BOUND)
    _common.clear_instance_caches()
    yield cache
    _common.clear_instance_caches()


def test_many_big_labels_keep_memory_flat(small_caches: InstanceCache) -> None:
    labels = [_label(i) for i in range(64)]  # 16 MiB of labels: 48 MiB kept when bounded by count
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for label in labels:
            got = score_queries([RESPONSES[0]], None, [label])  # the reward server's path
            assert got["rewards"] == [0.0]
            verl.compute_score("trace", RESPONSES[0], label)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert kept < 2 * BOUND, f"{kept} bytes kept for 64 distinct 256 KiB labels"
    assert 0 < len(small_caches) < 64 and 0 < small_caches.nbytes <= BOUND
    assert 0 < len(_common._raw) < 64 and _common._raw_bytes[0] <= BOUND


def test_labels_of_many_empty_containers_keep_memory_flat(small_caches: InstanceCache, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty list is one byte of key and 64 bytes parsed: charged by their key's length alone, labels of
    # many [] kept ~5 times the bound (651 MB at the default 128 MiB).
    from trace_tasks.integrations import server

    monkeypatch.setattr(server, "quick_compile", lambda label, skip: None)  # the cache's path (the native lane keeps nothing)

    labels = []
    for i in range(24):
        label = instance({"type": "integer", "value": i}, {"type": "bbox", "value": [0, 0, 10, 10]})
        label["metadata"] = {"x": [[]] * 60_000}  # 240 KB of JSON, ~4 MB parsed
        labels.append(json.dumps(label))
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for label in labels:
            server.validate_labels([json.loads(label)])  # the server's path: an object, keyed by its pickle
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert kept < 2 * BOUND, f"{kept} bytes kept for 24 distinct labels of 60,000 empty lists"
    assert 0 < len(small_caches) < 24 and small_caches.nbytes <= BOUND


def test_small_labels_are_still_kept_by_count() -> None:
    cache = InstanceCache(maxsize=3)
    for inst in INSTANCES:
        cache.compile(inst)
    assert len(cache) == 3 and cache.maxbytes == limits.MAX_INSTANCE_CACHE_BYTES
    assert _common.INSTANCE_CACHE.maxbytes == limits.MAX_INSTANCE_CACHE_BYTES


def test_the_bytes_follow_evictions_and_a_label_over_the_bound_is_not_kept() -> None:
    cache = InstanceCache(maxbytes=BOUND)
    big = json.loads(_label(0, size=BOUND))  # charged more than the whole bound
    cache.compile(big)
    assert len(cache) == 0 and cache.nbytes == 0
    for i in range(16):
        cache.compile(json.loads(_label(i, size=64 * 1024)))
    assert 0 < len(cache) < 16 and cache.nbytes <= BOUND
    cache.clear()
    assert cache.nbytes == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_maxbytes_must_be_a_count_of_bytes(bad: object) -> None:
    with pytest.raises(ValueError, match="maxbytes must be a non-negative integer"):
        InstanceCache(maxbytes=bad)  # type: ignore[arg-type]


def test_the_raw_labels_are_charged_once_and_their_tally_follows_evictions(
    small_caches: InstanceCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each raw label is charged when kept, and dropping it subtracts that charge without counting its text again
    (a full cache drops one label for each new one: counting it twice cost a server as much as its decode)."""
    charged: list[object] = []
    cost = _common.entry_cost
    monkeypatch.setattr(_common, "entry_cost", lambda key: charged.append(key) or cost(key))
    labels = [_label(i) for i in range(24)]  # ~3 MiB charged each: most are dropped
    for label in labels:
        score_queries([RESPONSES[0]], None, [label])
    assert [key for key in charged if isinstance(key, str)] == labels  # each text counted once, kept or dropped later
    assert 0 < len(_common._raw) < len(labels)
    assert _common._raw_bytes[0] == sum(kept for _, kept in _common._raw.values()) <= BOUND
    assert all(kept == cost(key) for key, (_, kept) in _common._raw.items())
