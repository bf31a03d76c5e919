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
import math
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

import attrs

from trace_tasks.runs._errors import CannotOpen, InputFailed, describe
from trace_tasks.runs._long_lines import TooLong, bounded_lines
from trace_tasks.runs._output import STDIO, open_outputs

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
    :class:`~trace_tasks.runs._errors.CannotOpen` (exit 2).
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
    Windows write one). A line longer than :data:`~trace_tasks.limits.MAX_LINE_BYTES`
    is an error item naming the bound, read past in bounded memory
    (:mod:`trace_tasks.runs._long_lines`). A read that fails part-way (a truncated or corrupt
    .gz, an I/O error) raises :class:`~trace_tasks.runs._errors.InputFailed`
    naming ``name``.
    """
    try:
        for number, raw in enumerate(bounded_lines(fh), start=1):
            if isinstance(raw, TooLong):  # past MAX_LINE_BYTES: read past, never held
                yield Line(number, error=raw.message(number))
                continue
            yield parse_line(number, raw[len(BOM) :] if number == 1 and raw.startswith(BOM) else raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputFailed(name, exc) from exc


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """The output for text (``None`` or ``-`` is standard output, ``.gz`` compresses), replaced atomically.

    See :func:`trace_tasks.runs._output.open_outputs`.
    """
    with open_outputs(path if path is not None else STDIO) as (stream,):
        assert stream is not None
        yield stream


_COMPACT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_COMPACT_ASCII = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))
#: How a non-finite number is written (as a string: strict JSON has no spelling for it).
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
_STRICT_DEPTH = 200


def strict_values(value: Any, depth: int = 0) -> Any:
    """``value`` with every non-finite float written as a string (``"Infinity"``, ``"-Infinity"``, ``"NaN"``).

    Strict JSON has no spelling for them (Python's ``json`` would write the
    bare ``Infinity`` most readers refuse); an id read from ``1e999`` is one.
    Tuples become lists, as ``json`` writes them.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE.get(value, "NaN")
    if depth > _STRICT_DEPTH:
        return "..."
    if isinstance(value, dict):
        return {_strict_key(key): strict_values(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_values(item, depth + 1) for item in value]
    return value


def _strict_key(key: Any) -> Any:
    return NON_FINITE.get(key, "NaN") if isinstance(key, float) and not math.isfinite(key) else key


def _utf8(text: str) -> bool:
    """True when ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON that can always be written as UTF-8: what every JSON output of the CLI uses.

    Compact and on one line unless ``indent`` is given. Non-ASCII characters
    are written as they are (readable), unless the text
    holds a lone surrogate (valid in JSON as ``"\\ud800"``, never in UTF-8), in
    which case the whole document is written with ASCII escapes, so it reads
    back to the very same strings. A non-finite number (an id read from
    ``1e999``) is written as a string (:func:`strict_values`): the output is
    always strict JSON.
    """
    if indent is None:
        plain, ascii_only = _COMPACT, _COMPACT_ASCII
    else:
        plain = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=indent)
        ascii_only = json.JSONEncoder(ensure_ascii=True, allow_nan=False, indent=indent)
    try:
        text = plain.encode(value)
    except ValueError:  # a non-finite number ("Out of range float values are not JSON compliant")
        value = strict_values(value)
        text = plain.encode(value)
    return text if _utf8(text) else ascii_only.encode(value)
