"""Reading and writing JSON Lines for the CLI: ``.jsonl``, ``.jsonl.gz`` and ``-``.

Gzip input is recognised by its magic bytes, whatever the file is called.

Lines are read as bytes and decoded one at a time, so a stray invalid UTF-8
byte or a malformed line costs that line only (it is reported, not raised).
Every physical line yields exactly one item, blank lines included: the scorer
promises one output line per input line.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import json
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

import attrs

from trace_tasks.cli._errors import CannotOpen, InputFailed, describe
from trace_tasks.cli._output import STDIO, open_outputs

GZIP_MAGIC = b"\x1f\x8b"
BOM = codecs.BOM_UTF8


@attrs.frozen(slots=True)
class Line:
    """One input line: its 1-based number and either a parsed value or an error."""

    number: int
    value: Any = None
    error: str | None = None


@attrs.define
class Source:
    """An opened input: ``stream`` yields its bytes (decompressed when gzip), ``raw`` is the file read.

    :meth:`size` and :meth:`position` measure ``raw``, so a progress bar can
    show how far through the file reading is, compressed or not.
    """

    stream: IO[bytes]
    raw: IO[bytes]
    name: str

    def size(self) -> int | None:
        """The size in bytes of a regular file (stdin redirected from one included), else ``None``."""
        try:
            st = os.fstat(self.raw.fileno())
        except (AttributeError, OSError, ValueError):  # a pipe's stand-in without a descriptor
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def position(self) -> int | None:
        """Bytes of ``raw`` read so far (``None`` when it cannot tell, as for a pipe)."""
        try:
            return self.raw.tell()
        except (OSError, ValueError):
            return None


@contextlib.contextmanager
def open_source(path: str) -> Iterator[Source]:
    """Open ``path`` (``-`` is standard input) for reading bytes; gzip is recognised by its magic bytes.

    An input that cannot be opened (missing, a directory, unreadable) raises
    :class:`~trace_tasks.cli._errors.CannotOpen` (exit 2).
    """
    if path == STDIO:
        raw: IO[bytes] = sys.stdin.buffer
        name = "<stdin>"
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise CannotOpen(path, describe(exc)) from exc
        name = path
    try:
        try:
            compressed = _is_gzip(raw)
        except OSError as exc:  # a directory opens on some systems and fails on the first read
            raise CannotOpen(path, describe(exc)) from exc
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")) if compressed else raw
        yield Source(stream, raw, name)
    finally:
        if path != STDIO:
            raw.close()


@contextlib.contextmanager
def open_binary(path: str) -> Iterator[IO[bytes]]:
    """Open ``path`` for reading bytes: the stream of :func:`open_source`."""
    with open_source(path) as source:
        yield source.stream


def _is_gzip(stream: IO[bytes]) -> bool:
    peek = getattr(stream, "peek", None)
    return peek is not None and peek(2)[:2] == GZIP_MAGIC


def parse_line(number: int, raw: bytes) -> Line:
    """Decode and parse one line; problems become ``Line.error``, never exceptions."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Line(number, error=f"line {number}: not valid UTF-8: {exc}")
    if not text.strip():
        return Line(number, error=f"line {number}: empty line")
    try:
        return Line(number, json.loads(text))  # the line terminator is JSON whitespace: no copy without it
    except json.JSONDecodeError as exc:
        return Line(number, error=f"line {number}: not valid JSON: {_json_error(text, exc)}")
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
        return Line(number, error=f"line {number}: not valid JSON: {exc}")


def _json_error(text: str, first: json.JSONDecodeError) -> str:
    """``Unterminated string starting at column 30``, from the line without its terminator.

    Handed to the parser, the terminator itself would be reported (an
    unterminated string becomes an "invalid control character"); and the line
    holds one JSON text, so its column is the position.
    """
    try:
        json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        message = exc.msg[: -len(" at")] if exc.msg.endswith(" at") else exc.msg
        return f"{message} at column {exc.colno}"
    except (ValueError, RecursionError) as exc:
        return str(exc)
    return str(first)  # not reached: a terminator is whitespace to the parser, it cannot make a text valid


def read_lines(fh: IO[bytes], name: str = "input") -> Iterator[Line]:
    """One :class:`Line` per physical line of ``fh``, lazily (memory stays flat).

    A UTF-8 byte-order mark at the start of line 1 is dropped (editors on
    Windows write one). A read that fails part-way (a truncated or corrupt
    .gz, an I/O error) raises :class:`~trace_tasks.cli._errors.InputFailed`
    naming ``name``.
    """
    try:
        for number, raw in enumerate(fh, start=1):
            yield parse_line(number, raw[len(BOM) :] if number == 1 and raw.startswith(BOM) else raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputFailed(name, exc) from exc


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """The output for text (``None`` or ``-`` is standard output, ``.gz`` compresses), replaced atomically.

    See :func:`trace_tasks.cli._output.open_outputs`.
    """
    with open_outputs(path if path is not None else STDIO) as (stream,):
        assert stream is not None
        yield stream


def dumps(value: Any) -> str:
    """Compact one-line JSON (what every output line uses)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
