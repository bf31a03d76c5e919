"""Text no UTF-8 stream can hold, and numbers strict JSON cannot (issue 24, findings 2 and 3).

A lone surrogate is valid JSON (``"\\ud800"``) and a valid Python string, but
no UTF-8 file or terminal can hold it; ``1e999`` is valid JSON that Python
reads as ``inf``, which strict JSON cannot write. Neither may give a traceback
or lose an output anywhere: ``score`` (to a file and to standard output, both
layouts, the summary), ``validate``, ``explain`` (text and ``--json``, a
response file that is not UTF-8) and ``report``.

Standard output in :func:`run_cli` encodes strictly, as a real process's does.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import instance, run_cli, write_lines
from trace_tasks.runs import _jsonl

SURROGATE_ID = "sur\ud800id"
GOOD = '{"answer": 2, "annotation": [0, 0, 10, 10]}'
SURROGATE_RESPONSE = '{"answer": "2\udfff", "annotation": [0, 0, 10, 10]}'


def strict_loads(text: str) -> Any:
    """``json.loads`` refusing NaN and the infinities, as a strict reader does."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def strict_lines(data: bytes | Path) -> list[dict[str, Any]]:
    raw = data.read_bytes() if isinstance(data, Path) else data
    return [strict_loads(line) for line in raw.decode("utf-8").splitlines()]


def no_traceback(proc: Any) -> None:
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-3000:]


def _with_response(row: dict[str, Any], response: str = GOOD) -> dict[str, Any]:
    return {**row, "response": response}


# --- the JSON writer -------------------------------------------------------------------------------


def test_dumps_writes_strict_json_that_utf8_can_hold() -> None:
    dumps = _jsonl.dumps
    assert dumps({"id": "é", "x": 1.5}) == '{"id":"é","x":1.5}'  # readable when it can be
    escaped = dumps({"id": SURROGATE_ID, "other": "é"})
    assert escaped.isascii() and json.loads(escaped) == {"id": SURROGATE_ID, "other": "é"}  # the same strings back
    escaped.encode("utf-8")
    assert strict_loads(dumps({"id": math.inf, "b": [-math.inf, math.nan], "c": (1, 2)})) == {
        "id": "Infinity",
        "b": ["-Infinity", "NaN"],
        "c": [1, 2],
    }
    assert strict_loads(dumps({"a": math.nan}, indent=2)) == {"a": "NaN"}
    assert _jsonl.strict_values({math.inf: 1}) == {"Infinity": 1}


# --- score -------------------------------------------------------------------------------------


def _surrogate_file(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "c.jsonl",
        [
            _with_response(instance("before")),
            _with_response(instance(SURROGATE_ID)),
            _with_response({**instance("key"), "extra\ud801": 1}),  # no instance field: ignored, named escaped in a warning
            _with_response(instance("after")),
        ],
    )


def _check_surrogate_rows(rows: list[dict[str, Any]]) -> None:
    assert [row["line"] for row in rows] == [1, 2, 3, 4]
    assert rows[0]["overall"] == rows[3]["overall"] == 1.0
    assert rows[1]["id"] == SURROGATE_ID  # written escaped, read back exactly
    assert rows[1]["error"].startswith("line 2: invalid instance: $.id: holds a lone surrogate ('\\ud800' at character 3)")
    assert rows[2]["overall"] == 1.0 and "error" not in rows[2]  # its column that is no instance field is ignored


