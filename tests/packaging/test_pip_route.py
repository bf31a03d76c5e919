"""The documented pip route builds the native wheel from a checkout (issue 37 item 8, issue 41).

``HATCH_BUILD_HOOKS_ENABLE=1 pip wheel ./trace_core`` builds in the source
folder of a checkout (the sdist route builds in a temporary folder): the
native build hook compiles outside the sources, so the checkout is left as
it was. The test builds from a copy of the checkout (every file git tracks or
would track), as a fresh clone holds it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import BUILD_TIMEOUT_S, REPO, clean_env

pytestmark = [pytest.mark.packaging, pytest.mark.slow]


def _copy_checkout(target: Path) -> None:
    """The checkout's files (tracked, or untracked and not ignored) under ``target``, as a fresh clone would hold them."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the pip route from a checkout needs one to copy")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def test_pip_wheel_from_a_checkout_builds_the_native_wheel(uv: list[str], tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    _copy_checkout(checkout)
    # A throwaway environment with pip in it (uv's own environments have none).
    venv = tmp_path / "pip-venv"
    made = subprocess.run(
        [*uv, "venv", "--seed", "--python", sys.executable, str(venv)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env=clean_env(),
    )
    assert made.returncode == 0, made.stderr
    out = tmp_path / "dist"
    proc = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--disable-pip-version-check",
            "./trace_core",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S * 2,
        cwd=checkout,
        env=clean_env(HATCH_BUILD_HOOKS_ENABLE="1"),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    (wheel,) = out.glob("trace_core-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), f"{wheel.name}: not a platform wheel"
    with zipfile.ZipFile(wheel) as archive:
        compiled = [name for name in archive.namelist() if name.endswith((".so", ".pyd"))]
    assert any("trace_tasks/scoring/_native." in name for name in compiled), compiled
    assert not list((checkout / "trace_core" / "src").rglob("*.so")), "the build must not touch the checkout's sources"
