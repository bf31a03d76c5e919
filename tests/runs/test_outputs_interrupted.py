"""An interrupt (SIGTERM becomes an exception between two bytecodes) while outputs are being opened leaves no temporary file.

``open_outputs`` creates each output as a temporary file beside it. A signal landing right after a temporary
file was created, before anything recorded it, left it behind (CI saw ``.b.jsonl.*.tmp`` after a SIGTERM of
``trace-tasks score`` in the native build, whose first output completes fast). The interrupt is simulated
where it can land: just after the file's creation.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trace_tasks.runs import _output, open_outputs


class Interrupted(BaseException):
    """What a signal handler raises between two bytecodes."""


@pytest.mark.parametrize("which", [0, 1])
def test_an_interrupt_right_after_a_temporary_file_is_created_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: int
) -> None:
    real_open, seen = os.open, []

    def open_then_interrupted(name: str, flags: int, mode: int = 0o777) -> int:
        fd = real_open(name, flags, mode)
        seen.append(name)
        if len(seen) == which + 1:
            os.close(fd)
            raise Interrupted
        return fd

    monkeypatch.setattr(_output.os, "open", open_then_interrupted)
    paths = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    with pytest.raises(Interrupted), open_outputs(*paths):
        pass
    assert len(seen) == which + 1 and sorted(os.listdir(tmp_path)) == []


def test_outputs_still_replace_their_targets(tmp_path: Path) -> None:
    target = tmp_path / "a.jsonl"
    target.write_text("old\n")
    with open_outputs(str(target), str(tmp_path / "b.jsonl")) as (a, b):
        assert a is not None and b is not None
        a.write("new\n")
        b.write("b\n")
    assert target.read_text() == "new\n" and sorted(os.listdir(tmp_path)) == ["a.jsonl", "b.jsonl"]
