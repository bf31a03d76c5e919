"""``trace-tasks score`` end to end (in-process, see ``helpers.run_cli``), on the example data and on broken files."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, count_lines, instance, read_jsonl, run_cli, write_lines
from trace_tasks import score_trace_response
from trace_tasks.runs._engine import chunk_size


def _expected_ids(path: Path) -> list[str]:
    return [row["id"] for row in read_jsonl(path)]


def test_joined_example_data_scores_every_line_in_order(tmp_path: Path) -> None:
    out, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    proc = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-o", str(out), "--summary-json", str(summary))
    assert proc.returncode == 0, proc.stderr.decode()
    rows = read_jsonl(out)
    assert len(rows) == count_lines(RESPONSES) == 108
    assert [r["id"] for r in rows] == _expected_ids(RESPONSES)
    assert [r["line"] for r in rows] == list(range(1, 109))
    assert not any("error" in r for r in rows)
    data = json.loads(summary.read_text())
    assert data["lines"] == data["scored"] == 108 and data["errors"] == 0
    assert sorted(data["by_annotation_type"]) == sorted({r["id"].rsplit("-", 1)[0] for r in rows})
    assert len(data["by_annotation_type"]) == 12
    mean = sum(r["overall"] for r in rows) / len(rows)
    assert data["overall"]["mean_overall"] == pytest.approx(mean)
    assert data["overall"]["no_json_share"] == pytest.approx(sum(r["json_found"] == 0 for r in rows) / 108)
    assert data["overall"]["format_failures"] == sum(r["format"] == 0 for r in rows)
    # The table on stderr has a row per type and the overall row.
    table = proc.stderr.decode()
    assert "annotation type" in table and "bbox_set_map" in table and "\nall " in table


def test_scores_equal_the_library_call() -> None:
    proc = run_cli("score", str(COMBINED), "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b""  # --quiet: no table
    rows = read_jsonl(proc.stdout)
    inputs = read_jsonl(COMBINED)
    assert len(rows) == len(inputs)
    for got, row in zip(rows[::7], inputs[::7], strict=False):
        fields = {k: row[k] for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")}
        expected = score_trace_response(response=row["response"], **fields)
        assert {k: got[k] for k in expected} == expected
        assert list(got)[2:] == list(expected)  # id, line, then the scorer's key order


def test_combined_and_joined_layouts_agree() -> None:
    joined = run_cli("score", str(INSTANCES), "--responses", str(RESPONSES), "-q")
    combined = run_cli("score", str(COMBINED), "-q")
    assert joined.returncode == combined.returncode == 0
    assert read_jsonl(joined.stdout) == read_jsonl(combined.stdout)


def test_options_reach_the_scorer() -> None:
    proc = run_cli("score", str(COMBINED), "-q", "--mode", "answer", "--format-weight", "0.25")
    rows = read_jsonl(proc.stdout)
    assert all(r["trace_reward_mode_answer"] == 1.0 and r["format_weight"] == 0.25 for r in rows)
    assert all(r["overall"] == pytest.approx(0.75 * r["answer_reward"] + 0.25 * r["format"]) for r in rows)
    proc = run_cli("score", str(COMBINED), "-q", "--formula", "additive", "--answer-weight", "3", "--annotation-weight", "1")
    rows = read_jsonl(proc.stdout)
    assert all(r["trace_answer_weight"] == 0.75 and r["trace_annotation_reward_formula_additive"] == 1.0 for r in rows)
    proc = run_cli("score", str(COMBINED), "-q", "--point-half-life-px", "50")
    point_rows = [r for r in read_jsonl(proc.stdout) if "annotation_point_half_life_px" in r]
    assert point_rows and all(r["annotation_point_half_life_px"] == 50.0 for r in point_rows)


@pytest.mark.parametrize(
    "option",
    [
        ["--mode", "both"],
        ["--format-weight", "1.5"],
        ["--answer-weight", "0", "--annotation-weight", "0"],
        ["--answer-weight", "-1"],
        ["--formula", "multiplicative"],
        ["--point-half-life-px", "0"],
        ["--workers", "0"],
        # issue 37, item 6: numbers no float holds (argparse reads 1e400 as inf)
        ["--answer-weight", "1e400"],
        ["--annotation-weight", "-inf"],
        ["--format-weight", "nan"],
        ["--point-half-life-px", "inf"],
    ],
)
def test_invalid_options_exit_2_before_reading_input(option: list[str], tmp_path: Path) -> None:
    out = tmp_path / "never.jsonl"
    proc = run_cli("score", str(tmp_path / "does-not-exist.jsonl"), "-o", str(out), *option)
    assert proc.returncode == 2
    assert b"does-not-exist" not in proc.stderr  # failed on the option, not on the missing file
    assert not out.exists()


def test_bad_lines_become_error_lines_and_the_run_continues(tmp_path: Path) -> None:
    good = {**instance("ok-1"), "response": '{"answer": 2, "annotation": [0, 0, 10, 10]}'}
    bad_contract = {**instance("bad-contract"), "response": "2"}
    bad_contract["reward_contract"] = {**bad_contract["reward_contract"], "annotation": {"id": "bbox_iou_v9", "type": "bbox"}}
    no_response = instance("no-response")
    not_a_string = {**instance("number-response"), "response": 2}
    path = write_lines(
        tmp_path / "in.jsonl",
        [
            good,
            '{"id": "truncated", "answer_gt": ',
            bad_contract,
            "",
            no_response,
            not_a_string,
            "[1, 2]",
            {**good, "id": "ok-2"},
        ],
    )
    proc = run_cli("score", str(path), "-q")
    assert proc.returncode == 1
    rows = read_jsonl(proc.stdout)
    assert len(rows) == count_lines(path) == 8
    assert [r["line"] for r in rows] == list(range(1, 9))
    assert [r["id"] for r in rows] == ["ok-1", None, "bad-contract", None, "no-response", "number-response", None, "ok-2"]
    assert rows[0]["overall"] == 1.0 and rows[-1]["overall"] == 1.0
    errors = {r["line"]: r["error"] for r in rows if "error" in r}
    assert sorted(errors) == [2, 3, 4, 5, 6, 7]
    assert errors[2].startswith("line 2: not valid JSON")
    assert errors[3].startswith("line 3: invalid instance") and "$.reward_contract" in errors[3]
    assert errors[4] == "line 4: empty line"
    assert errors[5] == "line 5: $.response: required field missing"
    assert errors[6].startswith("line 6: $.response: must be a string")
    assert errors[7].startswith("line 7: $: a line must be a JSON object")


def test_responses_without_an_instance_and_invalid_instances(tmp_path: Path) -> None:
    bad = instance("bad")
    bad["answer_gt"]["type"] = "integr"
    instances = write_lines(tmp_path / "instances.jsonl", [instance("a"), bad, "{oops", instance("a", answer=3)])
    responses = write_lines(
        tmp_path / "responses.jsonl",
        [
            {"id": "b-missing", "response": "2"},
            {"id": "bad", "response": "2"},
            {"id": "a", "response": '{"answer": 2}'},
            {"response": "2"},
            {"id": "a", "response": "2", "sample": 7},
        ],
    )
    summary = tmp_path / "summary.json"
    proc = run_cli("score", str(instances), "--responses", str(responses), "--summary-json", str(summary))
    assert proc.returncode == 1
    rows = read_jsonl(proc.stdout)
    assert len(rows) == 5
    assert rows[0]["error"] == f"line 1: no instance with id 'b-missing' in {instances}"
    assert rows[1]["error"].startswith(f"line 2: instance 'bad' ({instances} line 2) is invalid:")
    assert "$.answer_gt.type" in rows[1]["error"]
    # 'a' appears twice in the instances file: ambiguous, so refused rather than guessed.
    assert "duplicate id 'a'" in rows[2]["error"] and "duplicate id 'a'" in rows[4]["error"]
    assert rows[3]["error"].startswith("line 4: $.id")
    data = json.loads(summary.read_text())
    assert data["errors"] == 5 and data["scored"] == 0
    assert any("line 3" in p and "not valid JSON" in p for p in data["instance_problems"])
    assert b"not valid JSON" in proc.stderr


def test_several_responses_per_instance(tmp_path: Path) -> None:
    instances = write_lines(tmp_path / "i.jsonl", [instance("x", value=(0, 0, 10, 10))])
    responses = write_lines(
        tmp_path / "r.jsonl",
        [{"id": "x", "response": json.dumps({"answer": 2, "annotation": [0, 0, w, 10]})} for w in (10, 5, 20)],
    )
    rows = read_jsonl(run_cli("score", str(instances), "--responses", str(responses), "-q").stdout)
    assert [r["annotation_reward"] for r in rows] == [1.0, 0.5, 0.5]


def test_gzip_input_and_output(tmp_path: Path) -> None:
    rows = read_jsonl(COMBINED)
    gz_in = write_lines(tmp_path / "in.jsonl.gz", rows)
    gz_out = tmp_path / "out.jsonl.gz"
    proc = run_cli("score", str(gz_in), "-o", str(gz_out), "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    with gzip.open(gz_out, "rt") as fh:
        scored = [json.loads(line) for line in fh]
    plain = read_jsonl(run_cli("score", str(COMBINED), "-q").stdout)
    assert scored == plain


def test_stdin_and_stdout(tmp_path: Path) -> None:
    proc = run_cli("score", "-", "-o", "-", "-q", stdin=COMBINED.read_bytes())
    assert proc.returncode == 0
    assert [r["id"] for r in read_jsonl(proc.stdout)] == _expected_ids(COMBINED)
    # Responses from stdin, instances from a file; gzip on stdin is recognised by its magic bytes.
    proc = run_cli("score", str(INSTANCES), "--responses", "-", "-q", stdin=gzip.compress(RESPONSES.read_bytes()))
    assert proc.returncode == 0
    assert len(read_jsonl(proc.stdout)) == 108
    proc = run_cli("score", "-", "--responses", "-")
    assert proc.returncode == 2


@pytest.mark.slow  # starts a pool of two spawned interpreters
def test_workers_keep_order_and_results(tmp_path: Path) -> None:
    # Enough lines for several pool chunks (2048 per chunk), so ordering across workers is exercised.
    rows = read_jsonl(COMBINED)
    many = [dict(row, id=f"{row['id']}#{k}") for k in range(45) for row in rows]  # 4,860 lines
    path = write_lines(tmp_path / "many.jsonl", many)
    serial = run_cli("score", str(path), "-q", timeout=300)
    pooled = run_cli("score", str(path), "-q", "--workers", "2", timeout=300)
    assert serial.returncode == pooled.returncode == 0
    assert serial.stdout == pooled.stdout
    assert len(read_jsonl(pooled.stdout)) == len(many)


def test_missing_input_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("score", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2 and b"cannot open" in proc.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_ray_engine_gives_the_local_scores(ray_session: object) -> None:
    # The session's Ray is running, so the command uses it and leaves it running (see tests/conftest.py).
    local = run_cli("score", str(COMBINED), "-q")
    on_ray = run_cli("score", str(COMBINED), "-q", "--engine", "ray", timeout=300)
    assert on_ray.returncode == 0, on_ray.stderr.decode()[-2000:]
    assert on_ray.stdout == local.stdout


def test_ray_engine_without_ray_is_a_clear_usage_error(tmp_path: Path) -> None:
    proc = run_cli("score", str(COMBINED), "--engine", "ray", "-o", str(tmp_path / "o.jsonl"), without=["ray"])
    assert proc.returncode == 2
    assert b"pip install 'trace-core[ray]'" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_output_is_streamed_before_the_input_ends() -> None:
    """Scores of the first chunks are written before the end of the input is read: nothing waits for it all.

    Standard input is a stream that notes how much output exists when the
    command first reaches its end. (Through real pipes: ``test_subprocess_smoke``.)
    """
    chunk = chunk_size(1)  # lines scored and written together
    rows = read_jsonl(COMBINED)
    count = chunk + chunk // 2
    data = b"".join(json.dumps(rows[i % len(rows)]).encode() + b"\n" for i in range(count))
    stdin = OutputAtEnd(data)
    proc = run_cli("score", "-", "-q", stdin=stdin)
    assert proc.returncode == 0
    assert stdin.output_at_end is not None, "the input was never read to its end"
    assert stdin.output_at_end.count(b"\n") >= chunk, "no output before the end of the input"  # the first chunk
    assert json.loads(stdin.output_at_end.splitlines()[0])["line"] == 1
    assert len(proc.stdout.splitlines()) == count


class OutputAtEnd(io.RawIOBase):
    """Raw standard input over ``data`` that records ``sys.stdout``'s bytes when its end is first reached."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.output_at_end: bytes | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), len(self.data) - self.pos, 64 * 1024)  # pipe-sized reads
        if n == 0 and self.output_at_end is None:
            sys.stdout.flush()
            self.output_at_end = sys.stdout.buffer.getvalue()
        buffer[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def test_a_disabled_family_fails_its_lines_naming_the_variable() -> None:
    proc = run_cli("score", str(COMBINED), "-q", env={"TRACE_TASKS_DISABLE_PLUGINS": "trace-plugins-segment"})
    assert proc.returncode == 1
    rows = read_jsonl(proc.stdout)
    assert len(rows) == 108
    failed = [r for r in rows if "error" in r]
    assert {r["id"].rsplit("-", 1)[0] for r in failed} == {"segment", "segment_set"}
    assert len(failed) == 18
    assert all("unset TRACE_TASKS_DISABLE_PLUGINS" in r["error"] and "pip install" not in r["error"] for r in failed)
    assert all("the trace-plugins-segment family is installed" in r["error"] for r in failed)
