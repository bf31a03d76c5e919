"""Never lose a file: outputs that are inputs (or each other) are refused, outputs are replaced atomically.

Every refusal is exit 2 with one line on stderr, checked before any input is
read; the files involved keep their bytes. Files are compared as the system
sees them (``dir/../x``, hard and symbolic links), not by spelling.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, read_jsonl, run_cli
from trace_tasks.runs import _output


def _one_line(stderr: bytes) -> str:
    lines = stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _copy(source: Path, target: Path) -> Path:
    target.write_bytes(source.read_bytes())
    return target


def _no_temporaries(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def test_output_same_as_input_is_refused_however_it_is_spelled(tmp_path: Path) -> None:
    data = _copy(COMBINED, tmp_path / "x.jsonl")
    (tmp_path / "sub").mkdir()
    os.link(data, tmp_path / "hard.jsonl")
    (tmp_path / "soft.jsonl").symlink_to(data)
    for spelling in (
        str(data),
        str(tmp_path / "sub" / ".." / "x.jsonl"),
        str(tmp_path / "hard.jsonl"),
        str(tmp_path / "soft.jsonl"),
    ):
        proc = run_cli("score", str(data), "-o", spelling, "-q")
        assert proc.returncode == 2, spelling
        line = _one_line(proc.stderr)
        assert line.startswith(f"trace-tasks score: error: --output {spelling} is the same file as the input INPUT {data}")
        assert proc.stdout == b""
    assert data.read_bytes() == COMBINED.read_bytes()
    _no_temporaries(tmp_path)


def test_a_missing_folder_in_the_output_path_is_not_resolved_away(tmp_path: Path) -> None:
    # open() fails on missing/../x.jsonl: it must not become x.jsonl, the input.
    data = _copy(COMBINED, tmp_path / "x.jsonl")
    proc = run_cli("score", str(data), "-o", str(tmp_path / "missing" / ".." / "x.jsonl"), "-q")
    assert proc.returncode == 2
    assert "No such file or directory" in _one_line(proc.stderr)
    assert data.read_bytes() == COMBINED.read_bytes()


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda i, r, o: [i, "--responses", r, "-o", r], "--output {r} is the same file as the input --responses {r}"),
        (
            lambda i, r, o: [i, "--responses", r, "--summary-json", i],
            "--summary-json {i} is the same file as the input INPUT {i}",
        ),
        (lambda i, r, o: [i, "--responses", r, "-o", o, "--summary-json", o], "--output {o} and --summary-json {o} are the same"),
    ],
    ids=["responses-as-output", "summary-as-input", "summary-as-output"],
)
def test_every_output_option_is_checked(tmp_path: Path, make_args: Callable[..., list[str]], message: str) -> None:
    i, r = _copy(INSTANCES, tmp_path / "i.jsonl"), _copy(RESPONSES, tmp_path / "r.jsonl")
    o = tmp_path / "new.jsonl"  # not there yet: two outputs naming one new file are refused too
    proc = run_cli("score", *make_args(str(i), str(r), str(o)), "-q")
    assert proc.returncode == 2
    assert message.format(i=i, r=r, o=o) in _one_line(proc.stderr)
    assert i.read_bytes() == INSTANCES.read_bytes() and r.read_bytes() == RESPONSES.read_bytes()
    assert not o.exists()


def test_standard_input_is_compared_as_the_file_it_is(tmp_path: Path) -> None:
    data = _copy(COMBINED, tmp_path / "x.jsonl")
    with open(data, "rb", buffering=0) as stdin:  # score - < x.jsonl -o x.jsonl
        proc = run_cli("score", "-", "-o", str(data), "-q", stdin=stdin)
    assert proc.returncode == 2
    assert "--output" in _one_line(proc.stderr) and "(standard input)" in proc.stderr.decode()
    assert data.read_bytes() == COMBINED.read_bytes()


def test_explain_png_may_not_overwrite_its_instance_file(tmp_path: Path) -> None:
    data = _copy(INSTANCES, tmp_path / "i.jsonl")
    proc = run_cli("explain", "--instance", str(data), "--line", "1", "--response", "2", "--png", str(data))
    assert proc.returncode == 2
    assert "--png" in _one_line(proc.stderr)
    assert data.read_bytes() == INSTANCES.read_bytes()


def test_devices_are_not_files_to_lose(tmp_path: Path) -> None:
    proc = run_cli("score", str(COMBINED), "-o", os.devnull, "--summary-json", os.devnull, "-q")
    assert proc.returncode == 0, proc.stderr.decode()


def test_an_existing_output_is_replaced_when_the_run_completes(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    proc = run_cli("score", str(COMBINED), "-o", str(out), "-q")
    assert proc.returncode == 0
    assert read_jsonl(out) == read_jsonl(run_cli("score", str(COMBINED), "-q").stdout)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # the replaced file keeps its mode
    _no_temporaries(tmp_path)


def test_a_new_output_gets_the_usual_mode(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    umask = os.umask(0o022)
    try:
        assert run_cli("score", str(COMBINED), "-o", str(out), "-q").returncode == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # 0o666 less the umask, as open() gives


def test_a_gzip_output_names_its_target_not_the_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl.gz"
    assert run_cli("score", str(COMBINED), "-o", str(out), "-q").returncode == 0
    raw = out.read_bytes()
    assert raw[3] & 0x08  # FNAME flag: the header carries a name...
    name = raw[10 : raw.index(b"\0", 10)]
    assert name == b"scores.jsonl"  # ...the target's, without .gz, as gzip.open(path) writes it
    with gzip.open(out, "rt") as fh:
        assert len(fh.readlines()) == 108


class _InterruptedInput(io.RawIOBase):
    """Standard input that delivers some lines, then Ctrl-C."""

    def __init__(self, data: bytes, after: int) -> None:
        self.data, self.pos, self.after = data, 0, after

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.pos >= self.after:
            raise KeyboardInterrupt
        n = min(len(buffer), self.after - self.pos, 4096)
        buffer[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def test_an_interrupted_run_leaves_existing_outputs_whole(tmp_path: Path) -> None:
    out, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    out.write_text("old scores\n")
    summary.write_text("old summary\n")
    data = COMBINED.read_bytes() * 20
    stdin = _InterruptedInput(data, after=len(data) // 2)
    proc = run_cli("score", "-", "-o", str(out), "--summary-json", str(summary), stdin=stdin)
    assert proc.returncode == 130
    assert _one_line(proc.stderr) == "trace-tasks score: interrupted"
    assert out.read_text() == "old scores\n" and summary.read_text() == "old summary\n"
    _no_temporaries(tmp_path)


def test_summary_json_to_standard_output(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    proc = run_cli("score", str(COMBINED), "-o", str(out), "--summary-json", "-", "-q")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["scored"] == 108
    proc = run_cli("score", str(COMBINED), "--summary-json", "-", "-q")
    assert proc.returncode == 2 and "both go to standard output" in _one_line(proc.stderr)


def test_help_says_what_happens_to_an_existing_output() -> None:
    text = " ".join(run_cli("score", "--help").stdout.decode().split())
    assert "an existing FILE is replaced only when the run completes" in text
    assert "an interrupted or failed run leaves it as it was" in text


def test_file_identity_of_new_and_existing_names(tmp_path: Path) -> None:
    existing = _copy(INSTANCES, tmp_path / "a.jsonl")
    assert _output.file_identity(str(existing)) == _output.file_identity(str(tmp_path / "." / "a.jsonl"))
    assert _output.file_identity(str(tmp_path / "new.jsonl")) == ("path", str(tmp_path.resolve() / "new.jsonl"))
    assert _output.file_identity(os.devnull) is None  # a device: nothing to lose
    assert _output.file_identity(str(tmp_path / "no" / "new.jsonl")) is None  # cannot be written at all
