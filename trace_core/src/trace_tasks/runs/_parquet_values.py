"""Parquet cells as the JSON values a line would hold: every Arrow type written faithfully, or refused by name.

A Parquet row is read as the JSON line it stands for, and whatever a row
holds may reach a JSON output (``id``, ``score --keep``, ``--group-by``), so
every value is made one JSON can write, at reading:

* a timestamp, a date or a time of day: its ISO 8601 text (``isoformat()``:
  ``2024-05-01T12:30:00+00:00``, ``2024-05-01``, ``12:30:00.250000``; nanoseconds
  kept when the value holds them);
* a duration: its length in seconds, a number (``1.5``);
* a decimal: its exact decimal text (``"12.340"``), never a rounded float;
* binary: base64 text (RFC 4648, with padding); a UUID: its canonical text;
* a map: a list of ``[key, value]`` pairs (Arrow's own order; keys need not be strings);
* an interval (months, days, nanoseconds): ``[months, days, nanoseconds]``.

Anything else (an extension type Python has no JSON spelling for) makes the
row an error naming the column, through :class:`UnsupportedCell`; the run goes on.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import uuid
from typing import Any

#: Deepest nesting converted (Arrow nests lists and structs; beyond, the value is refused).
MAX_DEPTH = 64

_PLAIN = (str, int, float, bool)


class UnsupportedCell(ValueError):
    """A cell whose type JSON cannot spell; :func:`row_error` names its column."""

    def __init__(self, kind: str, column: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.column = column


def json_cells(row: dict[str, Any]) -> dict[str, Any]:
    """Every cell of a row through :func:`json_value`; a refused one raises :class:`UnsupportedCell` naming its column."""
    out = {}
    for column, value in row.items():
        try:
            out[column] = json_value(value)
        except UnsupportedCell as exc:
            raise UnsupportedCell(exc.kind, column) from None
    return out


def json_value(value: Any, depth: int = 0) -> Any:
    """``value`` (a cell of ``to_pylist()``) with every part JSON cannot write converted as the module says."""
    if value is None or isinstance(value, _PLAIN):
        return value
    if depth > MAX_DEPTH:
        raise UnsupportedCell(f"nesting deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {key: json_value(item, depth + 1) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # MonthDayNano: a named tuple
        return [json_value(item, depth + 1) for item in value]
    if isinstance(value, (list, tuple)):
        return [json_value(item, depth + 1) for item in value]
    return _scalar(value)


def _scalar(value: Any) -> Any:
    # datetime before date: a datetime is a date. pandas' Timestamp and Timedelta are subclasses of these.
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    raise UnsupportedCell(type(value).__name__)


def row_error(number: int, exc: UnsupportedCell) -> str:
    """The error of a row holding a cell JSON cannot spell."""
    return (
        f"line {number}: column {exc.column!r} holds a value of type {exc.kind} that a JSON line cannot hold "
        "(see 'Parquet values' in docs/cli.md)"
    )
