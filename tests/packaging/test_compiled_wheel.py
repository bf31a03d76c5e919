"""The optional native build: off by default, a platform wheel with ``HATCH_BUILD_HOOKS_ENABLE=1``.

The native wheel is built the way ``.ci/compiled`` builds it (sdist first, the
wheel from the unpacked sdist, so the source tree gets no ``.so`` files) and
only inspected here; ``.ci/compiled`` installs it and runs the whole suite.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest
import tomllib

from .conftest import BUILD_TIMEOUT_S, REPO, clean_env

pytestmark = [pytest.mark.packaging, pytest.mark.slow]


def test_the_native_hook_is_opt_in_and_the_only_build_hook() -> None:
    config = tomllib.loads((REPO / "trace_core" / "pyproject.toml").read_text(encoding="utf-8"))
    hooks = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]
    assert list(hooks) == ["custom"], f"one optional compiled build, the native one: {list(hooks)}"
    assert hooks["custom"]["enable-by-default"] is False, "the native build must stay opt-in"
    assert hooks["custom"]["path"] == "hatch_build.py"
    assert "Cython" not in " ".join(config["project"]["dependencies"]), "Cython is a build requirement only"


def test_the_default_wheel_is_pure(wheels: dict[str, Path]) -> None:
    wheel = wheels["trace-core"]
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        assert not [name for name in archive.namelist() if name.endswith((".so", ".pyd"))]


def test_the_opt_in_wheel_is_native_and_keeps_the_sources(uv: list[str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [*uv, "build", "--out-dir", str(tmp_path), str(REPO / "trace_core")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        cwd=REPO,
        env=clean_env(HATCH_BUILD_HOOKS_ENABLE="1"),
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert not wheel.name.endswith("-none-any.whl"), f"{wheel.name}: not a platform wheel"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    compiled = [name for name in names if name.endswith((".so", ".pyd"))]
    assert len(compiled) == 1 and compiled[0].startswith("trace_tasks/scoring/_native."), compiled
    # the Python pipeline is the specification and the fallback: every .py file ships, uncompiled
    assert {"trace_tasks/scoring/_pipeline.py", "trace_tasks/scoring/_native.pyx"} <= names
    assert not list((REPO / "trace_core" / "src").rglob("*.so")), "the build left compiled files in the source tree"
