"""The optional mypyc build: off by default, a platform wheel with ``HATCH_BUILD_HOOKS_ENABLE=1``.

The compiled wheel is built the way ``.ci/compiled`` builds it (sdist first, the
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


def _compiled_sources() -> list[str]:
    """The hook's ``include`` list as paths inside the wheel (``trace_tasks/...py``)."""
    config = tomllib.loads((REPO / "trace_core" / "pyproject.toml").read_text(encoding="utf-8"))
    hook = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["mypyc"]
    assert hook["enable-by-default"] is False, "the compiled build must stay opt-in"
    return [pattern.removeprefix("/src/") for pattern in hook["include"]]


def test_the_default_wheel_is_pure(wheels: dict[str, Path]) -> None:
    wheel = wheels["trace-core"]
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        assert not [name for name in archive.namelist() if name.endswith((".so", ".pyd"))]


def test_the_opt_in_wheel_is_compiled_and_keeps_the_sources(uv: list[str], tmp_path: Path) -> None:
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
    for source in _compiled_sources():
        stem = source.removesuffix(".py")
        assert source in names, f"{source}: the sources ship next to the compiled modules"
        assert [name for name in names if name.startswith(stem + ".") and name.endswith((".so", ".pyd"))], (
            f"{source} was not compiled"
        )
    assert not list((REPO / "trace_core" / "src").rglob("*.so")), "the build left compiled files in the source tree"
