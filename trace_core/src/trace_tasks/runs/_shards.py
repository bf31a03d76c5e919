"""Inputs of many files and one output per input: the shards of ``trace-tasks score``.

INPUT is a file, a directory (its ``.jsonl``, ``.jsonl.gz`` and ``.parquet``
files, not recursing, hidden names left out) or a glob (``'data/*.parquet'``,
``'runs/**/*.jsonl.gz'``; quote it). A directory or a glob is a *sharded* run:
each input shard gets its own output under ``-o DIR``, named after the input's
stem in the input's format (``a.jsonl`` -> ``DIR/a.jsonl``, ``b.jsonl.gz`` ->
``DIR/b.jsonl.gz``, ``c.parquet`` -> ``DIR/c.parquet``). A single file is
sharded too when ``-o`` names a directory (an existing one, or a name ending
in ``/``). Both engines write the same outputs.

An output is written under a temporary name beside it, synced to disk and
renamed when its shard is complete, so a file with an output's name is a
complete one: ``--resume`` skips those shards (after checking that each reads
to its end with one row per input row: :mod:`trace_tasks.runs._resume_check`)
and redoes the rest; a rerun never appends.

Parquet rows are read as the JSON lines would be: one row is one line (its
1-based row number is the output's ``line``); a null cell is a key left out
(Arrow cannot leave a key out of one row), at the top level and inside the
structs of instance fields; an instance field stored as a JSON string is
decoded. Reading and writing Parquet needs pyarrow (``trace-core[ray]``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from typing import IO, Any

import attrs

from trace_tasks.runs._durable import sync_directory, sync_file
from trace_tasks.runs._errors import CannotOpen, InputFailed, OutputFailed, UsageError, describe
from trace_tasks.runs._glob import glob_paths
from trace_tasks.runs._jsonl import Line, dumps, open_source, read_lines
from trace_tasks.runs._long_lines import TooLong, line_limit
from trace_tasks.runs._parquet_extra import ExtraColumns
from trace_tasks.runs._parquet_values import UnsupportedCell, json_cells, row_error

JSONL, JSONL_GZ, PARQUET = "jsonl", "jsonl.gz", "parquet"
#: Suffixes a directory or a glob picks up, and the format each means (longest first).
SUFFIXES: tuple[tuple[str, str], ...] = (
    (".jsonl.gz", JSONL_GZ),
    (".ndjson.gz", JSONL_GZ),
    (".json.gz", JSONL_GZ),
    (".jsonl", JSONL),
    (".ndjson", JSONL),
    (".json", JSONL),
    (".parquet", PARQUET),
)
#: The extension of each format's output.
OUTPUT_EXTENSIONS = {JSONL: ".jsonl", JSONL_GZ: ".jsonl.gz", PARQUET: ".parquet"}
#: Instance fields a Parquet row may hold as JSON text.
JSON_FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")
#: Rows per Arrow record batch written.
PARQUET_BATCH_ROWS = 4096
#: Rows per record batch read, and the uncompressed bytes one may hold by the file's metadata (fewer rows when
#: a row group's rows are large): 4,096 rows of 256 KiB responses at once, 2.7 KB of zstd on disk (one
#: dictionary entry: the metadata cannot tell), took 2.7 GB to read; 64 at a time, 0.5% slower on small rows.
PARQUET_READ_ROWS = 64
PARQUET_BATCH_BYTES = 64 * 1024 * 1024
_GLOB_MAGIC = re.compile(r"[*?[]")
_TEMPORARY = re.compile(r"^\.(?P<base>.+)\.[0-9a-f]{8}\.tmp$")


@attrs.frozen(slots=True)
class Shard:
    """One input file: its path, its format, and the stem its output is named after."""

    path: str
    format: str

    @property
    def stem(self) -> str:
        name = os.path.basename(self.path)
        for suffix, _ in SUFFIXES:
            if name.lower().endswith(suffix):
                return name[: -len(suffix)]
        return name

    def output_in(self, directory: str) -> str:
        return os.path.join(directory, self.stem + OUTPUT_EXTENSIONS[self.format])


def format_of(path: str) -> str | None:
    """The format a suffix names, or ``None`` (a single file of another name is read as JSON Lines)."""
    lower = path.lower()
    return next((fmt for suffix, fmt in SUFFIXES if lower.endswith(suffix)), None)


def is_sharded_input(spec: str) -> bool:
    """True for a directory or a glob pattern (many shards), False for a file or ``-``."""
    return os.path.isdir(spec) or (not os.path.exists(spec) and _GLOB_MAGIC.search(spec) is not None)


def names_directory(output: str | None) -> bool:
    """True when ``-o`` names a directory: an existing one, or a name ending in ``/``."""
    return output is not None and output != "-" and (output.endswith(os.sep) or os.path.isdir(output))


def find_shards(spec: str) -> list[Shard]:
    """The input files ``spec`` names, sorted by path; a missing file raises :class:`CannotOpen`, nothing found :class:`UsageError`."""
    if os.path.isdir(spec):
        paths = [
            os.path.join(spec, name)
            for name in os.listdir(spec)
            if not name.startswith(".") and os.path.isfile(os.path.join(spec, name))
        ]
        where = f"directory {spec}"
    elif not os.path.exists(spec) and _GLOB_MAGIC.search(spec):
        paths = [path for path in glob_paths(spec) if os.path.isfile(path)]  # '**' never follows a directory link
        where = f"glob {spec!r}"
    else:
        if not os.path.exists(spec):
            raise CannotOpen(spec, "No such file or directory")
        return [Shard(spec, format_of(spec) or JSONL)]
    shards = [Shard(path, fmt) for path in sorted(paths) if (fmt := format_of(path)) is not None]
    if not shards:
        kinds = ", ".join(sorted({suffix for suffix, _ in SUFFIXES}))
        raise UsageError(f"{where} holds no input files (looked for {kinds})")
    return shards


def plan_outputs(shards: list[Shard], directory: str, instances: tuple[Shard, ...] = ()) -> list[str]:
    """The output path of each shard under ``directory``; two shards with one output name are refused.

    So is an output that is an input: one of ``shards``, or of ``instances`` (the --responses layout).
    """
    outputs = [shard.output_in(directory) for shard in shards]
    seen: dict[str, Shard] = {}
    for shard, output in zip(shards, outputs, strict=True):
        key = os.path.normcase(os.path.abspath(output))
        if key in seen:
            raise UsageError(f"{seen[key].path} and {shard.path} would both be written to {output}: rename one of them")
        seen[key] = shard
    inputs = {_identity(shard.path) for shard in shards}
    for shard, output in zip(shards, outputs, strict=True):
        if os.path.exists(output) and _identity(output) in inputs:
            raise UsageError(f"the output {output} of {shard.path} is an input: give -o another directory")
        check_not_instances(output, instances)
    return outputs


def check_not_instances(output: str, instances: tuple[Shard, ...]) -> None:
    """Refuse an output that is one of the instances files (compared by device and inode, as inputs are)."""
    if not instances or not os.path.exists(output):
        return
    identity = _identity(output)
    for shard in instances:
        if _identity(shard.path) == identity:
            raise UsageError(f"the output {output} is the instances file {shard.path}: refusing to overwrite an input")


def _identity(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def prepare_directory(directory: str) -> None:
    """Create ``directory`` (and its parents) if needed; one that cannot be made is a :class:`UsageError`."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output directory {directory}: {describe(exc)}") from exc


