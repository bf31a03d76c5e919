"""Inputs people have: a byte-order mark, gzip under any name, Windows line ends, and JSON errors at the real column."""

from __future__ import annotations

import codecs
import gzip
import json
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, read_jsonl, run_cli
from trace_tasks.runs._jsonl import parse_line, read_lines


def _scores(*args: str, stdin: bytes | None = None) -> bytes:
    proc = run_cli("score", *args, "-q", stdin=stdin)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def test_a_byte_order_mark_on_line_1_is_dropped(tmp_path: Path) -> None:
    with_bom = tmp_path / "bom.jsonl"
    with_bom.write_bytes(codecs.BOM_UTF8 + COMBINED.read_bytes())
    assert _scores(str(with_bom)) == _scores(str(COMBINED))
    assert _scores("-", stdin=with_bom.read_bytes()) == _scores(str(COMBINED))
    instances = tmp_path / "instances.jsonl"
    instances.write_bytes(codecs.BOM_UTF8 + INSTANCES.read_bytes())
    assert _scores(str(instances), "--responses", str(RESPONSES)) == _scores(str(INSTANCES), "--responses", str(RESPONSES))
    proc = run_cli("validate", str(instances))
    assert proc.returncode == 0 and proc.stdout.decode() == "36 lines checked in 1 file: 0 problems, 0 warnings\n"


def test_a_byte_order_mark_elsewhere_is_not_silently_dropped() -> None:
    lines = list(read_lines(iter([b"{}\n", codecs.BOM_UTF8 + b"{}\n"])))  # type: ignore[arg-type]
    assert lines[0].value == {} and lines[1].error is not None and "not valid JSON" in lines[1].error


def test_gzip_is_recognised_by_its_magic_bytes_whatever_the_name(tmp_path: Path) -> None:
    disguised = tmp_path / "rollouts.jsonl"  # gzip data, no .gz in the name
    disguised.write_bytes(gzip.compress(COMBINED.read_bytes()))
    assert _scores(str(disguised)) == _scores(str(COMBINED))
    plain_named_gz = tmp_path / "plain.jsonl.gz"  # and a .gz name over plain text is read as it is
    plain_named_gz.write_bytes(COMBINED.read_bytes())
    assert _scores(str(plain_named_gz)) == _scores(str(COMBINED))
    proc = run_cli("validate", str(disguised))
    assert proc.returncode == 0, proc.stdout.decode()


def test_windows_line_ends_score_the_same(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(COMBINED.read_bytes().replace(b"\n", b"\r\n"))
    assert _scores(str(crlf)) == _scores(str(COMBINED))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"id": "a", "response": "unterminated\n', "Unterminated string starting at column 25"),
        (b'{"id": "a", "response": "unterminated\r\n', "Unterminated string starting at column 25"),
        (b'{"id": "a",, "response": "x"}\n', "Expecting property name enclosed in double quotes at column 12"),
        (b'{"id": "a"} trailing\n', "Extra data at column 13"),
        (b'{"id": "a\tb"}\n', "Invalid control character at column 10"),  # a real control character is still one
    ],
)
def test_json_errors_point_at_the_real_column(line: bytes, message: str) -> None:
    parsed = parse_line(3, line)
    assert parsed.error == f"line 3: not valid JSON: {message}"


def test_json_error_in_a_scored_file_names_line_and_column(tmp_path: Path) -> None:
    good = COMBINED.read_bytes().splitlines(keepends=True)[0]
    path = tmp_path / "in.jsonl"
    path.write_bytes(good + b'{"id": "b", "response": "no end\n' + good)
    proc = run_cli("score", str(path), "-q")
    assert proc.returncode == 1
    rows = read_jsonl(proc.stdout)
    assert rows[1]["error"] == "line 2: not valid JSON: Unterminated string starting at column 25"
    assert "overall" in rows[0] and "overall" in rows[2]
    json.dumps(rows)  # every output line is still one JSON object
