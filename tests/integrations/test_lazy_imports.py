"""Optional dependencies stay optional: importing trace_tasks or an adapter pulls in no ray or
fastapi, and a missing extra names the ``pip install`` to run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts a fresh interpreter: what it imports is the point


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_adapters_import_without_ray_or_fastapi() -> None:
    done = _run(
        """
        import sys
        import trace_tasks, trace_tasks.cli
        import trace_tasks.integrations.verl, trace_tasks.integrations.trl, trace_tasks.integrations.openrlhf
        import trace_tasks.integrations.easyr1, trace_tasks.integrations.ray, trace_tasks.integrations.server
        import trace_tasks.integrations.swift, trace_tasks.integrations.lmms_eval
        trace_tasks.cli.build_parser()
        heavy = sorted(
            m for m in ("ray", "fastapi", "uvicorn", "starlette", "pandas", "pyarrow", "torch", "swift", "lmms_eval")
            if m in sys.modules
        )
        print(heavy)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_missing_extras_name_the_install_command() -> None:
    # A None entry in sys.modules makes ``import ray`` / ``import fastapi`` raise ImportError.
    done = _run(
        """
        import sys
        sys.modules["ray"] = None
        sys.modules["fastapi"] = None
        from trace_tasks.integrations.ray import score_rows_with_ray
        from trace_tasks.integrations.server import create_app
        for call in (lambda: score_rows_with_ray([{"response": ""}]), create_app):
            try:
                call()
            except ImportError as exc:
                print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    assert "pip install 'trace-core[ray]'" in lines[0]
    assert "pip install 'trace-core[server]'" in lines[1]


def test_serve_without_server_extra_exits_with_the_message() -> None:
    done = _run(
        """
        import sys
        sys.modules["uvicorn"] = None
        from trace_tasks.cli import main
        raise SystemExit(main(["serve"]))
        """
    )
    assert done.returncode == 1
    assert "pip install 'trace-core[server]'" in done.stderr
