"""In-process plugin fixtures: registration that always cleans up, and the circle example on sys.path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trace_tasks.plugins import register_plugin, reset_registry, unregister_plugin

REPO = Path(__file__).resolve().parents[2]
CIRCLE_SRC = REPO / "examples" / "circle_family" / "src"


@pytest.fixture
def register() -> Iterator[Callable[[object, str], None]]:
    """``register(plugin, name)`` for the duration of one test.

    Whatever the test does (fails, raises, registers several plugins), every
    plugin it registered is unregistered and the cached registry is dropped, so
    the next test sees exactly the installed entry points again.
    """
    names: list[str] = []

    def add(plugin: object, name: str) -> None:
        register_plugin(plugin, name)  # raises (and registers nothing) for an invalid plugin
        names.append(name)

    try:
        yield add
    finally:
        for name in reversed(names):
            unregister_plugin(name)
        reset_registry()


@pytest.fixture
def circle_plugin(monkeypatch: pytest.MonkeyPatch) -> object:
    """The example's plugin module, imported from its source folder (it is not a workspace member).

    Only ``sys.path`` changes, so the maths can be tested in-process; the real
    install through its entry point is tested in ``tests/packaging``.
    """
    monkeypatch.syspath_prepend(str(CIRCLE_SRC))
    import trace_plugins_circle.plugin as plugin

    return plugin.family  # what its entry point names
