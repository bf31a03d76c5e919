"""A progress bar on standard error, only when standard error is a terminal.

tqdm is used when it is importable; otherwise a one-line counter redrawn at
most five times a second. Both are silent when stderr is not a terminal (logs,
CI, pipes) or when the caller asks for quiet.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol


class Progress(Protocol):
    def update(self, lines: int, errors: int) -> None: ...

    def close(self) -> None: ...


class _Silent:
    def update(self, lines: int, errors: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Counter:
    """``scored 12,000 lines (3 errors), 9,800 lines/s`` redrawn in place."""

    INTERVAL_S = 0.2

    def __init__(self, label: str) -> None:
        self.label = label
        self.lines = 0
        self.errors = 0
        self.start = time.monotonic()
        self.last_draw = 0.0

    def update(self, lines: int, errors: int) -> None:
        self.lines += lines
        self.errors += errors
        now = time.monotonic()
        if now - self.last_draw >= self.INTERVAL_S:
            self.last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.lines / max(now - self.start, 1e-9)
        sys.stderr.write(f"\r{self.label} {self.lines:,} lines ({self.errors:,} errors), {rate:,.0f} lines/s")
        sys.stderr.flush()

    def close(self) -> None:
        self._draw(time.monotonic())
        sys.stderr.write("\n")
        sys.stderr.flush()


class _Tqdm:
    def __init__(self, tqdm: Any, label: str) -> None:
        self.bar = tqdm(desc=label, unit=" lines", file=sys.stderr, dynamic_ncols=True)
        self.errors = 0

    def update(self, lines: int, errors: int) -> None:
        if errors:
            self.errors += errors
            self.bar.set_postfix(errors=self.errors, refresh=False)
        self.bar.update(lines)

    def close(self) -> None:
        self.bar.close()


def make_progress(label: str, *, quiet: bool) -> Progress:
    """A progress bar for ``label``, or a silent one when quiet or stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Counter(label)
    return _Tqdm(tqdm, label)
