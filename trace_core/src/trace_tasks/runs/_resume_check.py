"""What ``--resume`` checks before it skips an output: that it is whole, one row per row of its input shard.

An output is renamed into place only when complete and synced first
(:mod:`trace_tasks.runs._durable`), but a file with an output's name may still
be short: written by an older version that did not sync, cut by a full disk
or a crash of the file system, or copied in part. So an existing output is
skipped only when it reads to its end and holds as many rows as its input
(the scorer writes exactly one row per input row); otherwise it is redone,
and :func:`output_problem` says why.
"""

from __future__ import annotations

import zlib

from trace_tasks.runs._errors import CannotOpen, InputFailed, describe
from trace_tasks.runs._jsonl import open_source
from trace_tasks.runs._shards import PARQUET, Shard, require_pyarrow

#: Bytes read at a time while rows are counted.
COUNT_CHUNK = 1024 * 1024


def output_problem(output: str, fmt: str, shard: Shard) -> str | None:
    """Why the existing ``output`` of ``shard`` is not complete (``None``: it is, and ``--resume`` skips it)."""
    try:
        expected = row_count(shard.path, shard.format)
    except (CannotOpen, InputFailed):
        return None  # the input itself cannot be read: the run reports that when it reads it
    try:
        found = row_count(output, fmt, complete_lines=True)
    except (CannotOpen, InputFailed) as exc:
        return f"unreadable ({exc})"
    if found != expected:
        return f"holds {found:,} of the {expected:,} rows of {shard.path}"
    return None


def row_count(path: str, fmt: str, *, complete_lines: bool = False) -> int:
    """The rows of a file read to its end: Parquet rows, or physical lines (a last line without newline counts).

    ``complete_lines``: a JSON Lines file must end with a newline (every output line does): one that
    does not was cut short, and counts as unreadable. A file that cannot be read raises :class:`InputFailed`.
    """
    if fmt == PARQUET:
        return _parquet_rows(path, read=complete_lines)
    lines = 0
    last = b"\n"
    try:
        with open_source(path) as source:
            while chunk := source.stream.read(COUNT_CHUNK):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, CannotOpen):
            raise
        raise InputFailed(path, exc) from exc
    if last != b"\n":
        if complete_lines:
            raise InputFailed(path, EOFError("its last line has no newline: cut short"))
        lines += 1
    return lines


def _parquet_rows(path: str, *, read: bool) -> int:
    """The rows of a Parquet file (``read``: every row group read, so a corrupt one fails here too).

    A file cut short has no footer and fails to open.
    """
    pq = require_pyarrow().parquet
    try:
        file = pq.ParquetFile(path)
        if not read:
            return int(file.metadata.num_rows)
        rows = 0
        for group in range(file.num_row_groups):
            rows += file.read_row_group(group, columns=[file.schema_arrow.names[0]]).num_rows if file.schema_arrow.names else 0
        if rows != file.metadata.num_rows:
            raise ValueError(f"its row groups hold {rows} rows, its footer says {file.metadata.num_rows}")
    except OSError as exc:
        raise InputFailed(path, exc) from exc
    except Exception as exc:  # pyarrow's ArrowInvalid: not Parquet, or cut short
        raise InputFailed(path, RuntimeError(describe(exc))) from exc
    return rows
