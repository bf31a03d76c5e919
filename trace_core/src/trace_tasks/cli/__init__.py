"""The ``trace-tasks`` command. Each subcommand lives in its own module here.

A subcommand module defines ``register(subparsers)``, which adds its parser and
sets ``func`` (called with the parsed arguments, returning the exit code).

A deployment problem (a plugin that fails to load, two plugins claiming one
type, a bad ``TRACE_TASKS_REWARD_IDS`` pin, a missing official family: any
:class:`~trace_tasks.errors.TraceTasksError` a subcommand lets through) is
reported by :func:`main` as one line, ``trace-tasks: error: <message>``, with
exit code 1 and no traceback, whatever the subcommand.

So are the ordinary events of any run (:mod:`trace_tasks.runs._errors`):
Ctrl-C (130), SIGTERM (143, undone as Ctrl-C is), a closed pipe on standard output (141, quietly), a failed read
or write part-way (74: a full disk says "writing output failed"), an input
that cannot be opened or an output that cannot be created (2), and an output
that is the same file as an input or another output (2, checked before the
subcommand runs, :func:`trace_tasks.cli._options.check_file_arguments`).
Standard output is wrapped for the run so that its write errors are told
apart from read errors.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import IO, Any, NoReturn

from trace_tasks import __version__
from trace_tasks._build import describe_build
from trace_tasks.cli._options import check_file_arguments
from trace_tasks.errors import TraceTasksError
from trace_tasks.runs import (
    EXIT_CLOSED_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_IO,
    EXIT_LOCKED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    CannotOpen,
    InputFailed,
    OutputClosed,
    OutputFailed,
    OutputLocked,
    Terminated,
    UsageError,
    guard,
)

#: Subcommand modules, in the order ``--help`` lists them.
SUBCOMMANDS: tuple[str, ...] = ("score", "validate", "audit", "explain", "report", "schema", "plugins", "serve")


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad option said in one line (its usage block was 13 lines for ``score``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = _Parser(
        prog="trace-tasks",
        description="Score, validate and explain trace_tasks rewards; list installed families.",
    )
    # The build rides along with the version: a compiled and a pure install of one release
    # score alike but run at different speeds, and a bug report should say which one ran.
    parser.add_argument("--version", action="version", version=f"trace-tasks {__version__}, {describe_build()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"trace_tasks.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; every ordinary event ends in one line on stderr and its exit code (``docs/cli.md``)."""
    real_stdout = sys.stdout
    command = "trace-tasks"
    previous = _answer_sigterm()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        command = f"trace-tasks {args.command}"
        sys.stdout = guard(real_stdout, "standard output")
        check_file_arguments(args)
        code = int(args.func(args) or 0)
        # Flushed here, not at exit: a full disk or a closed pipe on the last write is reported like any other.
        sys.stdout.flush()
        return code
    except Terminated:  # SIGTERM, undone as Ctrl-C is (a KeyboardInterrupt, hence first)
        _say(f"{command}: terminated")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        _say(f"{command}: interrupted")
        return EXIT_INTERRUPTED
    except (OutputClosed, BrokenPipeError):  # the reader went away (| head): nothing left to say, nobody to say it to
        _silence(real_stdout)
        return EXIT_CLOSED_PIPE
    except OutputFailed as exc:
        _silence(real_stdout)
        _say(f"{command}: error: {exc}")
        return EXIT_IO
    except InputFailed as exc:
        _say(f"{command}: error: {exc}")
        return EXIT_IO
    except OutputLocked as exc:  # another run writes these outputs: it is left alone
        _say(f"{command}: error: {exc}")
        return EXIT_LOCKED
    except (UsageError, CannotOpen) as exc:
        _say(f"{command}: error: {exc}")
        return EXIT_USAGE
    except TraceTasksError as exc:
        _say(f"trace-tasks: error: {error_line(exc)}")
        return EXIT_FAILED
    finally:
        sys.stdout = real_stdout
        _restore_sigterm(previous)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as Ctrl-C: raise :class:`Terminated` where the main thread is; a second SIGTERM is ignored
    (it would interrupt the clean-up the first one started)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


def _answer_sigterm() -> tuple[bool, Any]:
    """Install :func:`_on_sigterm` for the run (main thread only): ``(installed, the handler to put back)``."""
    if threading.current_thread() is not threading.main_thread():
        return False, None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # no signals here (an embedded interpreter)
        return False, None
    return True, signal.SIG_DFL if previous is None else previous  # None: a handler not set from Python


def _restore_sigterm(saved: tuple[bool, Any]) -> None:
    installed, previous = saved
    if installed:
        with contextlib.suppress(ValueError, OSError, TypeError):
            signal.signal(signal.SIGTERM, previous)


def _say(line: str) -> None:
    """One line on stderr, unless stderr itself is gone."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _silence(stdout: IO[str]) -> None:
    """Point standard output at the null device, so Python's own flush at exit cannot fail (and print) again.

    A stand-in without a file descriptor (an in-process test) has nothing to flush at exit.
    """
    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def error_line(exc: BaseException) -> str:
    """``ErrorClass: message`` on one line (a message spanning lines is joined with spaces)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


if __name__ == "__main__":  # python -m trace_tasks.cli
    raise SystemExit(main())
