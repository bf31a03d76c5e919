"""Reading and writing JSON Lines for the CLI: ``.jsonl``, ``.jsonl.gz`` and ``-``.

Lines are read as bytes and decoded one at a time, so a stray invalid UTF-8
byte or a malformed line costs that line only (it is reported, not raised).
Every physical line yields exactly one item, blank lines included: the scorer
promises one output line per input line.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

import attrs

STDIO = "-"


@attrs.frozen(slots=True)
class Line:
    """One input line: its 1-based number and either a parsed value or an error."""

    number: int
    value: Any = None
    error: str | None = None


@contextlib.contextmanager
def open_binary(path: str) -> Iterator[IO[bytes]]:
    """Open ``path`` for reading bytes; ``-`` is standard input, ``.gz`` is decompressed."""
    if path == STDIO:
        stream: IO[bytes] = sys.stdin.buffer
        if _is_gzip(stream):
            with gzip.open(stream, "rb") as gz:
                yield gz  # type: ignore[misc]
        else:
            yield stream
        return
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as gz:
            yield gz  # type: ignore[misc]
    else:
        with open(path, "rb") as fh:
            yield fh


def _is_gzip(stream: IO[bytes]) -> bool:
    peek = getattr(stream, "peek", None)
    return peek is not None and peek(2)[:2] == b"\x1f\x8b"


def parse_line(number: int, raw: bytes) -> Line:
    """Decode and parse one line; problems become ``Line.error``, never exceptions."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Line(number, error=f"line {number}: not valid UTF-8: {exc}")
    if not text.strip():
        return Line(number, error=f"line {number}: empty line")
    try:
        return Line(number, json.loads(text))
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
        return Line(number, error=f"line {number}: not valid JSON: {exc}")


def read_lines(fh: IO[bytes]) -> Iterator[Line]:
    """One :class:`Line` per physical line of ``fh``, lazily (memory stays flat)."""
    for number, raw in enumerate(fh, start=1):
        yield parse_line(number, raw)


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """Open the output for text; ``None`` or ``-`` is standard output, ``.gz`` is compressed."""
    if path is None or path == STDIO:
        yield sys.stdout
        sys.stdout.flush()
        return
    if path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as gz:
            yield gz
        return
    with open(path, "w", encoding="utf-8") as fh:
        yield fh


def dumps(value: Any) -> str:
    """Compact one-line JSON (what every output line uses)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
