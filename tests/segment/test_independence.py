"""The segment family stands alone: what it shares with points lives in trace_core."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter: what it imports is the point

CHECK = textwrap.dedent(
    """
    import sys
    import trace_plugins_segment.plugin
    import trace_plugins_segment.geometry
    leaked = sorted(m for m in sys.modules if m == "trace_plugins_point" or m.startswith("trace_plugins_point."))
    assert not leaked, leaked
    print("ok")
    """
)


def test_segment_plugin_does_not_import_the_point_package() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
