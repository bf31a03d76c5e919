"""The kept columns (``--keep``, ``--group-by``) of a Parquet output: one struct column ``extra``, typed.

JSON Lines outputs carry the kept columns under ``"extra"``; a Parquet output
does the same with a struct column ``extra`` whose fields are the kept
columns, each with the Arrow type pyarrow infers from the first batch of rows
(:data:`~trace_tasks.runs._shards.PARQUET_BATCH_ROWS`): an integer ``step``
stays ``int64``, a ``data_source`` ``string``, a nested ``metadata`` a
struct. A column with no value in the first batch is ``string``; one whose
values have no common type there (``3`` and ``"x"``) is written as JSON text.
A later value that does not fit its column's type is written as null and
counted: the run names the column and the count in one warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.runs._jsonl import dumps


class ExtraColumns:
    """The ``extra`` struct of a Parquet output: its field types (fixed by the first batch) and the values that did not fit."""

    def __init__(self, pa: Any, columns: Sequence[str]) -> None:
        self.pa = pa
        #: What arrow raises for a value that does not fit a type (inferring, converting or fitting one value).
        self.misfit_errors = (
            pa.ArrowInvalid,
            pa.ArrowTypeError,
            pa.ArrowNotImplementedError,
            TypeError,
            ValueError,
            OverflowError,
        )
        self.columns = tuple(columns)
        self.types: dict[str, Any] | None = None
        self.as_json: set[str] = set()
        #: column -> values written as null because they did not fit its type
        self.misfits: dict[str, int] = {}

    def _infer(self, column: str, values: list[Any]) -> Any:
        pa = self.pa
        try:
            found = pa.array(values).type
        except self.misfit_errors:
            self.as_json.add(column)
            return pa.string()
        return pa.string() if pa.types.is_null(found) else found

    def field_type(self, rows: list[Mapping[str, Any] | None]) -> Any:
        """The struct type of ``extra``, fixed by the first batch it is asked with."""
        if self.types is None:
            self.types = {column: self._infer(column, self._values(column, rows)) for column in self.columns}
        return self.pa.struct([self.pa.field(column, kind) for column, kind in self.types.items()])

    def _values(self, column: str, rows: list[Mapping[str, Any] | None]) -> list[Any]:
        values = [row.get(column) if isinstance(row, Mapping) else None for row in rows]
        if column in self.as_json:
            return [None if v is None else dumps(v) for v in values]
        return values

    def array(self, rows: list[Mapping[str, Any] | None]) -> Any:
        """The ``extra`` struct array of a batch (each row's kept values; a misfit is null and counted)."""
        pa = self.pa
        kind = self.field_type(rows)
        assert self.types is not None
        arrays = []
        for column, column_type in self.types.items():
            values = self._values(column, rows)
            try:
                arrays.append(pa.array(values, type=column_type))
            except self.misfit_errors:
                arrays.append(pa.array([self._fit(column, v, column_type) for v in values], type=column_type))
        return pa.StructArray.from_arrays(arrays, fields=list(kind))

    def _fit(self, column: str, value: Any, column_type: Any) -> Any:
        pa = self.pa
        try:
            pa.array([value], type=column_type)
        except self.misfit_errors:
            self.misfits[column] = self.misfits.get(column, 0) + 1
            return None
        return value

    def warnings(self) -> list[str]:
        """One line per column with values written as null."""
        assert self.types is not None or not self.misfits
        return [
            f"warning: {count} value(s) of the kept column {column} did not fit its Parquet type "
            f"{self.types[column] if self.types else '?'} (set by the output's first batch of rows): written as null"
            for column, count in sorted(self.misfits.items())
        ]
