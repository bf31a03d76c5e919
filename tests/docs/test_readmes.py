"""The README examples run and give what they show (root README and the bbox package README).

The point and segment package READMEs are checked by their own suites
(``tests/point/test_readme.py``, ``tests/segment``) with the same runner.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..support.readme_example import check_readme_example

ROOT = Path(__file__).resolve().parents[2]


def test_bbox_readme_example_prints_what_it_shows() -> None:
    check_readme_example("trace_plugins_bbox")


def test_root_readme_use_example_evaluates_to_its_comment() -> None:
    """The "Use" block ends with an expression whose value the comment beside it states."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)[0]
    *body, last = block.rstrip("\n").splitlines()
    expression, _, shown = last.partition("#")
    namespace: dict[str, object] = {}
    exec(compile("\n".join(body), "README.md", "exec"), namespace)
    assert eval(expression, namespace) == ast.literal_eval(shown.strip())
