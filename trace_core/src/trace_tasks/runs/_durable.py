"""Outputs that survive a crash and a second run: syncing before a rename, and one run per output.

* :func:`sync_file` puts a file's data on disk before a rename makes its name
  point at it (a writer that closes its own file, as pyarrow's does, is synced
  by reopening it), and :func:`sync_directory` makes the rename itself durable.
  Without it a crash after the rename could leave a complete-looking name over
  an empty or partial file, which ``--resume`` would then skip.
* :func:`lock_output` takes an advisory lock (``fcntl.flock``) on a lock file
  beside an output file, or in an output directory, for the whole run: a
  second run on the same outputs stops at once with :class:`OutputLocked`
  (exit 75) instead of removing the first run's temporary files. The lock file
  is removed when the run ends; a lock held by a killed process is released by
  the system, so a stale lock file never blocks a later run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

from trace_tasks.runs._errors import OutputLocked, UsageError, describe

#: The lock file of a sharded run, in its output directory (hidden: never taken for a shard).
DIRECTORY_LOCK = ".trace-tasks-score.lock"
#: How many times a lock file removed under us (by the run that held it) is opened again.
_LOCK_ATTEMPTS = 16


def sync_file(path: str) -> None:
    """Flush ``path``'s data to disk (its writer has closed it): call before renaming it into place."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable; best effort (some file systems cannot sync a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory or os.curdir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def lock_path(output: str, directory: bool) -> str:
    """The lock file of an output: in the directory of a sharded run, else ``.NAME.lock`` beside the file."""
    if directory:
        return os.path.join(output, DIRECTORY_LOCK)
    parent, base = os.path.split(os.path.abspath(output))
    return os.path.join(parent, f".{base}.lock")


@contextlib.contextmanager
def lock_output(output: str, directory: bool = False) -> Iterator[str]:
    """Hold the run's lock on ``output`` (a file, or the directory of a sharded run) while the block runs.

    Another run holding it raises :class:`OutputLocked`. Where locks are not
    available (no ``fcntl``: Windows) the block runs unlocked.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover (POSIX has it)
        yield ""
        return
    path = lock_path(output, directory)
    fd = _acquire(fcntl, path, output)
    _held.add(fd)
    try:
        yield path
    finally:
        _held.discard(fd)
        # Removed while still held: a run that opened it meanwhile sees another file under the name and retries.
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


#: The descriptors of the locks this process holds (:func:`lock_output`).
_held: set[int] = set()


def drop_inherited_locks() -> None:
    """In a process forked from a run (a pool worker): close its copies of the run's lock descriptors.

    An ``flock`` belongs to the open file, which a fork shares: a worker holding
    a copy would keep the output locked after its run was killed, until the
    worker noticed and exited, and a run started again at once would be refused.
    """
    for fd in list(_held):
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


def _acquire(fcntl: ModuleType, path: str, output: str) -> int:
    flock, lock_ex, lock_nb = fcntl.flock, fcntl.LOCK_EX, fcntl.LOCK_NB
    for _ in range(_LOCK_ATTEMPTS):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise UsageError(f"cannot lock the output {output}: {describe(exc)}") from exc
        try:
            flock(fd, lock_ex | lock_nb)
        except BlockingIOError:
            os.close(fd)
            raise OutputLocked(output, path) from None
        except OSError:  # a file system without locks: write as before, unlocked
            return fd
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            same = False
        if same:
            return fd
        os.close(fd)  # the previous holder removed it as we locked it: lock the new one
    raise OutputLocked(output, path)
