"""Running the ``trace-tasks`` command in-process, and small file builders.

:func:`run_cli` calls :func:`trace_tasks.cli.main` in this process with its own
standard streams (bytes in, bytes out), so a CLI test costs milliseconds
instead of a fresh interpreter. The installed console script and
``python -m trace_tasks.cli`` are proven end to end, once per subcommand, by
``tests/cli/test_subprocess_smoke.py``.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib
import io
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from trace_tasks import resolve_reward_contract
from trace_tasks.cli import main
from trace_tasks.plugins import reset_registry
from trace_tasks.runs._engine import POOL_CHUNK

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
INSTANCES = DATA / "instances.jsonl"
RESPONSES = DATA / "responses.jsonl"
COMBINED = DATA / "combined.jsonl"


class _Sink(io.BytesIO):
    """A byte buffer that keeps its contents readable even if the CLI closes the stream."""

    def close(self) -> None:  # the value is read after main() returns
        self.flush()


class TerminalSink(_Sink):
    """A sink that says it is a terminal (the progress bar draws only on one)."""

    def isatty(self) -> bool:
        return True


class FailingSink(_Sink):
    """A sink whose writes fail with ``error``: a closed pipe (``BrokenPipeError``) or a full disk."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, data: Any) -> int:
        raise self.error


def binary_stdin(data: bytes | io.RawIOBase) -> io.TextIOWrapper:
    """A ``sys.stdin`` stand-in whose ``.buffer`` is a ``BufferedReader`` (it has ``peek``, as a pipe does)."""
    raw = io.BytesIO(data) if isinstance(data, bytes) else data
    return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8")  # type: ignore[arg-type]


def output_stream(sink: io.BytesIO, errors: str = "strict") -> io.TextIOWrapper:
    """A ``sys.stdout``/``sys.stderr`` stand-in: text written through (no buffering) to ``sink``, also ``.buffer``."""
    return io.TextIOWrapper(sink, encoding="utf-8", errors=errors, newline="\n", write_through=True)


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None] | None) -> Iterator[None]:
    """Set (``str``) or unset (``None``) variables for the call; the plugin registry is rebuilt under them."""
    if not env:
        yield
        return
    saved = {name: os.environ.get(name) for name in env}
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_registry()  # TRACE_TASKS_PLUGINS / _DISABLE_PLUGINS are read when the registry is built
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_registry()


@contextlib.contextmanager
def _extra_path(pythonpath: Path | None) -> Iterator[None]:
    """Put ``pythonpath`` first on ``sys.path`` (what ``PYTHONPATH`` does at start-up), then undo it.

    ``importlib.metadata`` scans ``sys.path`` on every call, so a ``*.dist-info``
    folder there is found like an installed distribution. Modules imported from
    it are forgotten afterwards and the registry is rebuilt without them.
    """
    if pythonpath is None:
        yield
        return
    folder = str(pythonpath)
    before = set(sys.modules)
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    reset_registry()
    try:
        yield
    finally:
        sys.path.remove(folder)
        for name in set(sys.modules) - before:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(folder):
                del sys.modules[name]
        importlib.invalidate_caches()
        reset_registry()


@contextlib.contextmanager
def _without_modules(names: Iterable[str]) -> Iterator[None]:
    """Make ``import NAME`` raise ``ImportError`` (a ``None`` entry in ``sys.modules``), as if not installed."""
    saved = {name: sys.modules.get(name) for name in names}
    try:
        for name in saved:
            sys.modules[name] = None  # type: ignore[assignment]
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def run_cli(
    *args: str,
    stdin: bytes | io.RawIOBase | None = None,
    timeout: float | None = None,
    env: Mapping[str, str | None] | None = None,
    pythonpath: Path | None = None,
    without: Iterable[str] = (),
    stdout: io.BytesIO | None = None,
    stderr: io.BytesIO | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``trace-tasks ARGS`` run in-process, with stdout and stderr captured (bytes).

    What a subprocess would give: ``SystemExit`` (argparse, ``--version``)
    becomes the return code, an uncaught exception prints its traceback to
    stderr and returns 1, the working directory is the repository root.
    ``env`` sets (or, with ``None``, unsets) environment variables for the
    call, ``pythonpath`` is put first on ``sys.path`` and ``without`` names
    modules that fail to import; each is undone afterwards. ``stdout`` and
    ``stderr`` replace the capturing buffers (a :class:`FailingSink`, a
    :class:`TerminalSink`). ``timeout`` is accepted for the old signature and
    ignored: nothing here can hang on a pipe.
    """
    del timeout
    out = stdout if stdout is not None else _Sink()
    err = stderr if stderr is not None else _Sink()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    cwd = os.getcwd()
    sys.stdin = binary_stdin(b"" if stdin is None else stdin)
    sys.stdout, sys.stderr = output_stream(out), output_stream(err, errors="backslashreplace")
    try:
        os.chdir(ROOT)
        with _environment(env), _extra_path(pythonpath), _without_modules(without):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = _exit_code(exc.code)
            except Exception:  # uncaught: its traceback and exit code 1, as in a process
                traceback.print_exc(file=sys.stderr)
                code = 1
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError):  # already closed by the command
                stream.flush()
    finally:
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = streams
    return subprocess.CompletedProcess(["trace-tasks", *args], code, out.getvalue(), err.getvalue())


def _exit_code(code: object) -> int:
    """``SystemExit.code`` as a process exit status (``None`` is 0, a message is printed and is 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def instance(
    id: str,
    answer: Any = 2,
    annotation_type: str = "bbox",
    value: Any = (0, 0, 10, 10),
    answer_type: str = "integer",
    **extra: Any,
) -> dict[str, Any]:
    """An instance dict whose contract comes from the resolver."""
    contract = resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()
    return {
        "id": id,
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": annotation_type, "value": list(value) if isinstance(value, tuple) else value},
        "reward_contract": contract,
        **extra,
    }


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Write rows (dicts are JSON-encoded, strings written as they are) one per line."""
    text = "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def repeated_rows(path: Path, rows: list[dict[str, Any]], count: int) -> Path:
    """``count`` rows: ``rows`` over and over, the n-th one's id made ``<id>#<n>`` (distinct ids)."""
    return write_lines(path, [dict(rows[n % len(rows)], id=f"{rows[n % len(rows)].get('id')}#{n}") for n in range(count)])


def two_pool_chunks(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` repeated past one pool chunk: ``--workers 2`` then really hands chunks to its pool.

    An input of one chunk is scored in the command's process whatever ``--workers`` says (docs/cli.md).
    """
    return repeated_rows(path, rows, (POOL_CHUNK // len(rows) + 1) * len(rows))


def read_jsonl(data: bytes | str | Path) -> list[dict[str, Any]]:
    if isinstance(data, Path):
        data = gzip.decompress(data.read_bytes()) if data.suffix == ".gz" else data.read_bytes()
    text = data.decode() if isinstance(data, bytes) else data
    return [json.loads(line) for line in text.splitlines()]


def count_lines(path: Path) -> int:
    return len(path.read_bytes().splitlines())
