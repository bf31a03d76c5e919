"""Grounding tasks without an answer (issue 39, item 1): ``validate``, ``audit``, ``score``, ``report`` and
``explain`` on examples/grounding, each reward checked against an independent computation.

* rec.jsonl: referring expressions, ``annotation_only`` boxes (IoU written out here);
* clicks.jsonl / clicks_rel1000.jsonl: ScreenSpot-style targets (boxes), clicks as predictions,
  scored by the pinned ``bbox_click_hit_v0`` in pixels and in the declared ``rel1000`` frame
  (inside-or-on-the-edge written out here, the rel1000 click converted back to pixels here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import ROOT, run_cli
from trace_tasks import compile_instance, format_instructions, instance_problems, score_trace_response
from trace_tasks.errors import OptionError

GROUNDING = ROOT / "examples" / "grounding"
REC, CLICKS, CLICKS_REL = GROUNDING / "rec.jsonl", GROUNDING / "clicks.jsonl", GROUNDING / "clicks_rel1000.jsonl"
CLICK_PIN = {"TRACE_TASKS_REWARD_IDS": "bbox=bbox_click_hit_v0"}


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def iou(a: list[float], b: list[float]) -> float:
    """Box IoU written out (independent of the family's matcher)."""
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def last_object(response: str) -> dict[str, Any] | None:
    """The response's final JSON object when the response ends with one (the fixtures' shapes)."""
    start = response.rfind('{"annotation"')
    try:
        value = json.loads(response[start:]) if start >= 0 else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def expected_rec(row: dict[str, Any]) -> float:
    found = last_object(row["response"])
    return iou(found["annotation"], row["annotation_gt"]["value"]) if found else 0.0


def inside(point: list[float], box: list[float]) -> float:
    return 1.0 if box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3] else 0.0


def expected_click(row: dict[str, Any], rel1000: bool) -> float:
    found = last_object(row["response"])
    assert found is not None
    x, y = found["annotation"]
    if rel1000:
        width, height = row["image_size"]
        x, y = x * width / 1000, y * height / 1000
    return inside([x, y], row["annotation_gt"]["value"])


def score_file(tmp_path: Path, path: Path, *flags: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    out, summary = tmp_path / f"{path.stem}.scores.jsonl", tmp_path / f"{path.stem}.summary.json"
    done = run_cli("score", str(path), "-o", str(out), "--summary-json", str(summary), *flags, env=env)
    assert done.returncode == 0, done.stderr.decode()
    return rows(out)


# --- the mode itself ------------------------------------------------------------------------


def test_annotation_only_keys_and_reward() -> None:
    row = rows(REC)[0]
    kwargs = {k: row[k] for k in ("annotation_gt", "reward_contract", "image_size")}
    got = score_trace_response(response=row["response"], answer_gt=None, trace_reward_mode="annotation_only", **kwargs)
    want = expected_rec(row)
    assert got["annotation_reward"] == pytest.approx(want)
    assert got["overall"] == got["task_reward_raw"] == got["annotation_reward"]
    assert got["answer_reward"] == got["accuracy"] == got["answer_parse_ok"] == 0.0
    assert got["trace_reward_mode_annotation_only"] == 1.0
    assert got["trace_answer_scoring_exact_json"] == 0.0
    # the key set is the default set plus the mode's own echo, last of the fixed keys
    default = score_trace_response(
        response='{"answer": 1, "annotation": [0, 0, 1, 1]}', answer_gt={"type": "integer", "value": 1}, **kwargs
    )
    assert "trace_reward_mode_annotation_only" not in default
    fixed = [key for key in got if not key.startswith("annotation_") or key.startswith("annotation_type_")]
    assert fixed[-1] == "trace_reward_mode_annotation_only"
    assert set(got) == set(default) | {"trace_reward_mode_annotation_only"}


@pytest.mark.parametrize("formula", ["gated", "additive"])
@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.9, 0.1)])
def test_formula_and_weights_do_not_apply(formula: str, weights: tuple[float, float]) -> None:
    row = rows(REC)[1]
    got = score_trace_response(
        response=row["response"],
        answer_gt=None,
        annotation_gt=row["annotation_gt"],
        reward_contract=row["reward_contract"],
        trace_reward_mode="grounding",  # the alias
        trace_annotation_reward_formula=formula,
        answer_weight=weights[0],
        annotation_weight=weights[1],
    )
    assert got["task_reward_raw"] == pytest.approx(expected_rec(row))


def test_format_needs_exactly_the_annotation_key() -> None:
    row = rows(REC)[0]
    kwargs = {k: row[k] for k in ("annotation_gt", "reward_contract")}
    both = score_trace_response(
        response='{"answer": 1, "annotation": [40, 200, 160, 330]}', answer_gt=None, trace_reward_mode="annotation_only", **kwargs
    )
    alone = score_trace_response(
        response='{"annotation": [40, 200, 160, 330]}', answer_gt=None, trace_reward_mode="annotation_only", **kwargs
    )
    assert (both["format"], alone["format"]) == (0.0, 1.0)
    assert both["annotation_reward"] == alone["annotation_reward"] == 1.0


