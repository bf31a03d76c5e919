"""Outputs that never lose a file, for every subcommand.

* :func:`check_distinct_files` refuses, before anything is read, an output that
  is the same file as an input or as another output. Files are compared as the
  system sees them (device and inode, so ``./x``, ``../d/x``, a symbolic or a
  hard link all count), and standard input, output and error take part when
  they are regular files (``score - < x.jsonl -o x.jsonl``, ``validate x.jsonl
  > x.jsonl``). Devices, pipes and directories cannot be lost and are not
  compared.
* :func:`open_outputs` writes each file output to a temporary file beside its
  target and renames it over the target only when the run completes, so an
  interrupted or failed run leaves an existing file whole and no half-written
  one behind.
* :class:`GuardedStream` turns a failed write into :class:`OutputFailed` or,
  for a closed pipe, :class:`OutputClosed`, which :func:`trace_tasks.cli.main`
  reports with their exit codes instead of a traceback.

Which arguments of a command name files is the command line's business
(:func:`trace_tasks.cli._options.check_file_arguments`).
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, cast

import attrs

from trace_tasks.runs._durable import sync_directory
from trace_tasks.runs._errors import OutputClosed, OutputFailed, UsageError, describe

STDIO = "-"


#: What ``--help`` says about an existing output file (the same words for every output option).
REPLACED_WHEN_DONE = "an existing FILE is replaced only when the run completes; an interrupted or failed run leaves it as it was"

Identity = tuple[str, Any]


class GuardedStream:
    """A text stream whose write errors become :class:`OutputFailed` (or :class:`OutputClosed` for a closed pipe).

    Everything else is the wrapped stream's (``isatty``, ``fileno``, ``buffer``...).
    """

    def __init__(self, stream: IO[str], name: str) -> None:
        self._stream = stream
        self.name = name

    def write(self, text: str) -> int:
        # try/except inline, not a context manager: this runs for every line written.
        try:
            return self._stream.write(text)
        except BrokenPipeError as exc:
            raise OutputClosed(self.name) from exc
        except OSError as exc:
            raise OutputFailed(self.name, exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError as exc:
            raise OutputClosed(self.name) from exc
        except OSError as exc:
            raise OutputFailed(self.name, exc) from exc

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._stream, attribute)


def guard(stream: IO[str], name: str) -> IO[str]:
    """``stream`` behind a :class:`GuardedStream` (once: a guarded stream is returned as it is)."""
    if isinstance(stream, GuardedStream):
        return cast(IO[str], stream)
    return cast(IO[str], GuardedStream(stream, name))


# --- same-file checks ---------------------------------------------------------------------------


#: Names of standard streams and descriptors (``/dev/stdout``, ``/proc/self/fd/1``): written in place, as named.
STREAM_NAME_PREFIXES = ("/dev/", "/proc/")


def names_a_stream(path: str) -> bool:
    """``/dev/stdout`` and the like: a name for an open stream, never a file to replace (or to compare)."""
    return os.path.abspath(path).startswith(STREAM_NAME_PREFIXES)


def output_target(path: str) -> str:
    """The file writing ``path`` would create or replace, as the system resolves it.

    An existing name (a symbolic link included) resolves to the file it
    names; a new name needs its directory to exist (``OSError`` otherwise,
    as ``open`` would raise: ``sub/../x`` is not ``x`` when ``sub`` is missing).
    """
    if os.path.lexists(path):
        return os.path.realpath(path)
    parent = os.path.dirname(path) or os.curdir
    if not stat.S_ISDIR(os.stat(parent).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), parent)
    return os.path.join(os.path.realpath(parent), os.path.basename(path))


def file_identity(path: str) -> Identity | None:
    """What makes two names the same file: device and inode of a regular file, else where it would be created.

    ``None`` for something that cannot be lost (a device such as ``/dev/null``,
    a pipe, a directory) or cannot be written at all (the write fails later,
    with its own message).
    """
    if names_a_stream(path):  # `-o /dev/stdout > out.jsonl` writes where stdout goes, as asked
        return None
    try:
        target = output_target(path)
    except OSError:
        return None
    try:
        st = os.stat(target)
    except OSError:  # not there yet: two outputs may still name the same new file
        return ("path", target)
    return ("inode", (st.st_dev, st.st_ino)) if stat.S_ISREG(st.st_mode) else None


def stream_identity(stream: Any) -> Identity | None:
    """The identity of the regular file a standard stream is (redirected to), else ``None``."""
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's buffer), or closed
        return None
    return ("inode", (st.st_dev, st.st_ino)) if stat.S_ISREG(st.st_mode) else None


@attrs.frozen
class _Named:
    what: str  # how the message names it: "--output out.jsonl", "standard output"
    identity: Identity


def _inputs(inputs: Iterable[tuple[str, str]]) -> list[_Named]:
    named = []
    for label, path in inputs:
        if path == STDIO:
            identity = stream_identity(sys.stdin)
            what = f"{label} - (standard input)"
        else:
            identity = file_identity(path) if os.path.exists(path) else None  # a missing input fails when opened
            what = f"{label} {path}"
        if identity is not None:
            named.append(_Named(what, identity))
    return named


def _outputs(outputs: Iterable[tuple[str, str]]) -> list[_Named]:
    named = []
    for label, path in outputs:
        identity = None if path == STDIO else file_identity(path)  # '-' is standard output, compared below
        if identity is not None:
            named.append(_Named(f"{label} {path}", identity))
    return named


def _streams() -> list[_Named]:
    found = [("standard output", stream_identity(sys.stdout)), ("standard error", stream_identity(sys.stderr))]
    return [_Named(what, identity) for what, identity in found if identity is not None]


def check_distinct_files(inputs: Iterable[tuple[str, str]], outputs: Iterable[tuple[str, str]]) -> None:
    """Raise :class:`UsageError` when an output is an input or another output.

    ``inputs`` and ``outputs`` are ``(label, path)`` pairs (``("--output", "out.jsonl")``; ``"-"`` is a
    standard stream). Standard output and error count as outputs (they may share one file with
    each other, as ``> log 2>&1`` does, but not with an input or an output file).
    """
    sources, targets, streams = _inputs(inputs), _outputs(outputs), _streams()
    for output in (*targets, *streams):
        for source in sources:
            if output.identity == source.identity:
                raise UsageError(
                    f"{output.what} is the same file as the input {source.what}: refusing to overwrite an input"
                    + (" (with '>', the shell has already emptied it)" if output in streams else "")
                )
    _check_pairs(targets, streams)


def _check_pairs(outputs: list[_Named], streams: list[_Named]) -> None:
    for i, first in enumerate(outputs):
        for second in (*outputs[i + 1 :], *streams):
            if first.identity == second.identity:
                raise UsageError(f"{first.what} and {second.what} are the same file: give each output its own file")


# --- atomic outputs ------------------------------------------------------------------------------


class _AtomicFile:
    """One output file: written to a temporary file beside it and renamed over it by :meth:`commit`.

    A symbolic link is followed (the file it names is replaced; the link stays).
    An existing device or pipe (``/dev/null``, ``/dev/full``, a FIFO) and a
    name under ``/dev/`` or ``/proc/`` (``/dev/stdout``, even when it is
    redirected to a file) are written in place: there is nothing to rename
    over. A name ending in ``.gz`` is gzip-compressed.
    """

    def __init__(self, path: str, created: list[str] | None = None) -> None:
        self.path = path
        self.temporary: str | None = None
        # Where a temporary file's name is noted before the file exists: a termination signal raising between
        # its creation and this record (or the caller's) still finds it (open_outputs removes what is left).
        self._created = created
        try:
            # A stream's name is opened as it is: resolved, /dev/stdout may name a pipe ("pipe:[123]").
            self.target = path if names_a_stream(path) else output_target(path)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {describe(exc)}") from exc
        try:
            st: os.stat_result | None = os.stat(self.target)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise UsageError(f"cannot write {path}: it is a directory; give a file name")
        try:
            if st is not None and (not stat.S_ISREG(st.st_mode) or names_a_stream(path)):
                self.raw: IO[bytes] = open(self.target, "wb")  # noqa: SIM115 (closed by commit or discard)
            else:
                self.raw = self._create_temporary(st)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {describe(exc)}") from exc
        self.binary: IO[bytes] = self.raw
        if path.endswith(".gz"):
            # The gzip header names the target, not the temporary file, as gzip.open(path) would.
            self.binary = cast(IO[bytes], gzip.GzipFile(filename=self.target, mode="wb", fileobj=self.raw))
        text = _text(self.binary)
        self.stream = guard(text, path)
        self._text = text

    def _create_temporary(self, existing: os.stat_result | None) -> IO[bytes]:
        directory, base = os.path.split(self.target)
        for _ in range(100):
            name = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.tmp")
            if self._created is not None:
                self._created.append(name)
            try:
                # 0o666 less the umask, like open(path, "w"); an existing target keeps its own mode.
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                if self._created is not None:
                    self._created.remove(name)  # another's file: never ours to remove
                continue
            self.temporary = name
            if existing is not None:
                os.chmod(fd, stat.S_IMODE(existing.st_mode))
            return os.fdopen(fd, "wb")
        raise FileExistsError(f"no free temporary name beside {self.target}")

    def commit(self) -> None:
        """Finish writing (flush, gzip trailer, fsync) and rename the temporary file over the target."""
        try:
            self._text.flush()
            if self.binary is not self.raw:
                self.binary.close()  # writes the gzip trailer; the file below stays open
            self.raw.flush()
            if self.temporary is not None:
                os.fsync(self.raw.fileno())  # the data is on disk before the name points at it
            self.raw.close()
            if self.temporary is not None:
                os.replace(self.temporary, self.target)
                self.temporary = None
                sync_directory(os.path.dirname(self.target))  # and the rename too
        except OSError as exc:
            raise OutputFailed(self.path, exc) from exc

    def discard(self) -> None:
        """Drop what was written: the target is untouched (no-op after :meth:`commit`)."""
        for stream in (self._text, self.raw):
            with contextlib.suppress(Exception):  # a full disk fails the final flush as well
                stream.close()
        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
            self.temporary = None


def _text(binary: IO[bytes]) -> IO[str]:
    return io.TextIOWrapper(cast(Any, binary), encoding="utf-8")


@contextlib.contextmanager
def open_outputs(*paths: str | None) -> Iterator[list[IO[str] | None]]:
    """A text stream per path, in order: ``None`` for ``None`` (no such output), standard output for ``-``.

    Every file is created (as a temporary file beside it) before the block
    runs, so an output that cannot be written fails before any work
    (:class:`UsageError`). When the block completes, each file replaces its
    target; when it raises (an interrupt, a failed read), every target is left
    as it was and the temporary files are removed.
    """
    files: list[_AtomicFile] = []
    streams: list[IO[str] | None] = []
    created: list[str] = []  # every temporary file's name, noted before it is created
    try:
        for path in paths:
            if path is None:
                streams.append(None)
            elif path == STDIO:
                streams.append(guard(sys.stdout, "standard output"))
            else:
                files.append(_AtomicFile(path, created))
                streams.append(files[-1].stream)
        yield streams
        for file in files:
            file.commit()
        if STDIO in paths:
            guard(sys.stdout, "standard output").flush()
    finally:
        for file in files:
            file.discard()
        for name in created:  # a temporary file a signal left unrecorded (renamed or removed ones are gone)
            with contextlib.suppress(OSError):
                os.unlink(name)