def test_score_to_a_file_writes_every_line_escaped(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    proc = run_cli("score", str(_surrogate_file(tmp_path)), "-o", str(out), "-q", "--summary-json", str(tmp_path / "s.json"))
    no_traceback(proc)
    assert proc.returncode == 1
    _check_surrogate_rows(strict_lines(out))
    summary = strict_loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert summary["errors"] == 1 and summary["ignored_columns"] == ["extra\ud801"]
    assert b"ignored 1 input column that is no instance field: extra\\ud801" in proc.stderr


def test_score_to_stdout_writes_every_line_escaped(tmp_path: Path) -> None:
    proc = run_cli("score", str(_surrogate_file(tmp_path)))
    no_traceback(proc)
    assert proc.returncode == 1
    _check_surrogate_rows(strict_lines(proc.stdout))
    assert b"4 lines: 3 scored, 1 failed" in proc.stderr  # the summary table, after every line


def test_score_joined_layout_escapes_response_ids(tmp_path: Path) -> None:
    instances = write_lines(tmp_path / "i.jsonl", [instance("a"), instance(SURROGATE_ID)])
    responses = write_lines(
        tmp_path / "r.jsonl",
        [{"id": "a", "response": GOOD}, {"id": SURROGATE_ID, "response": GOOD}, {"id": "b\udc00", "response": GOOD}],
    )
    out = tmp_path / "o.jsonl"
    proc = run_cli("score", str(instances), "--responses", str(responses), "-o", str(out), "-q")
    no_traceback(proc)
    assert proc.returncode == 1
    rows = strict_lines(out)
    assert rows[0]["overall"] == 1.0
    assert rows[1]["id"] == SURROGATE_ID and "is invalid: $.id: holds a lone surrogate" in rows[1]["error"]
    assert rows[2]["id"] == "b\udc00" and "no instance with id 'b\\udc00'" in rows[2]["error"]
    assert b"$.id: holds a lone surrogate" in proc.stderr  # the instances file's problem, up front


@pytest.mark.parametrize(("written", "read_back"), [("1e999", "Infinity"), ("-1e999", "-Infinity"), ("NaN", "NaN")])
def test_a_non_finite_id_is_written_as_a_string(tmp_path: Path, written: str, read_back: str) -> None:
    row = json.dumps({**instance("x"), "response": GOOD}).replace('"id": "x"', f'"id": {written}')
    path = write_lines(tmp_path / "c.jsonl", [row, _with_response(instance("good"))])
    proc = run_cli("score", str(path), "-q")
    no_traceback(proc)
    rows = strict_lines(proc.stdout)
    assert rows[0] == {"id": read_back, "line": 1, "error": "line 1: invalid instance: $.id: expected a string, got float"}
    assert rows[1]["overall"] == 1.0
    responses = write_lines(tmp_path / "r.jsonl", [f'{{"id": {written}, "response": "2"}}'])
    out = tmp_path / "o.jsonl"
    proc = run_cli("score", str(path), "--responses", str(responses), "-o", str(out), "-q")
    no_traceback(proc)
    assert strict_lines(out)[0]["id"] == read_back


# --- validate ------------------------------------------------------------------------------------


def test_validate_flags_a_lone_surrogate_in_an_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "i.jsonl", [instance("ok"), instance(SURROGATE_ID), instance("pair\U0001f600")])
    proc = run_cli("validate", str(path))
    no_traceback(proc)
    assert proc.returncode == 1
    lines = proc.stdout.decode("utf-8").splitlines()
    assert lines[0].startswith(f"{path}:2: $.id: holds a lone surrogate ('\\ud800' at character 3), which is not Unicode text")
    assert "write the id as valid text" in lines[0]
    # An escaped pair (one character) is a fine id.
    assert lines[-1] == "3 lines checked in 1 file: 1 problem on 1 line, 0 warnings"


def test_validate_prints_a_message_quoting_a_surrogate_escaped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "i.jsonl", [{**instance("k"), "extra\ud801": 1}])
    proc = run_cli("validate", str(path))
    no_traceback(proc)
    assert proc.returncode == 1
    assert f"{path}:1: $: extra fields found (extra\\ud801)" in proc.stdout.decode("utf-8")


# --- explain -------------------------------------------------------------------------------------


def test_explain_shows_a_surrogate_response_with_replacement_characters(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [_with_response(instance("s"), SURROGATE_RESPONSE)])
    proc = run_cli("explain", "--instance", str(path), "--line", "1")
    no_traceback(proc)
    assert proc.returncode == 0
    out = proc.stdout.decode("utf-8")
    lines = out.splitlines()
    extraction = lines.index("Extraction")
    assert lines[extraction + 1].startswith("  note: the response holds 1 lone surrogate (valid as JSON escapes such as \\ud800")
    assert "shown here as U+FFFD (\ufffd)" in lines[extraction + 1]
    assert lines[extraction + 2] == '  final block: {"answer": "2\ufffd", "annotation": [0, 0, 10, 10]}'


