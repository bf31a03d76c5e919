"""The ordinary events of a run, as exceptions, and the exit statuses they stand for.

A run (:func:`trace_tasks.runs.score_files`) or a subcommand raises one of
these (or lets it through from the shared input and output helpers); a Python
caller catches them, and :func:`trace_tasks.cli.main` prints one line on
stderr and returns the documented exit code: no subcommand needs its own
``try`` for them, and none of them ever shows a traceback. The table is in
``docs/cli.md``. Each is a :class:`~trace_tasks.errors.TraceTasksError`, as every error raised on purpose.
"""

from __future__ import annotations

from trace_tasks.errors import TraceTasksError

#: Exit codes (``docs/cli.md``, "Exit codes").
EXIT_OK = 0
#: Some lines failed or problems were found (the run completed); also a plugin that fails to load.
EXIT_FAILED = 1
#: The command could not start: a bad option, an input that cannot be opened, an output that cannot be created
#: or would overwrite an input, a port in use, a missing optional dependency.
EXIT_USAGE = 2
#: The run started but could not finish: reading an input or writing an output failed (sysexits' EX_IOERR).
EXIT_IO = 74
#: Interrupted (Ctrl-C): 128 + SIGINT, as a shell reports it.
EXIT_INTERRUPTED = 130
#: Stopped by SIGTERM (``kill``, a job scheduler, ``docker stop``), handled as Ctrl-C: 128 + SIGTERM.
EXIT_TERMINATED = 143
#: The reader of standard output went away (``| head``): 128 + SIGPIPE, as a shell reports it.
EXIT_CLOSED_PIPE = 141


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised by ``main``'s signal handler, and undone as Ctrl-C is (exit 143).

    A ``KeyboardInterrupt``, so every clean-up that answers Ctrl-C (temporary
    output files removed, the worker pool stopped) answers SIGTERM the same way.
    """


class UsageError(TraceTasksError):
    """The command cannot start as asked; the message says what to fix (exit 2)."""


class CannotOpen(TraceTasksError, OSError):
    """An input cannot be opened (missing, a directory, unreadable): exit 2.

    An ``OSError``, so a subcommand that already reports ``OSError`` on opening keeps doing so.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot open {path}: {reason}")
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0])


class InputFailed(TraceTasksError):
    """Reading an input failed part-way (a truncated .gz, an I/O error): exit 74."""

    def __init__(self, name: str, cause: BaseException) -> None:
        super().__init__(f"reading input failed: {name}: {describe(cause)}")


class OutputFailed(TraceTasksError):
    """Writing an output failed (a full disk, a lost mount): exit 74.

    Deliberately not an ``OSError``: code that reports a failed *read* as ``OSError``
    must not mistake a failed write for one.
    """

    def __init__(self, name: str, cause: BaseException) -> None:
        super().__init__(f"writing output failed: {name}: {describe(cause)}")


class OutputClosed(TraceTasksError):
    """The reader of standard output went away (``| head -1``): exit 141, quietly."""


def describe(exc: BaseException) -> str:
    """An ``OSError`` as its bare reason (``No space left on device``); anything else as its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


#: Another run is writing the same outputs (``score -o``): sysexits' EX_TEMPFAIL, try again when it is done.
EXIT_LOCKED = 75


class OutputLocked(TraceTasksError):
    """Another run holds the lock of these outputs (:mod:`trace_tasks.runs._durable`): exit 75, the other run untouched."""

    def __init__(self, output: str, lock: str) -> None:
        super().__init__(f"another run is writing {output} (it holds {lock}): wait for it to finish, or give -o another name")
