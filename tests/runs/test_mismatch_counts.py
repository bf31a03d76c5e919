"""Mismatch counts of a run (issue 35, item 3): the summary's counts equal the per-row diagnoses.

A generated dataset answers the same instances in the styles models write:
pixels, rel1000, rel1, ``[x, y, w, h]``, Qwen2.5-VL's resized frame, Gemini's
y-first order, Qwen's native ``bbox_2d`` list, and a correct draft inside
``<think>`` followed by a refusal. The run's counts are compared with
:func:`trace_tasks.scoring.row_mismatches` computed row by row here, through
the instance's own explain run, independently of the runs engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.data import compile_instance
from trace_tasks.runs import RunSettings, score_files
from trace_tasks.scoring import UNPARSED, options_from, row_mismatches, smart_resize

SIZES = ((1920, 1080), (640, 480), (800, 1200))
BOXES = ((300.0, 200.0, 700.0, 500.0), (40.0, 60.0, 360.0, 300.0), (100.0, 400.0, 500.0, 900.0))


def _instance(i: int, size: tuple[int, int], box: tuple[float, ...]) -> dict[str, Any]:
    return {
        "id": f"box-{i}",
        "answer_gt": {"type": "integer", "value": 3},
        "annotation_gt": {"type": "bbox", "value": list(box)},
        "reward_contract": {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
        },
        "image_size": list(size),
    }


def _styles(size: tuple[int, int], box: tuple[float, ...]) -> dict[str, str]:
    """One response per style: the same correct box, written as each model writes it."""
    w, h = size
    x0, y0, x1, y1 = box
    rh, rw = smart_resize(h, w)

    def answer(value: Any) -> str:
        return json.dumps({"answer": 3, "annotation": value})

    rel = [round(x0 / w * 1000), round(y0 / h * 1000), round(x1 / w * 1000), round(y1 / h * 1000)]
    return {
        "pixel": answer([x0, y0, x1, y1]),
        "rel1000": answer(rel),
        "rel1": answer([x0 / w, y0 / h, x1 / w, y1 / h]),
        "xywh": answer([x0, y0, x1 - x0, y1 - y0]),
        "resized": answer([x0 * rw / w, y0 * rh / h, x1 * rw / w, y1 * rh / h]),
        "rel1000_yx": answer([rel[1], rel[0], rel[3], rel[2]]),
        "native": answer([{"bbox_2d": [x0, y0, x1, y1], "label": "box"}]),
        "think": "<think>" + answer([x0, y0, x1, y1]) + "</think> I cannot determine this.",
    }


def _dataset(tmp_path: Path) -> tuple[Path, list[tuple[str, dict[str, Any], str]]]:
    rows: list[tuple[str, dict[str, Any], str]] = []
    for i, (size, box) in enumerate(zip(SIZES, BOXES, strict=True)):
        inst = _instance(i, size, box)
        rows += [(style, inst, response) for style, response in _styles(size, box).items()]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps({**inst, "response": response}) + "\n" for _, inst, response in rows))
    return path, rows


def _diagnoses(inst: dict[str, Any], response: str, **options: Any) -> tuple[str, ...]:
    _, trail = compile_instance(inst).explain(response, options_from(options))
    return tuple(m.kind for m in row_mismatches(trail))


def test_summary_counts_equal_the_row_diagnoses_and_each_style_is_named(tmp_path: Path) -> None:
    path, rows = _dataset(tmp_path)
    summary = tmp_path / "summary.json"
    result = score_files(RunSettings(input=str(path), output=str(tmp_path / "out.jsonl"), summary=str(summary), quiet=True))
    assert result.errors == 0
    data = json.loads(summary.read_text())
    expected: dict[str, int] = {}
    parsed = 0
    named: dict[str, set[str]] = {}
    for style, inst, response in rows:
        kinds = _diagnoses(inst, response)
        named.setdefault(style, set()).update(kinds)
        for kind in kinds:
            expected[kind] = expected.get(kind, 0) + 1
        _, trail = compile_instance(inst).explain(response, options_from({}))
        parsed += trail.prediction is not None and trail.parsed_prediction is not UNPARSED
    counts = data["by_annotation_type"]["bbox"]["mismatches"]
    assert counts == {"parsed_predictions": parsed, **dict(sorted(expected.items()))}
    assert data["overall"]["mismatches"] == dict(sorted(expected.items()))
    # Each style's reading is named for its rows, and an honest pixel answer has none.
    assert named["pixel"] == set()
    for style in ("rel1000", "rel1", "xywh", "resized", "rel1000_yx"):
        assert style in named[style], (style, named[style])
    assert named["native"] & {"native", "native+pixel"}, named["native"]
    assert named["think"] == {"think"}
    # The default output rows carry no count: the scores are the scores of a run without the summary.
    plain = tmp_path / "plain.jsonl"
    score_files(RunSettings(input=str(path), output=str(plain), quiet=True))
    assert plain.read_bytes() == (tmp_path / "out.jsonl").read_bytes()


def test_one_warning_names_the_frame_most_predictions_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = _dataset(tmp_path)
    lines = [json.dumps({**inst, "response": response}) for style, inst, response in rows if style == "rel1000"]
    lines += [json.dumps({**inst, "response": response}) for style, inst, response in rows if style == "pixel"][:1]
    path.write_text("\n".join(lines) + "\n")
    summary = tmp_path / "summary.json"
    score_files(RunSettings(input=str(path), output=str(tmp_path / "out.jsonl"), summary=str(summary)))
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if line.startswith("warning:") and "--prediction-frame" in line]
    assert len(warned) == 1 and "--prediction-frame rel1000" in warned[0] and "3 of 4 parsed bbox" in warned[0]
    assert "mismatches in bbox (4 parsed predictions): rel1000 3" in err
    assert json.loads(summary.read_text())["mismatch_warnings"] == warned
    # Declared, the frame scores them: no warning, the one pixel row is now the mismatch.
    score_files(
        RunSettings(
            input=str(path), output=str(tmp_path / "o2.jsonl"), summary=str(tmp_path / "s2.json"),
            options={"prediction_frame": "rel1000"},
        )
    )  # fmt: skip
    err = capsys.readouterr().err
    assert "--prediction-frame" not in err


def test_final_only_without_the_tag_option_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inst = _instance(0, SIZES[0], BOXES[0])
    response = '<think>the box</think><answer>{"answer": 3, "annotation": [300, 200, 700, 500]}</answer>'
    path = tmp_path / "r1.jsonl"
    path.write_text(json.dumps({**inst, "response": response}) + "\n")
    options = {"trace_recovery": "final_only"}
    assert _diagnoses(inst, response, **options) == ("answer_tag_ignored",)
    score_files(RunSettings(input=str(path), output=str(tmp_path / "o.jsonl"), summary=str(tmp_path / "s.json"), options=options))
    err = capsys.readouterr().err
    assert "warning: 1 rows answered in a final <answer> block" in err and "--format-accept-answer-tag" in err
    options["format_accept_answer_tag"] = True
    score_files(RunSettings(input=str(path), output=str(tmp_path / "o.jsonl"), summary=str(tmp_path / "s.json"), options=options))
    assert "--format-accept-answer-tag" not in capsys.readouterr().err


def test_the_report_failure_table_counts_each_kind(tmp_path: Path) -> None:
    from tests.cli.helpers import run_cli

    path, rows = _dataset(tmp_path)
    scores, html = tmp_path / "scores.jsonl", tmp_path / "report.html"
    score_files(RunSettings(input=str(path), output=str(scores), quiet=True))
    done = run_cli("report", str(scores), "--instances", str(path), "--no-audit", "-o", str(html))
    assert done.returncode == 0, done.stderr
    text = html.read_text()
    failures = text[text.index('id="failures"') : text.index("</ul>", text.index('id="failures"'))]
    for kind in ("rel1000", "rel1", "xywh", "resized", "rel1000_yx", "think"):
        count = sum(kind in _diagnoses(inst, response) for _, inst, response in rows)
        assert f">mismatch {kind}</th>" in failures and f"<b>mismatch {kind}</b>:" in failures
        assert f'data-count="{count}"' in failures
    # Without --instances there is no trail to count from: no mismatch column.
    run_cli("report", str(scores), "-o", str(html))
    assert "mismatch" not in html.read_text()[html.read_text().index('id="failures"') :].split("</table>")[0]