def test_validation_says_which_modes_an_answerless_instance_supports() -> None:
    data = {k: v for k, v in rows(REC)[0].items() if k != "response"}
    assert instance_problems(data) == []
    assert instance_problems(data, trace_reward_mode="annotation_only") == []
    assert instance_problems({**data, "answer_gt": None}, trace_reward_mode="annotation_only") == []
    for mode in ("answer", "answer_and_annotation"):
        (problem,) = instance_problems(data, trace_reward_mode=mode)
        assert problem.path == "$.answer_gt" and "annotation_only" in problem.message
    compiled = compile_instance(data)
    assert compiled.answer_type is None
    with pytest.raises(OptionError, match="annotation_only"):
        compiled.score('{"annotation": [40, 200, 160, 330]}')
    assert compiled.score('{"annotation": [40, 200, 160, 330]}', trace_reward_mode="annotation_only")["overall"] == 1.0


def test_instructions_ask_for_the_annotation_alone() -> None:
    data = {k: v for k, v in rows(REC)[0].items() if k != "response"}
    text = format_instructions(instance=data, trace_reward_mode="annotation_only")
    assert '{"annotation": <bbox>}' in text
    assert '"answer"' not in text
    example = json.loads(text.rsplit("Example: ", 1)[1])
    assert list(example) == ["annotation"]


# --- the REC dataset through the commands -----------------------------------------------------


def test_rec_validate() -> None:
    assert run_cli("validate", "--mode", "annotation_only", str(REC)).returncode == 0
    refused = run_cli("validate", "--mode", "answer", str(REC))
    assert refused.returncode == 1
    assert refused.stdout.decode().count("$.answer_gt") == len(rows(REC))
    assert run_cli("validate", "--mode", "bogus", str(REC)).returncode == 2


def test_rec_score_against_iou(tmp_path: Path) -> None:
    scored = score_file(tmp_path, REC, "--mode", "annotation_only")
    for row, got in zip(rows(REC), scored, strict=True):
        assert got["overall"] == pytest.approx(expected_rec(row)), row["id"]
        assert got["answer_reward"] == 0.0
    summary = json.loads((tmp_path / "rec.summary.json").read_text())
    assert summary["options"]["trace_reward_mode"] == "annotation_only"
    metrics = summary["by_annotation_type"]["bbox"]["metrics"]
    assert "answer_accuracy" not in metrics
    ious = [expected_rec(row) for row in rows(REC)]
    assert metrics["acc@iou0.5"] == pytest.approx(sum(v >= 0.5 for v in ious) / len(ious))


