"""Several runs side by side: per run (a scores file, or one value of a step column), per type, a mean with its interval.

``trace-tasks report a.jsonl b.jsonl c.jsonl`` (checkpoints) or ``report
scores.jsonl --step COLUMN`` (one file, a column kept by ``score --keep``)
streams each run through a :class:`RunTotals`: per annotation type (and
:data:`~trace_tasks.cli.report._data.ALL`) a count, a sum and a sum of squares
of each reward component and of each failure indicator (1 when a scored row
falls in the failure category, else 0), so memory holds a few numbers per type
and run whatever the rows. A mean is shown with its standard error (the sample
standard deviation over the square root of n, lmms-eval's ``_stderr``) and the
normal 95% interval, mean +- 1.96 standard errors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from trace_tasks.cli.report._data import ALL, COMPONENTS, FAILURES, Row, value
from trace_tasks.runs import group_name

#: z of a two-sided normal 95% interval.
Z95 = 1.96
#: The curves drawn per type: the reward components, then the failure shares (key, title).
SERIES: tuple[tuple[str, str], ...] = (
    *COMPONENTS,
    *((f"failure:{key}", f"{title} (share)") for key, title, _, _ in FAILURES),
)


@attrs.frozen(slots=True)
class Estimate:
    """A mean over ``n`` values with its standard error (None for fewer than 2 values)."""

    n: int
    mean: float
    stderr: float | None

    @property
    def low(self) -> float:
        return self.mean - Z95 * (self.stderr or 0.0)

    @property
    def high(self) -> float:
        return self.mean + Z95 * (self.stderr or 0.0)


class Moments:
    """Count, sum and sum of squares of a stream of numbers: its mean and standard error in O(1) memory."""

    __slots__ = ("n", "squares", "total")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.squares = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        self.squares += x * x

    def estimate(self) -> Estimate:
        if not self.n:
            return Estimate(0, 0.0, None)
        mean = self.total / self.n
        if self.n < 2:
            return Estimate(self.n, mean, None)
        variance = max(self.squares - self.n * mean * mean, 0.0) / (self.n - 1)  # sample variance (n - 1)
        return Estimate(self.n, mean, math.sqrt(variance / self.n))


class _TypeMoments:
    __slots__ = ("moments", "rows")

    def __init__(self) -> None:
        self.rows = 0
        self.moments = {key: Moments() for key, _ in SERIES}


class RunTotals:
    """One run's aggregates, updated one row at a time (error rows count as rows, not in the means)."""

    __slots__ = ("_types", "label")

    def __init__(self, label: str) -> None:
        self.label = label
        self._types: dict[str, _TypeMoments] = {ALL: _TypeMoments()}

    def add(self, row: Row) -> None:
        targets = [self._types[ALL], self._types.get(row.type) or self._types.setdefault(row.type, _TypeMoments())]
        for found in targets:
            found.rows += 1
        if not row.scored:
            return
        values = [value(row, key) for key, _ in COMPONENTS]
        values += [1.0 if test(row) else 0.0 for _, _, _, test in FAILURES]
        for found in targets:
            for (key, _), x in zip(SERIES, values, strict=True):
                found.moments[key].add(x)

    def summary(self) -> RunSummary:
        names = [*sorted(set(self._types) - {ALL}), ALL]
        return RunSummary(
            self.label,
            {name: self._types[name].rows for name in names},
            {name: {key: m.estimate() for key, m in self._types[name].moments.items()} for name in names},
        )


@attrs.frozen
class RunSummary:
    """What the page shows of one run: rows per type, and per type per series its :class:`Estimate`."""

    label: str
    rows: Mapping[str, int]
    estimates: Mapping[str, Mapping[str, Estimate]]

    @property
    def scored(self) -> int:
        return self.estimates[ALL]["overall"].n


def labels_for(paths: Sequence[str], given: Sequence[str] | None) -> list[str]:
    """One label per scores file: ``--label`` in order, else the file's name (its path when two names clash)."""
    if given:
        return list(given)
    names = [path.replace("\\", "/").rsplit("/", 1)[-1] for path in paths]
    return [name if names.count(name) == 1 else path for name, path in zip(names, paths, strict=True)]


def step_value(row: Row, column: str) -> Any:
    """A row's value of the step column: under ``extra`` (``score --keep``), else a top-level key; None when absent."""
    extra = row.scores.get("extra")
    if isinstance(extra, Mapping) and column in extra:
        return extra[column]
    return row.scores.get(column)


class StepTotals:
    """One file split by the value of a step column: a :class:`RunTotals` per value (rows without one are counted)."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.steps: dict[str, tuple[Any, RunTotals]] = {}
        self.without = 0

    def add(self, row: Row) -> None:
        found = step_value(row, self.column)
        if found is None:
            self.without += 1
            return
        name = group_name(found)
        entry = self.steps.get(name)
        if entry is None:
            entry = self.steps[name] = (found, RunTotals(f"{self.column} {name}"))
        entry[1].add(row)

    def summaries(self) -> list[RunSummary]:
        """The steps in order: numbers by value (before any text), text by name."""

        def order(item: tuple[str, tuple[Any, RunTotals]]) -> tuple[int, float, str]:
            name, (found, _) = item
            number = isinstance(found, (int, float)) and not isinstance(found, bool) and math.isfinite(found)
            return (0, float(found), name) if number else (1, 0.0, name)

        return [totals.summary() for _, (_, totals) in sorted(self.steps.items(), key=order)]


def summaries(rows_per_run: Iterable[tuple[str, Iterable[Row]]]) -> list[RunSummary]:
    """A :class:`RunSummary` per (label, rows) (for tests and callers holding rows)."""
    out = []
    for label, rows in rows_per_run:
        totals = RunTotals(label)
        for row in rows:
            totals.add(row)
        out.append(totals.summary())
    return out
