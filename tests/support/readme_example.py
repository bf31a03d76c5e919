"""Run a package README's one ``python`` block and compare its output with the ``text`` block."""

from __future__ import annotations

import contextlib
import io
import re
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
    assert run_snippet(code, str(readme)) == shown


def run_snippet(code: str, filename: str = "<snippet>") -> str:
    """Execute ``code`` as a script (``__name__ == "__main__"``, its own globals) in this process; what it printed.

    Only stdout is captured; an exception in the snippet fails the test with its
    traceback, which names ``filename``.
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, filename, "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    return out.getvalue()
