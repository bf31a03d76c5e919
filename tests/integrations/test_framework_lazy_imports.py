"""The inspect-ai, verifiers, AReaL and slime adapters import none of their frameworks (issue 40).

Like the other adapters (test_lazy_imports.py): importing ``trace_tasks.integrations.X``
pulls in no framework and no torch; inspect-ai is imported by ``make_scorer`` only,
AReaL by the async reward function's first log, slime by the log function's
fallback only.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts a fresh interpreter: what it imports is the point


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_the_new_adapters_import_no_framework() -> None:
    done = _run(
        """
        import sys
        import trace_tasks.integrations.inspect_ai, trace_tasks.integrations.verifiers
        import trace_tasks.integrations.areal, trace_tasks.integrations.slime
        from trace_tasks.integrations.areal import make_reward_fn
        from trace_tasks.integrations.slime import make_batch_rm, make_rm
        from trace_tasks.integrations.verifiers import make_metrics, make_reward, make_rubric_funcs
        make_reward_fn(), make_rm(), make_batch_rm(), make_reward(), make_metrics(), make_rubric_funcs()
        heavy = sorted(
            m for m in ("inspect_ai", "verifiers", "areal", "slime", "torch", "openai", "pydantic", "ray", "fastapi")
            if m in sys.modules
        )
        print(heavy)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_make_scorer_without_inspect_ai_names_the_install() -> None:
    done = _run(
        """
        import sys
        sys.modules["inspect_ai"] = None  # makes ``import inspect_ai`` raise ImportError
        sys.modules["inspect_ai.scorer"] = None
        from trace_tasks.integrations.inspect_ai import make_scorer
        try:
            make_scorer(format_weight=0.1)
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingExtraError ")
    assert "pip install inspect-ai" in done.stdout
