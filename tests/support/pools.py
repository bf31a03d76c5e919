"""A stand-in for the process pool of ``score --workers N``: no process is started, each chunk runs when handed out.

``runs._engine._Pool._start`` is replaced by it (the ``fake_pool`` fixture of tests/conftest.py), so a
test sees when and how often the pool would start, how many chunks it was handed, and what a dead
worker does to the run, without waiting for real workers.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, ClassVar


class FakeExecutor:
    """Runs each chunk at once; the submissions numbered in ``breaks`` (counted over every fake) fail as a dead worker's do."""

    submitted = 0
    breaks: ClassVar[set[int]] = set()
    broken_submits: ClassVar[set[int]] = set()
    started = 0

    def __init__(self) -> None:
        FakeExecutor.started += 1
        self.broken = False

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        number = FakeExecutor.submitted
        FakeExecutor.submitted += 1
        if self.broken or number in FakeExecutor.broken_submits:
            self.broken = True
            raise BrokenProcessPool("a worker died before this submission")
        future: Future[Any] = Future()
        if number in FakeExecutor.breaks:
            self.broken = True
            future.set_exception(BrokenProcessPool("a worker died while the future was running or pending"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass

    @classmethod
    def reset(cls) -> None:
        cls.submitted = cls.started = 0
        cls.breaks, cls.broken_submits = set(), set()
