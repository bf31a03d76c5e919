"""Which build runs: ``trace_tasks.__build__`` and :mod:`trace_tasks._build`.

The normal suite runs on the pure editable install and expects ``"pure"``; the
native pass (``.ci/compiled``) sets ``TRACE_TASKS_EXPECT_BUILD=native`` and
runs the same suite against the native wheel, so this file also proves that pass
imported the native module and that the pipeline calls it.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types

import pytest

import trace_tasks
from trace_tasks._build import build_kind, build_to_json, compiled_modules, describe_build
from trace_tasks.scoring import _pipeline

EXPECTED = os.environ.get("TRACE_TASKS_EXPECT_BUILD", "pure")


def test_the_running_build_is_the_expected_one() -> None:
    assert EXPECTED in ("pure", "native"), f"TRACE_TASKS_EXPECT_BUILD={EXPECTED!r}: expected 'pure' or 'native'"
    modules = compiled_modules()
    if EXPECTED == "pure":
        assert not modules, (
            f"compiled modules were imported: {modules}; a compiled build run in the source tree leaves .so files "
            "next to the sources, which the import system prefers: delete trace_core/src/**/*.so"
        )
    else:
        assert modules == ("trace_tasks.scoring._native",), f"the native pass imported {modules}"
        assert _pipeline._native_score is not None, "the pipeline did not pick up the native module"
    assert trace_tasks.__build__ == build_kind() == EXPECTED
    assert build_to_json() == {"build": EXPECTED, "compiled_modules": list(modules)}


def test_a_module_loaded_from_a_shared_library_counts_as_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("trace_tasks._fake_compiled")
    fake.__file__ = f"/site-packages/trace_tasks/_fake_compiled{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    before = compiled_modules()
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    assert compiled_modules() == tuple(sorted((*before, fake.__name__)))
    assert build_kind() == "native"
    assert describe_build() == "native build (Cython)"


def test_other_packages_and_modules_without_a_file_are_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    before = compiled_modules()
    elsewhere = types.ModuleType("trace_tasks_elsewhere")  # a prefix match that is not the package
    elsewhere.__file__ = "/site-packages/trace_tasks_elsewhere.so"
    fileless = types.ModuleType("trace_tasks._fileless")  # namespace-like: __file__ is None
    fileless.__file__ = None
    monkeypatch.setitem(sys.modules, elsewhere.__name__, elsewhere)
    monkeypatch.setitem(sys.modules, fileless.__name__, fileless)
    assert compiled_modules() == before


@pytest.mark.skipif(EXPECTED != "pure", reason="the pure build's wording; the native one is checked above")
def test_the_pure_build_says_so() -> None:
    assert describe_build() == "pure build"
    assert trace_tasks.__build__ == "pure"
