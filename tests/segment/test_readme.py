"""The README example runs and prints exactly the output the README shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "trace_plugins_segment" / "README.md"


def _block(language: str, text: str) -> str:
    blocks = re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"expected one {language} block in {README}"
    return blocks[0]


def test_readme_example_prints_what_it_shows() -> None:
    text = README.read_text(encoding="utf-8")
    code, shown = _block("python", text), _block("text", text)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
