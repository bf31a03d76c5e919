"""Run a package README's one ``python`` block and compare its output with the ``text`` block."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _block(language: str, text: str, readme: Path) -> str:
    blocks = re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"expected one {language} block in {readme}"
    return blocks[0]


def check_readme_example(package_dir: str) -> None:
    """The README example of ``package_dir`` runs and prints exactly the output it shows."""
    readme = ROOT / package_dir / "README.md"
    text = readme.read_text(encoding="utf-8")
    code, shown = _block("python", text, readme), _block("text", text, readme)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
