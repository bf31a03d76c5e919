"""docs/contracts.md §3.7's table of prompt templates and settings, every number recomputed from the doc's own text
(issue 35, item 4)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from trace_tasks import score_trace_response

from .helpers import contract

DOC = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"
INSTANCE: dict[str, Any] = {
    "answer_gt": {"type": "string", "value": "person"},
    "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
    "reward_contract": contract("string", "bbox"),
}


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("**Which settings fit which prompt template.**")
    return text[start : text.index("\n### ", start)]


def _responses(section: str) -> dict[str, str]:
    found = dict(re.findall(r"^(\d)\. [\w -]+: `([^`]+)`$", section, flags=re.M))
    assert sorted(found) == ["1", "2", "3", "4", "5"], found
    return found


def _rows(section: str) -> list[tuple[str, dict[str, Any], list[float]]]:
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[1].startswith("`"):
            continue
        options = {}
        for setting in re.findall(r"`([^`]+)`", cells[1]):
            name, value = setting.split("=", 1)
            options[name] = ast.literal_eval(value)
        rows.append((cells[0], options, [float(cell) for cell in cells[2:]]))
    return rows


def test_the_table_has_the_three_templates() -> None:
    templates = " ".join(row[0] for row in _rows(_section()))
    for name in ("plain JSON", "R1 template", "pre-fills `<think>`"):
        assert name in templates


@pytest.mark.parametrize("row", range(5))
def test_every_number_of_the_table(row: int) -> None:
    section = _section()
    responses = _responses(section)
    template, options, documented = _rows(section)[row]
    got = [
        score_trace_response(response=responses[str(k)], format_weight=0.1, **INSTANCE, **options)["overall"] for k in range(1, 6)
    ]
    assert [round(value, 3) for value in got] == documented, (template, options)
