"""The progress bar: a total and an ETA when the input's size is known, silence when stderr is not a terminal."""

from __future__ import annotations

import gzip
import io
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.cli.helpers import COMBINED, TerminalSink, run_cli
from trace_tasks.runs import _progress
from trace_tasks.runs._progress import _Counter, _Silent, _Tqdm, duration, estimate_left, make_progress, without_monitor


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(_progress.time, "monotonic", fake)
    return fake


def test_duration_and_estimate() -> None:
    assert [duration(s) for s in (0, 7.4, 750, 7509)] == ["0:00", "0:07", "12:30", "2:05:09"]
    assert estimate_left(10.0, 250, 1000) == 30.0  # a quarter in 10 s: 30 s to go
    assert estimate_left(0.0, 0, 1000) is None


def test_counter_with_a_known_size_shows_percent_and_eta(clock: _Clock) -> None:
    counter = _Counter("scoring", total=4000)
    clock.now += 10
    counter.update(1000, 3, done=1000)
    text = counter.text(clock.now)
    assert text.startswith("scoring  25% 1,000 lines (3 errors), 100 lines/s")
    assert text.endswith("ETA 0:30")
    clock.now += 30
    counter.update(3000, 0, done=4000)
    assert counter.text(clock.now) == "scoring 100% 4,000 lines (3 errors), 100 lines/s, in 0:40"


def test_counter_without_a_size_counts_lines(clock: _Clock) -> None:
    counter = _Counter("scoring")
    clock.now += 2
    counter.update(500, 1)
    assert counter.text(clock.now) == "scoring 500 lines (1 errors), 250 lines/s"


class _FakeTqdm:
    """Records what the adapter asks of tqdm."""

    made: ClassVar[list[_FakeTqdm]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.total = kwargs.get("total")
        self.n = 0
        self.postfix: dict[str, Any] = {}
        self.closed = False
        _FakeTqdm.made.append(self)

    def update(self, n: int) -> None:
        self.n += n

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self.postfix = values

    def close(self) -> None:
        self.closed = True


def test_tqdm_counts_bytes_of_a_sized_input() -> None:
    bar = _Tqdm(_FakeTqdm, "scoring", total=2048)
    bar.update(10, 1, done=1024)
    bar.update(10, 0, done=2048)
    made = _FakeTqdm.made[-1]
    assert made.kwargs["total"] == 2048 and made.kwargs["unit"] == "B"
    assert made.n == 2048 and made.postfix == {"lines": "20", "errors": 1}
    bar.close()
    assert made.closed


def test_tqdm_counts_lines_of_a_stream() -> None:
    bar = _Tqdm(_FakeTqdm, "scoring", total=None)
    bar.update(10, 0, done=None)
    made = _FakeTqdm.made[-1]
    assert "total" not in made.kwargs and made.n == 10


def test_silent_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert isinstance(make_progress("scoring", quiet=False, total=10), _Silent)
    proc = run_cli("score", str(COMBINED), "-o", "-")
    assert "lines/s" not in proc.stderr.decode()  # the summary table, and no bar


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_file_input_draws_percent_to_100_on_a_terminal(tmp_path: Path, compressed: bool) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(gzip.compress(COMBINED.read_bytes()) if compressed else COMBINED.read_bytes())
    proc = run_cli("score", str(path), "-o", str(tmp_path / "out.jsonl"), stderr=TerminalSink(), without=["tqdm"])
    assert proc.returncode == 0
    bar = proc.stderr.decode().split("\n")[0].split("\r")[-1]
    assert bar.startswith("scoring 100% 108 lines (0 errors)"), bar
    assert " in 0:" in bar


def test_standard_input_from_a_pipe_counts_lines(tmp_path: Path) -> None:
    proc = run_cli(
        "score", "-", "-o", str(tmp_path / "out.jsonl"), stdin=COMBINED.read_bytes(), stderr=TerminalSink(), without=["tqdm"]
    )
    bar = proc.stderr.decode().split("\n")[0].split("\r")[-1]
    assert bar.startswith("scoring 108 lines (0 errors)") and "%" not in bar


class _MonitoredTqdm(_FakeTqdm):
    """tqdm's rule for its monitor thread (``tqdm.std.tqdm.__new__``): a thread when ``monitor_interval`` is set."""

    monitor_interval = 10
    monitors: ClassVar[list[threading.Thread]] = []

    def __new__(cls, *args: Any, **kwargs: Any) -> _MonitoredTqdm:
        if cls.monitor_interval:
            monitor = threading.Thread(target=time.sleep, args=(0.5,), daemon=True)
            monitor.start()
            _MonitoredTqdm.monitors.append(monitor)
        return super().__new__(cls)


def test_the_bar_starts_no_monitor_thread_and_leaves_the_callers_tqdm_alone() -> None:
    """A thread would keep --workers N from forking its workers from the command (runs._engine.pool_context)."""
    _MonitoredTqdm.monitors.clear()
    _MonitoredTqdm(desc="the caller's own bar")
    assert len(_MonitoredTqdm.monitors) == 1  # the stand-in starts one, as tqdm does
    bar = _Tqdm(without_monitor(_MonitoredTqdm), "scoring", total=None)
    bar.update(10, 0)
    assert len(_MonitoredTqdm.monitors) == 1
    assert isinstance(_FakeTqdm.made[-1], _MonitoredTqdm) and _FakeTqdm.made[-1].n == 10
    assert _MonitoredTqdm.monitor_interval == 10


def test_make_progress_takes_the_bar_without_its_monitor(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("tqdm")
    module.tqdm = _MonitoredTqdm  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm", module)
    monkeypatch.setattr("sys.stderr", TerminalSink())
    _MonitoredTqdm.monitors.clear()
    progress = make_progress("scoring", quiet=False, total=None)
    assert isinstance(progress, _Tqdm) and isinstance(progress.bar, _MonitoredTqdm)
    assert _MonitoredTqdm.monitors == []
