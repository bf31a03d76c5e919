"""Physical lines read in bounded memory: a line longer than :data:`~trace_tasks.limits.MAX_LINE_BYTES` is skipped, not held.

Iterating a binary file holds each line whole (and decoding and parsing it
costs about 3.5 times its size again), so one line of a few hundred MiB in a
small ``.jsonl.gz`` could exhaust memory and lose every good line around it.
:func:`bounded_lines` reads at most the bound plus one byte of a line; a line
past it is read on in chunks and dropped up to its newline, and stands in the
stream as a :class:`TooLong` marker, which the readers turn into an error row
naming the bound and the line number. Memory stays flat whatever the line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO

import attrs

from trace_tasks import limits

#: Bytes read at a time while a too-long line is skipped.
SKIP_CHUNK = 1024 * 1024


@attrs.frozen(slots=True)
class TooLong:
    """A physical line longer than the bound: how many bytes it held (without its terminator) and the bound."""

    length: int
    limit: int

    def message(self, number: int) -> str:
        return (
            f"line {number}: the line is {self.length:,} bytes long, past MAX_LINE_BYTES = {self.limit:,} "
            "(docs/limits.md): skipped unread"
        )


def line_limit() -> int:
    """The bound on one line, read when a file is opened (``limits.MAX_LINE_BYTES``)."""
    return limits.MAX_LINE_BYTES


def bounded_lines(fh: IO[bytes], limit: int | None = None) -> Iterator[bytes | TooLong]:
    """Each physical line of ``fh`` (with its terminator), or a :class:`TooLong` for one past ``limit`` bytes."""
    limit = line_limit() if limit is None else limit
    readline = getattr(fh, "readline", None)
    if readline is None:  # lines already in memory (an iterable of bytes): only their parsing is spared
        for raw in fh:
            content = len(raw) - raw.endswith(b"\n")
            yield raw if content <= limit else TooLong(content, limit)
        return
    while True:
        raw = readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):  # at most the bound, then its newline (or the end of the file)
            yield raw
            continue
        yield _skip_rest(readline, len(raw), limit)


def _skip_rest(readline: Callable[[int], bytes], read: int, limit: int) -> TooLong:
    """Read past the rest of a too-long line, a chunk at a time, and count its bytes."""
    length = read
    while True:
        chunk = readline(SKIP_CHUNK)
        if not chunk:
            return TooLong(length, limit)
        if chunk.endswith(b"\n"):
            return TooLong(length + len(chunk) - 1, limit)
        length += len(chunk)
