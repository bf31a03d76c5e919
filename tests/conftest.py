"""Session-wide test set-up: the ``slow`` marker's implications and one local Ray for every test that needs it.

Tests marked ``ray``, ``packaging`` or ``megabyte`` are also ``slow``, so
``uv run pytest -m "not slow"`` (the inner loop) leaves them out; plain
``uv run pytest`` runs everything. Starting Ray costs seconds, so it starts at
most once per run, when the first test asking for ``ray_session`` runs, and
stops at the end of the session. Tests marked ``ray`` are moved to the end of
the run (keeping their relative order), so the Ray processes are alive only
while those tests run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.pools import FakeExecutor

#: Markers whose tests are always also ``slow`` (so ``-m "not slow"`` leaves them out even if a file forgets it).
IMPLY_SLOW = ("ray", "packaging", "megabyte")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects anything
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in IMPLY_SLOW) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("ray") is not None)  # stable: the rest keeps its order


@pytest.fixture(scope="session")
def ray_session() -> Iterator[ModuleType]:
    """The ``ray`` module with a local Ray (2 CPUs, no dashboard) running for the rest of the session.

    Code under test that finds Ray running uses it and leaves it running
    (``score_rows_with_ray``, ``trace-tasks score --engine ray``).
    """
    # Under `uv run`, Ray by default starts every worker through `uv run` too, packaging the
    # checkout and re-syncing the environment per worker: slow, and racy while others edit the
    # workspace. The workers here run in the same virtualenv, so use its Python directly.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray = pytest.importorskip("ray", reason="the [ray] extra is part of the dev environment; skipped only without it")
    if ray.is_initialized():  # started by someone else (a plugin, an earlier test): use it as it is
        yield ray
        return
    # address="local": a Ray of our own even while another runs on this machine (a cluster test, a benchmark).
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def fake_pool(monkeypatch: pytest.MonkeyPatch) -> type[FakeExecutor]:
    """``score --workers N``'s pool replaced by :class:`~tests.support.pools.FakeExecutor` (no process starts)."""
    from trace_tasks.runs import _engine

    FakeExecutor.reset()
    monkeypatch.setattr(_engine._Pool, "_start", lambda self: FakeExecutor())
    return FakeExecutor
