"""Real installs: wheels built once per session, fresh virtual environments per combination.

Nothing here is editable or monkeypatched: each environment holds exactly the
wheels a test asks for (plus their dependencies from PyPI or uv's cache), and
tests talk to it only by running small scripts in a subprocess and reading the
JSON they print. Environments are cached by their set of wheels, so a
combination is installed once per session however many tests use it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

REPO = Path(__file__).resolve().parents[2]

#: distribution -> source folder (relative to the repository root)
SOURCES: Mapping[str, str] = {
    "trace-core": "trace_core",
    "trace-plugins-bbox": "trace_plugins_bbox",
    "trace-plugins-point": "trace_plugins_point",
    "trace-plugins-segment": "trace_plugins_segment",
    "trace-plugins-circle": "examples/circle_family",
    "trace-plugins-bbox-giou": "examples/giou_bbox",
}

#: Generous bounds so a wedged build or install fails the test instead of hanging CI.
BUILD_TIMEOUT_S = 300
SCRIPT_TIMEOUT_S = 120


def _uv() -> list[str]:
    """The uv command: the executable on PATH, else ``python -m uv`` (as CI does)."""
    found = shutil.which("uv")
    if found:
        return [found]
    probe = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True, timeout=60)
    if probe.returncode == 0:
        return [sys.executable, "-m", "uv"]
    message = "uv is not installed (neither on PATH nor as `python -m uv`); it builds the wheels and venvs"
    if os.environ.get("CI"):
        pytest.fail(message + ": CI installs it, so its absence is a broken set-up")
    pytest.skip(message + " (pip install uv to run these tests)")
    raise AssertionError("unreachable")


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment minus anything that would leak into a fresh venv.

    ``VIRTUAL_ENV`` and ``PYTHONPATH`` would point at the workspace; the
    ``TRACE_TASKS_*`` plugin filters would change what the venv loads;
    ``HATCH_BUILD_HOOKS_ENABLE`` would turn the session's wheels into compiled
    ones built in the source tree (test_compiled_wheel.py builds that one apart).
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "HATCH_BUILD_HOOKS_ENABLE") and not k.startswith("TRACE_TASKS_")
    }
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env.update(extra)
    return env


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        raise AssertionError(f"{what} failed (exit {proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


@attrs.frozen
class Venv:
    """One fresh virtual environment with a fixed set of installed wheels."""

    root: Path
    distributions: frozenset[str]

    @property
    def python(self) -> Path:
        return self.root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    @property
    def scripts(self) -> Path:
        return self.python.parent

    def run(self, args: Sequence[str], *, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command with this venv's interpreter first on PATH, from a neutral folder."""
        full_env = clean_env(**(env or {}))
        full_env["PATH"] = f"{self.scripts}{os.pathsep}{full_env.get('PATH', '')}"
        # cwd outside the repository, so no source folder can shadow the installed packages.
        return subprocess.run(
            list(args), capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S, cwd=self.root.parent, env=full_env
        )

    def run_json(self, script: str, *args: str, env: Mapping[str, str] | None = None) -> Any:
        """Run ``script`` (with ``args`` as ``sys.argv[1:]``); it must exit 0 and print one JSON document."""
        proc = self.run([str(self.python), "-c", script, *args], env=env)
        _check(proc, f"script in venv with {sorted(self.distributions)}")
        return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def uv() -> list[str]:
    return _uv()


@pytest.fixture(scope="session")
def wheels(uv: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build each distribution's wheel once per session: distribution -> wheel path."""
    out = tmp_path_factory.mktemp("wheels")
    built: dict[str, Path] = {}
    for dist, folder in SOURCES.items():
        before = set(out.glob("*.whl"))
        proc = subprocess.run(
            [*uv, "build", "--wheel", "--out-dir", str(out), str(REPO / folder)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            cwd=REPO,
            env=clean_env(),
        )
        _check(proc, f"uv build of {dist}")
        (wheel,) = set(out.glob("*.whl")) - before
        built[dist] = wheel
    return built


@pytest.fixture(scope="session")
def make_venv(uv: list[str], wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Venv]]:
    """``make_venv("trace-core", "trace-plugins-bbox")``: a cached fresh venv with those wheels."""
    cache: dict[frozenset[str], Venv] = {}

    def make(*distributions: str) -> Venv:
        key = frozenset(distributions)
        if key not in cache:
            base = tmp_path_factory.mktemp("venv-" + "-".join(sorted(d.rsplit("-", 1)[-1] for d in key)))
            root = base / "venv"
            proc = subprocess.run(
                [*uv, "venv", "--python", sys.executable, str(root)],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                env=clean_env(),
            )
            _check(proc, "uv venv")
            venv = Venv(root, key)
            proc = subprocess.run(
                [*uv, "pip", "install", "--python", str(venv.python), *(str(wheels[d]) for d in sorted(key))],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                env=clean_env(),
            )
            _check(proc, f"uv pip install {sorted(key)}")
            cache[key] = venv
        return cache[key]

    yield make