def test_rec_score_in_another_mode_fails_the_rows(tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    done = run_cli("score", str(REC), "-o", str(out), "--mode", "answer_and_annotation")
    assert done.returncode == 1
    assert all("annotation_only" in row["error"] for row in rows(out))


def test_rec_audit_has_no_answer_policies(tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    done = run_cli("audit", "--mode", "annotation_only", "--json", str(out), str(REC))
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode() + done.stderr.decode()
    assert "majority-answer+whole-image" in text
    assert "correct-answer" not in text
    assert not any(line.startswith("majority-answer ") for line in text.splitlines())
    # the whole-image policy: the image box against each target, IoU written out
    whole = [iou([0, 0, *row["image_size"]], row["annotation_gt"]["value"]) for row in rows(REC)]
    line = next(line for line in text.splitlines() if line.startswith("majority-answer+whole-image"))
    assert float(line.split()[2]) == pytest.approx(sum(whole) / len(whole), abs=5e-4)


def test_rec_explain_and_report(tmp_path: Path) -> None:
    done = run_cli("explain", "--instance", str(REC), "--id", "rec-01", "--mode", "annotation_only")
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    assert "Answer: none read (annotation_only mode" in text
    assert f"overall {round(expected_rec(rows(REC)[1]), 4):g}," in text
    as_json = run_cli("explain", "--json", "--instance", str(REC), "--id", "rec-01", "--mode", "annotation_only")
    explained = json.loads(as_json.stdout)
    assert explained["explanation"]["answer"] is None
    assert explained["result"]["overall"] == pytest.approx(expected_rec(rows(REC)[1]))
    score_file(tmp_path, REC, "--mode", "annotation_only")
    html = tmp_path / "rec.html"
    done = run_cli("report", str(tmp_path / "rec.scores.jsonl"), "--instances", str(REC), "-o", str(html))
    assert done.returncode == 0, done.stderr.decode()
    page = html.read_text()
    assert "annotation_only mode: no answer, nothing gates it" in page
    assert "not explained" not in page


# --- the click dataset ------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "flags"), [(CLICKS, ()), (CLICKS_REL, ("--prediction-frame", "rel1000"))])
def test_clicks_score_against_inside(tmp_path: Path, path: Path, flags: tuple[str, ...]) -> None:
    assert run_cli("validate", "--mode", "annotation_only", str(path), env=CLICK_PIN).returncode == 0
    scored = score_file(tmp_path, path, "--mode", "annotation_only", *flags, env=CLICK_PIN)
    expected = [expected_click(row, rel1000=bool(flags)) for row in rows(path)]
    assert [got["overall"] for got in scored] == expected
    metrics = json.loads((tmp_path / f"{path.stem}.summary.json").read_text())["by_annotation_type"]["bbox"]["metrics"]
    assert metrics["click_acc"] == pytest.approx(sum(expected) / len(expected))


def test_click_instructions_ask_for_a_point() -> None:
    from trace_tasks import pin_reward_id, unpin_reward_id
    from trace_tasks.plugins import reset_registry

    pin_reward_id("bbox", "bbox_click_hit_v0")
    try:
        text = format_instructions(annotation_type="bbox", trace_reward_mode="annotation_only")
    finally:
        unpin_reward_id("bbox")
        reset_registry()
    assert "one point [x, y]" in text
    example = json.loads(text.rsplit("Example: ", 1)[1])["annotation"]
    assert len(example) == 2


def test_clicks_need_the_pin() -> None:
    done = run_cli("validate", "--mode", "annotation_only", str(CLICKS))
    assert done.returncode == 1
    assert "bbox_click_hit_v0" in done.stdout.decode()


def test_clicks_explain_audit_report(tmp_path: Path) -> None:
    done = run_cli("explain", "--instance", str(CLICKS), "--id", "click-02", "--mode", "annotation_only", env=CLICK_PIN)
    assert done.returncode == 0, done.stderr.decode()
    assert "1 inside the box (edges included), else 0 = 0" in done.stdout.decode()
    audited = run_cli("audit", "--mode", "annotation_only", str(CLICKS), env=CLICK_PIN)
    assert audited.returncode == 0, audited.stderr.decode()
    score_file(tmp_path, CLICKS, "--mode", "annotation_only", env=CLICK_PIN)
    html = tmp_path / "clicks.html"
    done = run_cli("report", str(tmp_path / "clicks.scores.jsonl"), "--instances", str(CLICKS), "-o", str(html), env=CLICK_PIN)
    assert done.returncode == 0, done.stderr.decode()
    assert "not explained" not in html.read_text()


# --- the tool-call trajectory dataset -----------------------------------------------------------

TRAJECTORY = GROUNDING / "tool_calls.jsonl"
TOOL = '{"name": "computer_use", "argument": "coordinate"}'
TOOL_FLAGS = ("--mode", "annotation_only", "--prediction-frame", "rel1000", "--tool-call", TOOL)


def expected_step(row: dict[str, Any]) -> float:
    """The last computer_use call's coordinate (0-1000, converted to pixels here) inside the target box, else 0."""
    response = row["response"]
    blocks = [block.split("</tool_call>")[0] for block in response.split("<tool_call>")[1:]]
    calls = [json.loads(block) for block in blocks]
    mine = [call for call in calls if call["name"] == "computer_use"]
    if not mine:
        return 0.0
    arguments = mine[-1]["arguments"]
    arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    x, y = arguments["coordinate"]
    width, height = row["image_size"]
    return inside([x * width / 1000, y * height / 1000], row["annotation_gt"]["value"])


def test_trajectory_score_validate_explain_audit_report(tmp_path: Path) -> None:
    assert run_cli("validate", "--mode", "annotation_only", str(TRAJECTORY), env=CLICK_PIN).returncode == 0
    scored = score_file(tmp_path, TRAJECTORY, *TOOL_FLAGS, env=CLICK_PIN)
    expected = [expected_step(row) for row in rows(TRAJECTORY)]
    assert [got["overall"] for got in scored] == expected
    assert all(got["trace_tool_call"] == 1.0 for got in scored)
    explained = run_cli("explain", "--instance", str(TRAJECTORY), "--id", "traj-01", *TOOL_FLAGS, env=CLICK_PIN)
    assert explained.returncode == 0, explained.stderr.decode()
    assert "the last <tool_call> of the tool" in explained.stdout.decode()
    audited = run_cli("audit", *TOOL_FLAGS, str(TRAJECTORY), env=CLICK_PIN)
    assert audited.returncode == 0, audited.stderr.decode()
    html = tmp_path / "traj.html"
    scores = str(tmp_path / "tool_calls.scores.jsonl")
    done = run_cli("report", scores, "--instances", str(TRAJECTORY), "--tool-call", TOOL, "-o", str(html), env=CLICK_PIN)
    assert done.returncode == 0, done.stderr.decode()
    page = html.read_text()
    assert "re-scoring gives" not in page and "not explained" not in page


def test_the_documented_prompts_are_format_instructions() -> None:
    from trace_tasks import pin_reward_id, unpin_reward_id
    from trace_tasks.plugins import reset_registry

    page = (ROOT / "docs" / "tasks.md").read_text()
    assert format_instructions(annotation_type="bbox", trace_reward_mode="annotation_only") in page
    pin_reward_id("bbox", "bbox_click_hit_v0")
    try:
        assert format_instructions(annotation_type="bbox", trace_reward_mode="annotation_only") in page
    finally:
        unpin_reward_id("bbox")
        reset_registry()
