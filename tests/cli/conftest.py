"""Fixtures of the CLI tests: in-process plugin registration and the circle example (shared with tests/plugins)."""

from __future__ import annotations

from tests.plugins.conftest import circle_plugin, register

__all__ = ["circle_plugin", "register"]
