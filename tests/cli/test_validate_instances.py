"""``trace-tasks validate`` refuses every kind of broken ground truth (in-process, ``trace_tasks.cli.main``).

The cases are the table of ``tests/core/test_instances.py``: each line of the
file breaks one thing, a good instance sits next to them and has no problem.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from trace_tasks import (
    AnnotationParseError,
    AnnotationScore,
    AnnotationTypeSpec,
    ScoringContext,
    hookimpl,
    plugins,
    resolve_reward_contract,
)
from trace_tasks.cli import main

from ..core.test_instances import BROKEN, Case, good_instance


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", BROKEN, ids=lambda case: case.name)
def test_each_broken_instance_is_flagged_and_the_good_one_is_not(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "instances.jsonl", [good_instance("before"), case.instance(), good_instance("after")])
    assert main(["validate", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"{path}:2: {case.path}: " in "\n".join(lines)
    assert any(line.startswith(f"{path}:2: {case.path}: ") and case.message in line for line in lines), lines
    assert not any(line.startswith((f"{path}:1:", f"{path}:3:")) for line in lines)
    assert lines[-1].startswith("3 lines checked in 1 file: ") and " problem" in lines[-1] and " on 1 line, " in lines[-1]


def test_the_whole_table_in_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [case.instance() for case in BROKEN] + [good_instance()]
    path = _write(tmp_path / "instances.jsonl", rows)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    flagged = {int(line.split(":")[1]) for line in out[:-1] if line.startswith(str(path))}
    assert flagged == set(range(1, len(BROKEN) + 1))
    assert out[-1].startswith(f"{len(BROKEN) + 1} lines checked in 1 file: ") and f" on {len(BROKEN)} lines, " in out[-1]
    assert main(["validate", "-q", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [out[-1]]


def test_a_combined_score_input_is_validated_as_its_instance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{**case.instance(), "response": "2"} for case in BROKEN[:3]] + [{**good_instance(), "response": "2"}] * 2
    path = _write(tmp_path / "combined.jsonl", rows)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "$.response" not in out and "duplicate id" not in out
    assert out.splitlines()[-1].startswith("5 lines checked in 1 file: ") and " on 3 lines, " in out.splitlines()[-1]


def test_frame_check_still_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = good_instance("outside")
    outside["annotation_gt"]["value"] = [600, 0, 700, 10]
    path = _write(tmp_path / "instances.jsonl", [outside])
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:1: $.annotation_gt.value: x=700 is outside the image frame [0, 640]" in out
    assert "note:" not in out


class WidgetFamily:
    """A family that parses and scores but cannot describe its geometry (no explain, no draw)."""

    @hookimpl
    def trace_annotation_types(self) -> Sequence[AnnotationTypeSpec]:
        return [AnnotationTypeSpec("test_widget", ("test_widget_hit_v0",))]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "test_widget_hit_v0" if annotation_type == "test_widget" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise AnnotationParseError("a widget label is a non-empty string")
        return value.strip()

    @hookimpl
    def trace_score_annotation(self, reward_id: str, prediction: str, target: str, context: ScoringContext) -> AnnotationScore:
        return AnnotationScore(1.0 if prediction == target else 0.0)


@pytest.fixture
def widget_family() -> Iterator[None]:
    plugins.register_plugin(WidgetFamily(), "test-widget-family")
    try:
        yield
    finally:
        plugins.unregister_plugin("test-widget-family")


def test_a_family_that_cannot_be_frame_checked_gets_a_note(
    widget_family: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = []
    for i, label in enumerate(("left", "right", " ")):
        data = good_instance(f"w{i}")
        data["annotation_gt"] = {"type": "test_widget", "value": label}
        data["reward_contract"] = resolve_reward_contract(answer_type="integer", annotation_type="test_widget").to_dict()
        rows.append(data)
    path = _write(tmp_path / "instances.jsonl", rows)
    assert main(["validate", str(path)]) == 1  # only the blank label is a problem
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith(str(path))] == [
        f"{path}:3: $.annotation_gt.value: does not parse as test_widget: a widget label is a non-empty string; "
        "every response would get annotation reward 0"
    ]
    notes = [line for line in out if line.startswith("note:")]
    assert notes == ["note: the 'test_widget' family does not describe its geometry; image frame not checked"]
    assert out[-1] == "3 lines checked in 1 file: 1 problem on 1 line, 0 warnings"


def _outside_box(tmp_path: Path) -> Path:
    """One bbox instance whose box reaches past its 640x480 image (a frame problem when the family draws it)."""
    data = good_instance("outside")
    data["annotation_gt"] = {"type": "bbox", "value": [600, 100, 700, 200]}
    data["image_size"] = [640, 480]
    data["reward_contract"] = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    return _write(tmp_path / "outside.jsonl", [data])


@pytest.mark.parametrize(
    ("drawn", "said"),
    [
        (lambda item: ["not a drawable"], "returned str among its drawables"),
        (lambda item: "a box", "returned str, not a list of drawables"),
        (lambda item: [plugins.Box(float("nan"), 0.0, 10.0, 10.0)], "whose coordinates are not finite numbers"),
    ],
    ids=["junk_item", "not_a_list", "nan"],
)
def test_a_draw_hook_returning_no_drawings_is_the_familys_note_not_the_datas_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, drawn: Any, said: str
) -> None:
    # Junk was read as "nothing outside the frame" (0 problems), NaN as the dataset's problem ("x=nan is outside").
    path = _outside_box(tmp_path)
    assert main(["validate", str(path)]) == 1  # the official draw hook: the box is outside the frame
    assert "x=700 is outside the image frame [0, 640]" in capsys.readouterr().out
    registry = plugins.get_registry()
    entry = registry.annotation_types["bbox"]
    broken = attrs.evolve(entry, draw=lambda annotation_type, item: drawn(item))
    monkeypatch.setitem(registry.annotation_types, "bbox", broken)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "outside the image frame" not in out
    (note,) = [line for line in out.splitlines() if line.startswith("note:")]
    assert note.startswith("note: the 'bbox' family's draw hook ") and said in note and note.endswith("image frame not checked")
