"""``trace-tasks score --columns stable|all``: a compact output row, and the default left byte for byte as it was."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import COMBINED, run_cli
from trace_tasks.scoring import OPT_IN_KEYS, OPTION_KEYS


def _score(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    proc = run_cli("score", str(COMBINED), "-q", "-o", str(out), *args)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return out


def test_all_is_the_default_byte_for_byte(tmp_path: Path) -> None:
    assert _score(tmp_path, "a.jsonl").read_bytes() == _score(tmp_path, "b.jsonl", "--columns", "all").read_bytes()


def test_stable_drops_echoes_aliases_and_one_hots_and_names_the_type(tmp_path: Path) -> None:
    full = [json.loads(line) for line in _score(tmp_path, "all.jsonl").read_text().splitlines()]
    stable = [json.loads(line) for line in _score(tmp_path, "stable.jsonl", "--columns", "stable").read_text().splitlines()]
    assert len(full) == len(stable) == 108
    for before, after in zip(full, stable, strict=True):
        one_hot = [k for k, v in before.items() if k.startswith("annotation_type_") and v == 1.0]
        assert len(one_hot) == 1 and after["annotation_type"] == one_hot[0].removeprefix("annotation_type_")
        dropped = set(before) - set(after)
        assert dropped == {
            k
            for k in before
            if k in OPTION_KEYS or k in OPT_IN_KEYS or k in ("accuracy", "trace_reward") or k.startswith("annotation_type_")
        }
        assert {"format_weight", "accuracy", "trace_reward", "trace_answer_weight"} <= dropped
        assert list(after)[:3] == ["id", "line", "annotation_type"]
        assert all(after[k] == before[k] for k in after if k != "annotation_type")  # nothing else changes
        assert len(after) < len(before) - 20


def test_the_report_reads_the_type_column(tmp_path: Path) -> None:
    pages = []
    for name, args in (("all", ()), ("stable", ("--columns", "stable"))):
        scores = _score(tmp_path, f"{name}.jsonl", *args)
        page = tmp_path / f"{name}.html"
        assert run_cli("report", str(scores), "-o", str(page)).returncode == 0
        html = page.read_text(encoding="utf-8")
        pages.append(html.split('<table class="types sortable">', 1)[1].split("</table>", 1)[0])
    assert pages[0] == pages[1] and "<td>bbox_set_map</td>" in pages[0]


def test_stable_is_refused_for_parquet_outputs(tmp_path: Path) -> None:
    proc = run_cli("score", str(COMBINED), "-q", "--columns", "stable", "-o", str(tmp_path / "s.parquet"))
    assert proc.returncode == 2 and "--columns stable is for JSON Lines outputs" in proc.stderr.decode()
    assert not (tmp_path / "s.parquet").exists()


def test_the_report_explains_a_stable_file_with_the_default_options(tmp_path: Path) -> None:
    scores = _score(tmp_path, "stable.jsonl", "--columns", "stable")
    page = tmp_path / "r.html"
    proc = run_cli("report", str(scores), "--instances", str(COMBINED), "--no-audit", "--no-metrics", "-o", str(page))
    assert proc.returncode == 0, proc.stderr.decode()
    html = page.read_text(encoding="utf-8")
    # every case re-scores to the file's overall: the options read back are the ones it was scored with (the defaults)
    assert "re-scoring gives overall" not in html and "not explained" not in html
    assert html.count('<div class="case"') == 30