def test_explain_json_keeps_the_surrogate_escaped_and_says_so(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [_with_response(instance("s"), SURROGATE_RESPONSE)])
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--json")
    no_traceback(proc)
    assert proc.returncode == 0
    data = strict_loads(proc.stdout.decode("utf-8"))
    assert data["explanation"]["extraction"]["final_block"] == SURROGATE_RESPONSE
    assert data["notes"] == [
        "the response holds 1 lone surrogate (valid as JSON escapes such as \\ud800, but not Unicode text), "
        "kept as JSON escapes here; scoring read the text as it is"
    ]
    clean = run_cli("explain", "--instance", str(path), "--line", "1", "--json", "--response", GOOD)
    assert strict_loads(clean.stdout.decode("utf-8"))["notes"] == []


def test_explain_reads_a_response_file_that_is_not_utf8_with_replacement(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "i.jsonl", [instance("s")])
    response = tmp_path / "response.txt"
    response.write_bytes(b'{"answer": 2, "annotation": [0, 0, 10, 10], "note": "\xff\xfe"}')
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--response", f"@{response}")
    no_traceback(proc)
    assert proc.returncode == 0
    out = proc.stdout.decode("utf-8")
    assert f"  note: {response} is not valid UTF-8 (the first invalid byte, 0xff, is at byte 53)" in out
    assert '"note": "\ufffd\ufffd"' in out
    assert "overall 1" in out  # the text so read is what is scored
    proc = run_cli("explain", "--instance", str(path), "--line", "1", "--response", "@-", "--json", stdin=response.read_bytes())
    no_traceback(proc)
    data = strict_loads(proc.stdout.decode("utf-8"))
    assert data["notes"][0].startswith("standard input is not valid UTF-8 (the first invalid byte, 0xff, is at byte 53)")
    assert data["result"]["overall"] == 1.0


# --- report --------------------------------------------------------------------------------------


def test_report_shows_a_surrogate_response_with_replacement_characters(tmp_path: Path) -> None:
    combined = write_lines(tmp_path / "c.jsonl", [_with_response(instance("s"), SURROGATE_RESPONSE)])
    scores = tmp_path / "s.jsonl"
    assert run_cli("score", str(combined), "-o", str(scores), "-q").returncode == 0
    page = tmp_path / "r.html"
    proc = run_cli("report", str(scores), "--instances", str(combined), "-o", str(page), "--sample", "0")
    no_traceback(proc)
    assert proc.returncode == 0
    html = page.read_text(encoding="utf-8")
    assert "2\ufffd" in html and "\udfff" not in html
    assert "note: the response holds 1 lone surrogate" in html


def test_report_of_a_scores_file_holding_surrogates_is_written(tmp_path: Path) -> None:
    scores = write_lines(tmp_path / "s.jsonl", [{"id": SURROGATE_ID, "line": 1, "error": "bad \udfff thing"}])
    page = tmp_path / "r.html"
    proc = run_cli("report", str(scores), "-o", str(page))
    no_traceback(proc)
    assert proc.returncode == 0
    html = page.read_text(encoding="utf-8")
    # the id as text (no quotes), its lone surrogate shown as U+FFFD like the error's
    assert "bad \ufffd thing" in html and "id sur\ufffdid" in html and "\ud800" not in html


@pytest.mark.slow  # a real interpreter: its own standard streams and their encodings
def test_a_real_process_writes_every_line_to_a_pipe(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "trace_tasks.cli"]
    done = subprocess.run(
        [*command, "score", str(_surrogate_file(tmp_path)), "-q"], capture_output=True, timeout=120, check=False
    )
    no_traceback(done)
    assert done.returncode == 1
    _check_surrogate_rows(strict_lines(done.stdout))
    path = write_lines(tmp_path / "i.jsonl", [_with_response(instance("s"), SURROGATE_RESPONSE)])
    done = subprocess.run(
        [*command, "explain", "--instance", str(path), "--line", "1"], capture_output=True, timeout=120, check=False
    )
    no_traceback(done)
    assert done.returncode == 0 and "2\ufffd" in done.stdout.decode("utf-8")
