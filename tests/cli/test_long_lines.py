"""One physical line is bounded (issue 37, item 2): ``MAX_LINE_BYTES`` in every reader, memory flat past it.

A line longer than the bound used to be held whole, about 3.5 times its size
once decoded: a 64 KB ``.jsonl.gz`` holding one 64 MiB line added 225 MiB,
and under a memory cap the run died with a ``MemoryError`` and no output. Now
such a line is read past in chunks and becomes an error row naming the bound
and its line number; the lines around it are scored as before.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, ROOT, read_jsonl, run_cli
from trace_tasks import limits
from trace_tasks.runs._jsonl import read_lines
from trace_tasks.runs._long_lines import TooLong, bounded_lines

GOOD = COMBINED.read_bytes().splitlines(keepends=True)


def _write_gz_with_long_line(path: Path, length: int, before: list[bytes], after: list[bytes]) -> Path:
    """A ``.jsonl.gz``: ``before``, one line of ``length`` bytes (a JSON string, never decoded), ``after``; written in chunks."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.writelines(before)
        out.write(b'{"response": "')
        block = b"a" * (1 << 20)
        left = length - len(b'{"response": "') - len(b'"}')
        while left > 0:
            out.write(block[:left])
            left -= len(block)
        out.write(b'"}\n')
        out.writelines(after)
    return path


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"abc\nabcd\nabcde\n", [b"abc\n", b"abcd\n", TooLong(5, 4)]),
        (b"abcd", [b"abcd"]),  # a last line without newline, at the bound
        (b"abcde", [TooLong(5, 4)]),
        (b"abcdefghij\nab\r\n\n", [TooLong(10, 4), b"ab\r\n", b"\n"]),
        (b"", []),
    ],
)
def test_bounded_lines_splits_as_iteration_does_and_marks_long_lines(data: bytes, expected: list[object]) -> None:
    assert list(bounded_lines(io.BufferedReader(io.BytesIO(data)), limit=4)) == expected  # type: ignore[arg-type]
    fitting = list(bounded_lines(io.BufferedReader(io.BytesIO(data)), limit=100))  # type: ignore[arg-type]
    assert fitting == list(io.BytesIO(data))


def test_a_line_past_the_bound_is_an_error_row_and_the_run_goes_on(tmp_path: Path) -> None:
    path = _write_gz_with_long_line(tmp_path / "in.jsonl.gz", limits.MAX_LINE_BYTES + 1, GOOD[:3], GOOD[3:6])
    out = tmp_path / "out.jsonl"
    proc = run_cli("score", str(path), "-o", str(out), "-q")
    assert proc.returncode == 1, proc.stderr.decode()  # a failed line, not a crash
    rows = read_jsonl(out)
    assert [row["line"] for row in rows] == [1, 2, 3, 4, 5, 6, 7]
    assert "error" not in rows[0] and "error" not in rows[6]
    assert rows[3]["error"] == (
        f"line 4: the line is {limits.MAX_LINE_BYTES + 1:,} bytes long, past MAX_LINE_BYTES = "
        f"{limits.MAX_LINE_BYTES:,} (docs/limits.md): skipped unread"
    )
    expected = read_jsonl(run_cli("score", "-", stdin=b"".join(GOOD[:6])).stdout)
    assert [row for row in rows if row["line"] != 4] == [{**row, "line": row["line"] + (row["line"] > 3)} for row in expected]


def test_a_line_at_the_bound_is_read(tmp_path: Path) -> None:
    path = _write_gz_with_long_line(tmp_path / "in.jsonl.gz", limits.MAX_LINE_BYTES, [], [])
    with gzip.open(path, "rb") as fh:
        lines = list(read_lines(fh))  # type: ignore[arg-type]
    assert len(lines) == 1 and lines[0].error is None and len(lines[0].value["response"]) == limits.MAX_LINE_BYTES - 16


def test_validate_reports_the_long_line_and_checks_the_rest(tmp_path: Path) -> None:
    path = _write_gz_with_long_line(tmp_path / "in.jsonl.gz", limits.MAX_LINE_BYTES + 10, GOOD[:2], GOOD[2:3])
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1
    text = proc.stdout.decode() + proc.stderr.decode()
    assert f"{path}:3: $: the line is {limits.MAX_LINE_BYTES + 10:,} bytes long, past MAX_LINE_BYTES" in text, text
    assert "Traceback" not in text


#: Run in a fresh interpreter: the bound lowered to 1 MiB, the command run on a file with one 64 MiB line,
#: and the growth of the peak resident memory (ru_maxrss, KiB on Linux) printed.
_MEASURE = """
import json, resource, sys
from trace_tasks import limits
from trace_tasks.cli import main
import trace_tasks.cli.score, trace_tasks.cli.validate, trace_tasks.cli.audit  # imported before the baseline
limits.MAX_LINE_BYTES = 1 << 20
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = main(sys.argv[1:])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"code": code, "grew_kib": after - before}), file=sys.__stderr__)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux (bytes on macOS)")
@pytest.mark.parametrize("command", ["score", "validate", "audit"])
def test_memory_stays_flat_past_the_bound(tmp_path: Path, command: str) -> None:
    path = _write_gz_with_long_line(tmp_path / "in.jsonl.gz", 64 << 20, GOOD[:2], GOOD[2:4])
    assert path.stat().st_size < 1 << 20  # a small file
    args = [command, str(path)] + (["-o", str(tmp_path / "out.jsonl"), "-q"] if command == "score" else [])
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *args], capture_output=True, cwd=ROOT, check=False)
    report = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    assert report["code"] == 1, proc.stderr.decode()  # the long line failed; nothing crashed
    # Held whole, the 64 MiB line added ~225 MiB; read past, a few MiB (the chunks, the gzip buffers).
    assert report["grew_kib"] < 24 * 1024, report
