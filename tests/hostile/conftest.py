"""Registers the ``megabyte`` marker: hostile responses of about 1 MiB.

They run by default (CI included); select them alone with ``-m megabyte`` or
skip them locally with ``-m "not megabyte"``. Their cost is measured by
``benchmarks/hostile_scaling.py``, never asserted here.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "megabyte: a hostile response of about one MiB (fast; runs in CI)")