def remove_stale_temporaries(outputs: list[str]) -> int:
    """Remove the temporary files a killed run left beside ``outputs`` (``.NAME.xxxxxxxx.tmp``); returns how many."""
    wanted: dict[str, set[str]] = {}
    for output in outputs:
        wanted.setdefault(os.path.dirname(output) or os.curdir, set()).add(os.path.basename(output))
    removed = 0
    for directory, names in wanted.items():
        with contextlib.suppress(OSError):
            for entry in os.listdir(directory):
                match = _TEMPORARY.match(entry)
                if match and match.group("base") in names:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, entry))
                        removed += 1
    return removed


# --- reading ------------------------------------------------------------------------------------


@contextlib.contextmanager
def open_lines(shard: Shard) -> Iterator[tuple[Iterator[Line], Any]]:
    """The :class:`Line` items of a shard and an object with ``size()`` and ``position()`` for progress."""
    if shard.format == PARQUET:
        reader = ParquetLines(shard.path)
        yield iter(reader), reader
        return
    with open_source(shard.path) as source:
        yield read_lines(source.stream, source.name), source


def plain_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A Parquet row as the JSON line it stands for: null cells left out, JSON-text instance fields decoded."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        if key in JSON_FIELDS:
            value = _decoded(value)
        out[key] = value
    return out


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value  # validation names the field and what it holds
    return _without_nulls(value)


def _without_nulls(value: Any, depth: int = 0) -> Any:
    """Struct fields that are null in this row are keys the row does not have (recursively, bounded)."""
    if depth > 64:
        return value
    if isinstance(value, dict):
        return {k: _without_nulls(v, depth + 1) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v, depth + 1) for v in value]
    return value


