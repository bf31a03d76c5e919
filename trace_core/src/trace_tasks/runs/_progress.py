"""A progress bar on standard error, only when standard error is a terminal.

When the input's size is known (a file, or standard input redirected from
one), the bar shows how far through it reading is, in bytes of the file as
stored (compressed for a .gz), with a percentage and an estimated time left;
otherwise it counts lines. tqdm is used when it is importable; otherwise a
one-line counter redrawn at most five times a second. Both are silent when
stderr is not a terminal (logs, CI, pipes) or when the caller asks for quiet.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol


class Progress(Protocol):
    def update(self, lines: int, errors: int, done: int | None = None) -> None:
        """``lines`` more lines handled, ``errors`` of them failed; ``done`` bytes of the input read so far."""

    def close(self) -> None: ...


class _Silent:
    def update(self, lines: int, errors: int, done: int | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def duration(seconds: float) -> str:
    """``0:07``, ``12:30``, ``2:05:09``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def estimate_left(elapsed: float, done: int, total: int) -> float | None:
    """Seconds left at the rate so far, or ``None`` before there is a rate to go by."""
    if done <= 0 or elapsed <= 0:
        return None
    return elapsed * max(total - done, 0) / done


class _Counter:
    """``scoring  45% 12,000 lines (3 errors), 9,800 lines/s, ETA 0:16`` redrawn in place."""

    INTERVAL_S = 0.2

    def __init__(self, label: str, total: int | None = None) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.lines = 0
        self.errors = 0
        self.start = time.monotonic()
        self.last_draw = 0.0

    def update(self, lines: int, errors: int, done: int | None = None) -> None:
        self.lines += lines
        self.errors += errors
        if done is not None:
            self.done = done
        now = time.monotonic()
        if now - self.last_draw >= self.INTERVAL_S:
            self.last_draw = now
            self._draw(now)

    def text(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        counts = f"{self.lines:,} lines ({self.errors:,} errors), {self.lines / elapsed:,.0f} lines/s"
        if not self.total:
            return f"{self.label} {counts}"
        done = min(self.done, self.total)
        left = estimate_left(elapsed, done, self.total)
        if done >= self.total:
            tail = f"in {duration(elapsed)}"
        else:
            tail = f"ETA {duration(left) if left is not None else '?'}"
        return f"{self.label} {100 * done / self.total:3.0f}% {counts}, {tail}"

    def _draw(self, now: float) -> None:
        # Pad over the previous, possibly longer, text: the line is redrawn in place.
        sys.stderr.write(f"\r{self.text(now):<79}")
        sys.stderr.flush()

    def close(self) -> None:
        self._draw(time.monotonic())
        sys.stderr.write("\n")
        sys.stderr.flush()


class _Tqdm:
    """tqdm counting bytes of the input (percentage and ETA) when its size is known, else lines."""

    def __init__(self, tqdm: Any, label: str, total: int | None = None) -> None:
        self.by_bytes = bool(total)
        if self.by_bytes:
            self.bar = tqdm(
                desc=label, total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, dynamic_ncols=True
            )
        else:
            self.bar = tqdm(desc=label, unit=" lines", file=sys.stderr, dynamic_ncols=True)
        self.lines = 0
        self.errors = 0

    def update(self, lines: int, errors: int, done: int | None = None) -> None:
        self.lines += lines
        self.errors += errors
        if not self.by_bytes:
            if errors:
                self.bar.set_postfix(errors=self.errors, refresh=False)
            self.bar.update(lines)
            return
        self.bar.set_postfix(lines=f"{self.lines:,}", errors=self.errors, refresh=False)
        if done is not None and done > self.bar.n:
            self.bar.update(min(done, self.bar.total) - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def make_progress(label: str, *, quiet: bool, total: int | None = None) -> Progress:
    """A progress bar for ``label`` (out of ``total`` bytes when known), or a silent one when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Counter(label, total)
    return _Tqdm(without_monitor(tqdm), label, total)


def without_monitor(tqdm: type) -> type:
    """``tqdm`` with no monitor thread: a subclass whose ``monitor_interval`` is 0 (the caller's class is untouched).

    tqdm's first bar starts a thread that redraws bars updated too rarely; this
    bar is updated every chunk. The thread would also keep ``--workers N`` from
    forking its workers from this process, which it does only while no other
    Python thread runs (:func:`trace_tasks.runs._engine.pool_context`).
    """
    return type("TraceTasksBar", (tqdm,), {"monitor_interval": 0})
