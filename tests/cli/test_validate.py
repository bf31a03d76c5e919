"""``trace-tasks validate`` on the example data and on files with known problems."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import COMBINED, INSTANCES, instance, run_cli, write_lines


def test_example_instances_are_valid() -> None:
    proc = run_cli("validate", str(INSTANCES), str(COMBINED))
    assert proc.returncode == 0, proc.stdout.decode()
    assert proc.stdout.decode().strip() == "144 lines checked in 2 files: 0 problems, 0 warnings"


def test_every_problem_is_reported_with_file_line_and_path(tmp_path: Path) -> None:
    outside = instance("outside", value=(0, 0, 700, 10), image_size=[640, 480])
    wrong_contract = instance("wrong-contract", annotation_type="bbox_set", value=[[0, 0, 10, 10]])
    wrong_contract["reward_contract"] = instance("x")["reward_contract"]  # the contract of a bbox instance
    typo = instance("typo", extra_field=1)
    typo["answer_gt"]["type"] = "integr"
    retired = instance("retired")
    retired["reward_contract"]["annotation"]["id"] = "bbox_soft_iou_v1"
    point_map = instance("pm", annotation_type="point_map", value={"a": [1, 2], "b": [900, -3]}, image_size=[640, 480])
    zero_area = instance("zero", value=(5, 0, 5, 10))
    path = write_lines(
        tmp_path / "bad.jsonl",
        [outside, wrong_contract, typo, "{not json", retired, point_map, zero_area, instance("outside"), instance("fine")],
    )
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    name = str(path)
    expected = [
        f"{name}:1: $.annotation_gt.value: x=700 is outside the image frame [0, 640]",
        f"{name}:2: $.reward_contract.annotation.type: reward_contract.annotation.type must match annotation_gt.type",
        f"{name}:2: $.reward_contract.annotation.id: reward_contract.annotation.id must match the resolved contract",
        f"{name}:3: $.answer_gt.type: unknown answer type 'integr' (did you mean 'integer'?)",
        f"{name}:3: $.reward_contract.answer.type: reward_contract.answer.type must match answer_gt.type",
        f"{name}:5: $.reward_contract.annotation.id: unknown annotation reward id 'bbox_soft_iou_v1'",
        f"{name}:6: $.annotation_gt.value['b']: x=900 is outside the image frame [0, 640]",
        f"{name}:6: $.annotation_gt.value['b']: y=-3 is outside the image frame [0, 480]",
        f"{name}:7: $.annotation_gt.value: does not parse as bbox: zero-area box",
        f"{name}:8: $.id: duplicate id 'outside' (first on line 1)",
    ]
    for want in expected:
        assert any(line.startswith(want) for line in lines), (want, lines)
    assert any(line.startswith(f"{name}:3: $: ") and "extra_field" in line for line in lines)
    assert any(line.startswith(f"{name}:4: $: not valid JSON") for line in lines)
    assert not any(line.startswith(f"{name}:9:") for line in lines)
    # x=700 on a 640 px image, every coordinate within [0, 1000]: besides the problem, the 0-1000 hint.
    warnings = [line for line in lines if ": warning[" in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"{name}:1: warning[normalized-coordinates]: $.annotation_gt.value: ")
    problems = len(lines) - 2
    assert lines[-1] == f"9 lines checked in 1 file: {problems} problems on 8 lines, 1 warning (normalized-coordinates 1)"


def test_a_disabled_family_names_the_variable(tmp_path: Path) -> None:
    proc = run_cli("validate", str(INSTANCES), env={"TRACE_TASKS_DISABLE_PLUGINS": "trace-plugins-point"})
    assert proc.returncode == 1
    out = proc.stdout.decode()
    point_lines = [line for line in out.splitlines() if "point" in line and "$.annotation_gt.type" in line]
    # 15 point-family instances: point, point_set, point_sequence, point_map, point_set_map (3 each).
    assert len(point_lines) == 15
    # Installed but disabled: the line says to unset the variable, not to install the package.
    unset = "$.annotation_gt.type: unset TRACE_TASKS_DISABLE_PLUGINS (or take the family out of it)"
    assert all(unset in line for line in point_lines)
    assert all("trace-plugins-point family is installed" in line and "pip install" not in line for line in point_lines)
    assert "segment" not in out  # segments belong to another family, still installed


def test_gzip_and_stdin(tmp_path: Path) -> None:
    gz = write_lines(tmp_path / "i.jsonl.gz", [instance("a"), instance("a")])
    proc = run_cli("validate", str(gz))
    assert proc.returncode == 1 and b"duplicate id 'a'" in proc.stdout
    proc = run_cli("validate", "-", stdin=INSTANCES.read_bytes())
    assert proc.returncode == 0
    proc = run_cli("validate", "-q", str(gz))
    assert proc.stdout.decode().splitlines() == ["2 lines checked in 1 file: 1 problem on 1 line, 0 warnings"]