class ParquetLines:
    """The rows of a Parquet file as :class:`Line` items (row ``n`` is line ``n``), read a record batch at a time."""

    def __init__(self, path: str) -> None:
        pq = require_pyarrow().parquet
        self.path = path
        try:
            self._file = pq.ParquetFile(path)
        except OSError as exc:
            raise CannotOpen(path, describe(exc)) from exc
        except Exception as exc:  # pyarrow's ArrowInvalid: not a Parquet file
            raise CannotOpen(path, f"not a readable Parquet file ({exc})") from exc
        self._rows = int(self._file.metadata.num_rows)
        self._read = 0

    def __iter__(self) -> Iterator[Line]:
        number = 0
        limit = line_limit()
        try:
            for batch in self._file.iter_batches(batch_size=self._batch_rows()):
                sizes = _row_bytes(batch)
                for start in range(0, batch.num_rows, _ROWS_AT_ONCE):  # Python rows made a few at a time
                    part = batch.slice(start, _ROWS_AT_ONCE)
                    over = sizes is not None and max(sizes[start : start + _ROWS_AT_ONCE]) > limit
                    rows = _rows_within(part, sizes, start, limit) if sizes is not None and over else part.to_pylist()
                    for row in rows:
                        number += 1
                        if isinstance(row, TooLong):  # as a line past MAX_LINE_BYTES: an error row, never scored
                            yield Line(number, error=row.message(number))
                        else:
                            yield parquet_line(number, row)
                self._read = number
        except OSError as exc:
            raise InputFailed(self.path, exc) from exc
        except Exception as exc:  # a corrupt column chunk part-way
            raise InputFailed(self.path, RuntimeError(str(exc))) from exc

    def _batch_rows(self) -> int:
        """Rows per batch read: :data:`PARQUET_READ_ROWS`, fewer when the widest row group's rows would pass
        :data:`PARQUET_BATCH_BYTES` (its uncompressed size over its rows, from the file's metadata)."""
        metadata = self._file.metadata
        widest = 0.0
        for group in range(metadata.num_row_groups):
            info = metadata.row_group(group)
            if info.num_rows:
                widest = max(widest, info.total_byte_size / info.num_rows)
        return max(1, min(PARQUET_READ_ROWS, int(PARQUET_BATCH_BYTES // widest) if widest else PARQUET_READ_ROWS))

    def size(self) -> int | None:
        return self._rows

    def position(self) -> int | None:
        return self._read


#: Rows of a batch turned into Python values at once (their cells are copied: a batch's worth doubled it).
_ROWS_AT_ONCE = 256


def _row_bytes(batch: Any) -> list[int] | None:
    """Each row's bytes of text and binary cells (Arrow's lengths), or ``None`` when no column holds any."""
    pa = require_pyarrow()
    total = None
    for column in batch.columns:
        kind = column.type
        if not (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
        ):
            continue
        lengths = pa.compute.fill_null(pa.compute.binary_length(column), 0)
        total = lengths if total is None else pa.compute.add(total, lengths)
    return None if total is None else total.to_pylist()


def _rows_within(part: Any, sizes: list[int], start: int, limit: int) -> Iterator[dict[str, Any] | TooLong]:
    """The rows of ``part`` (rows ``start``... of their batch), a :class:`TooLong` for one whose text passes ``limit``."""
    for offset in range(part.num_rows):
        size = sizes[start + offset]
        yield TooLong(size, limit) if size > limit else part.slice(offset, 1).to_pylist()[0]


def require_pyarrow() -> Any:
    """``pyarrow`` with its ``parquet`` module, or a :class:`UsageError` saying what to install."""
    try:
        import pyarrow
        import pyarrow.compute  # noqa: F401 (loads the submodule: the rows' byte lengths)
        import pyarrow.parquet  # noqa: F401 (loads the submodule)
    except ImportError as exc:
        raise UsageError("reading or writing Parquet needs pyarrow: pip install 'trace-core[ray]'") from exc
    return pyarrow


# --- writing ------------------------------------------------------------------------------------


def parquet_columns() -> list[str]:
    """The columns of a Parquet output: ``id``, ``line``, every always-present score key, ``error``."""
    from trace_tasks.scoring import result_keys

    return ["id", "line", *result_keys(), "error"]


def parquet_schema() -> Any:
    pa = require_pyarrow()
    fields = [pa.field("id", pa.string()), pa.field("line", pa.int64())]
    fields += [pa.field(key, pa.float64()) for key in parquet_columns()[2:-1]]
    fields.append(pa.field("error", pa.string()))
    return pa.schema(fields)


def parquet_cells(record: Mapping[str, Any]) -> list[Any]:
    """One output record (``{"id", "line", **scores}`` or ``{"id", "line", "error"}``) as its Parquet cells, in column order."""
    row_id = record.get("id")
    cells: list[Any] = [None if row_id is None else row_id if isinstance(row_id, str) else dumps(row_id), record["line"]]
    error = record.get("error")
    for key in parquet_columns()[2:-1]:
        cells.append(0.0 if error is not None else float(record.get(key, 0.0)))
    cells.append(error)
    return cells


class ParquetOutput:
    """A Parquet output written to a temporary file beside ``path`` and renamed over it by :meth:`commit`."""

    def __init__(self, path: str, columns: tuple[str, ...] = ()) -> None:
        self.pa = require_pyarrow()
        self.path = path
        self.schema = parquet_schema()
        #: With kept columns, the ``extra`` struct column: its type is known at the first batch, so the writer opens then.
        self.extra = ExtraColumns(self.pa, columns) if columns else None
        self._extras: list[Any] = []
        directory, base = os.path.split(os.path.abspath(path))
        try:
            existing = os.stat(path).st_mode if os.path.isfile(path) else None
            while True:  # created exclusively, as the JSON Lines outputs are; an existing output keeps its mode
                self.temporary = os.path.join(directory, f".{base}.{os.urandom(4).hex()}.tmp")
                try:
                    fd = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                    break
                except FileExistsError:
                    continue
            if existing is not None:
                os.chmod(fd, stat.S_IMODE(existing))
            os.close(fd)
            self._writer: Any = None if self.extra is not None else self.pa.parquet.ParquetWriter(self.temporary, self.schema)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {describe(exc)}") from exc
        self._rows: list[list[Any]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        self._rows.append(parquet_cells(record))
        if self.extra is not None:
            self._extras.append(record.get("extra"))
        if len(self._rows) >= PARQUET_BATCH_ROWS:
            self._flush()

    def _open_writer(self) -> None:
        """With kept columns: the schema gets ``extra`` (typed by this first batch) and the writer opens."""
        assert self.extra is not None
        self.schema = self.schema.append(self.pa.field("extra", self.extra.field_type(self._extras)))
        try:
            self._writer = self.pa.parquet.ParquetWriter(self.temporary, self.schema)
        except OSError as exc:
            raise OutputFailed(self.path, exc) from exc

    def _flush(self) -> None:
        if self._writer is None:
            self._open_writer()
        if not self._rows:
            return
        columns = list(zip(*self._rows, strict=True))
        fields = list(self.schema)
        arrays = [self.pa.array(list(column), type=field.type) for column, field in zip(columns, fields, strict=False)]
        if self.extra is not None:
            arrays.append(self.extra.array(self._extras))
            self._extras = []
        try:
            self._writer.write_batch(self.pa.record_batch(arrays, schema=self.schema))
        except OSError as exc:
            raise OutputFailed(self.path, exc) from exc
        self._rows = []

    def commit(self) -> None:
        self._flush()
        if self.extra is not None:
            for warning in self.extra.warnings():
                print(warning, file=sys.stderr)
        try:
            self._writer.close()
            sync_file(self.temporary)  # the data is on disk before the name points at it, as for JSON Lines
            os.replace(self.temporary, self.path)
            sync_directory(os.path.dirname(os.path.abspath(self.path)))
        except OSError as exc:
            raise OutputFailed(self.path, exc) from exc

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            if self._writer is not None:
                self._writer.close()
        with contextlib.suppress(OSError):
            os.unlink(self.temporary)


class JsonlOutput:
    """A JSON Lines output (``.gz`` compresses) replaced atomically: the CLI's own output files."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, record: Mapping[str, Any]) -> None:
        self.stream.write(dumps(record) + "\n")

    def write_line(self, text: str) -> None:
        """A row a pool worker wrote already (:func:`trace_tasks.runs._rows.row_text`)."""
        self.stream.write(text + "\n")


@contextlib.contextmanager
def open_shard_output(path: str, fmt: str, columns: tuple[str, ...] = ()) -> Iterator[ParquetOutput | JsonlOutput]:
    """The output of one shard: complete under its name when the block completes, absent when it raises.

    ``columns``: the kept columns (a Parquet output holds them in its ``extra`` struct column).
    """
    if fmt == PARQUET:
        out = ParquetOutput(path, columns)
        try:
            yield out
            out.commit()
        finally:
            out.discard()
        return
    from trace_tasks.runs._output import open_outputs

    with open_outputs(path) as (stream,):
        assert stream is not None
        yield JsonlOutput(stream)


def parquet_line(number: int, row: dict[str, Any]) -> Line:
    """Row ``number`` as its line: every cell a JSON value (:mod:`trace_tasks.runs._parquet_values`), or an error naming the column."""
    try:
        return Line(number, plain_row(json_cells(row)))
    except UnsupportedCell as exc:
        return Line(number, error=row_error(number, exc))
