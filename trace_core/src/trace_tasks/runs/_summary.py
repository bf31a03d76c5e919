"""Running totals of scored lines, per annotation type and overall, and their table.

Only sums, counts and sums of squares are kept (constant memory however many
lines are scored), so two summaries merge exactly. Every mean has its standard error beside it: the sample
standard deviation over ``sqrt(n)`` (lmms-eval's convention), ``None`` below 2
rows. The field metrics of ``score --summary-json``
(:mod:`trace_tasks.runs._metrics`) are kept the same way; the group statistics
(:class:`GroupStats`) keep the state of one group, the rows of one id that come
one after another (see :meth:`Summary.add_metrics`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trace_tasks.runs._failure_hints import ErrorKinds
from trace_tasks.runs._failure_kinds import NO_JSON, no_json
from trace_tasks.runs._mismatches import PARSED, MismatchCounts
from trace_tasks.runs._stats import GroupStats, Moments, OpenGroup

OVERALL = "all"
#: Score keys averaged in the table, with their column titles.
MEANS = (("overall", "overall"), ("answer_reward", "answer"), ("annotation_reward", "annotation"), ("format", "format"))
#: Every score :meth:`_Totals.add` reads (the means, ``no_json``'s ``json_found``, the parse failures): all a
#: ``--workers N`` worker sends back of a row's scores beside its output line (:func:`trace_tasks.runs._rows.row_text`).
TALLIED: tuple[str, ...] = (*(key for key, _ in MEANS), "json_found", "annotation_parse_ok")


def group_name(value: Any) -> str:
    """A ``--group-by`` value as a key: a string as it is, anything else as JSON (a missing column: ``null``)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)


class _Totals:
    __slots__ = (
        "annotation_parse_failures",
        "count",
        "format_failures",
        "metric_counts",
        "metric_spread",
        "metric_sums",
        "no_json",
        "spread",
        "sums",
    )

    def __init__(self) -> None:
        self.count = 0
        self.sums = dict.fromkeys((key for key, _ in MEANS), 0.0)
        #: The spread of each mean's values (the means themselves stay sums over counts, as before).
        self.spread = {key: Moments() for key, _ in MEANS}
        self.no_json = 0
        self.annotation_parse_failures = 0
        self.format_failures = 0
        self.metric_sums: dict[str, float] = {}
        self.metric_counts: dict[str, int] = {}
        self.metric_spread: dict[str, Moments] = {}

    def add_metrics(self, values: Mapping[str, float]) -> None:
        sums, counts, spread = self.metric_sums, self.metric_counts, self.metric_spread
        for key, value in values.items():
            sums[key] = sums.get(key, 0.0) + value
            counts[key] = counts.get(key, 0) + 1
            found = spread.get(key)
            if found is None:
                found = spread[key] = Moments()
            found.add(value)

    def add(self, scores: Mapping[str, Any]) -> None:
        self.count += 1
        for key in self.sums:
            value = float(scores.get(key, 0.0))
            self.sums[key] += value
            self.spread[key].add(value)
        self.no_json += no_json(scores)
        self.annotation_parse_failures += scores.get("annotation_parse_ok") == 0.0
        self.format_failures += scores.get("format") == 0.0

    def merge(self, other: _Totals) -> None:
        self.count += other.count
        for key in self.sums:
            self.sums[key] += other.sums[key]
            self.spread[key].merge(other.spread[key])
        self.no_json += other.no_json
        self.annotation_parse_failures += other.annotation_parse_failures
        self.format_failures += other.format_failures
        for key, value in other.metric_sums.items():
            self.metric_sums[key] = self.metric_sums.get(key, 0.0) + value
            self.metric_counts[key] = self.metric_counts.get(key, 0) + other.metric_counts[key]
            self.metric_spread.setdefault(key, Moments()).merge(other.metric_spread[key])

    def metrics(self) -> dict[str, float]:
        """The mean of each metric over the rows that have it, in name order (``size_mae``: parsed rows only)."""
        return {key: self.metric_sums[key] / self.metric_counts[key] for key in sorted(self.metric_sums)}

    def metrics_stderr(self) -> dict[str, float | None]:
        """The standard error of each metric's mean (:meth:`Moments.stderr`), in name order."""
        return {key: self.metric_spread[key].stderr() for key in sorted(self.metric_spread)}

    def stderr(self, key: str) -> float | None:
        """The standard error of the mean of ``key`` (one of :data:`MEANS`)."""
        return self.spread[key].stderr()

    def to_dict(self) -> dict[str, Any]:
        n = self.count
        means: dict[str, Any] = {}
        for key, _ in MEANS:
            means[f"mean_{key}"] = self.sums[key] / n if n else 0.0
            means[f"mean_{key}_stderr"] = self.stderr(key)
        return {
            "count": n,
            **means,
            "no_json_share": self.no_json / n if n else 0.0,
            "annotation_parse_failures": self.annotation_parse_failures,
            "format_failures": self.format_failures,
        }


class Summary:
    """Totals of a scoring run: scored lines per annotation type, and failed lines."""

    def __init__(self) -> None:
        self.by_type: dict[str, _Totals] = {}
        self.overall = _Totals()
        self.lines = 0
        self.errors = 0
        self.with_metrics = False
        #: ``score --group-by COLUMN``: the column, and the totals of each of its values (one entry per distinct value).
        self.group_by: str | None = None
        self.by_group: dict[str, _Totals] = {}
        #: The kept columns (``--keep``, ``--group-by``) some row or its instance has (one found on none is an error).
        self.found_columns: set[str] = set()
        #: Columns of combined lines that are no instance field and were not kept: ignored (one warning names them).
        self.ignored_columns: set[str] = set()
        #: The failed lines by kind of error (the most common is named when most lines fail).
        self.error_kinds = ErrorKinds()
        #: The statistics of closed groups (an id's consecutive rows, at least 2): per annotation type, and of all.
        self.group_stats: dict[str, GroupStats] = {}
        self.group_all = GroupStats()
        #: The open group (the rows of one id read so far), or None.
        self._group: OpenGroup | None = None
        #: Each mismatch kind per annotation type (rows scored with their metrics only: ``Trail(hints=True)``).
        self.mismatches = MismatchCounts()

    def add_metrics(
        self,
        annotation_type: str,
        row_id: Any,
        overall: float,
        values: Mapping[str, float],
        scores: Mapping[str, Any] | None = None,
        answer: str | None = None,
    ) -> None:
        """A scored row's field metrics (after :meth:`add_scores` of the same row).

        A GRPO group is the rows of one string id that come one after another
        (what a trainer's rollout dump holds): only the open group is kept, so
        memory stays constant. Rows of one id spread through the input make
        several groups, each counted when it has at least 2 rows. ``scores``
        (the row's scores) tells an unparsed annotation apart; ``answer`` is
        the predicted answer as JSON (``None``: none), for ``majority@k``.
        """
        self.with_metrics = True
        self.by_type.setdefault(annotation_type, _Totals()).add_metrics(values)
        accuracy = values.get("answer_accuracy")
        if accuracy is not None:
            self.overall.add_metrics({"answer_accuracy": accuracy})
        parsed = None if scores is None else scores.get("annotation_parse_ok") != 0.0
        group = self._group
        if group is None or not isinstance(row_id, str) or group.id != row_id:
            self._close_group()
            group = self._group = OpenGroup(row_id, annotation_type, overall) if isinstance(row_id, str) else None
        if group is not None:
            group.add(overall, accuracy, parsed, answer)

    def _close_group(self) -> None:
        self.group_stats, self.group_all = self._group_tables()
        self._group = None

    def _group_tables(self) -> tuple[dict[str, GroupStats], GroupStats]:
        """The group statistics with the open group closed (it is not: reading the summary changes nothing)."""
        group = self._group
        if group is None or group.rows < 2:
            return self.group_stats, self.group_all
        by_type = {name: stats.copy() for name, stats in self.group_stats.items()}
        whole = self.group_all.copy()
        by_type.setdefault(group.annotation_type, GroupStats()).add(group)
        whole.add(group)
        return by_type, whole

    def add_scores(self, annotation_type: str, scores: Mapping[str, Any]) -> None:
        self.lines += 1
        self.overall.add(scores)
        self.by_type.setdefault(annotation_type, _Totals()).add(scores)

    def add_group(self, value: Any, scores: Mapping[str, Any]) -> None:
        """A scored row under its value of the ``group_by`` column (after :meth:`add_scores`)."""
        self.by_group.setdefault(group_name(value), _Totals()).add(scores)

    def add_error(self, message: str = "") -> None:
        self.lines += 1
        self.errors += 1
        self.error_kinds.add(message)

    def merge(self, other: Summary) -> None:
        """Add another run's totals (a Ray block's, a worker's): sums add, so the means stay exact."""
        self.lines += other.lines
        self.errors += other.errors
        self.overall.merge(other.overall)
        for name, totals in other.by_type.items():
            self.by_type.setdefault(name, _Totals()).merge(totals)
        self.group_by = self.group_by or other.group_by
        self.found_columns |= other.found_columns
        self.ignored_columns |= other.ignored_columns
        self.error_kinds.merge(other.error_kinds)
        for name, totals in other.by_group.items():
            self.by_group.setdefault(name, _Totals()).merge(totals)
        # Each side's open group is closed: a group split between two merged parts counts as two.
        self.with_metrics = self.with_metrics or other.with_metrics
        self.mismatches.merge(other.mismatches)
        self._close_group()
        by_type, whole = other._group_tables()
        for name, stats in by_type.items():
            self.group_stats.setdefault(name, GroupStats()).merge(stats)
        self.group_all.merge(whole)

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable summary (``--summary-json``)."""
        overall = self.overall.to_dict()
        by_type = {name: self.by_type[name].to_dict() for name in sorted(self.by_type)}
        if self.with_metrics:
            group_stats, group_all = self._group_tables()
            overall["metrics"] = {**self.overall.metrics(), **group_all.to_dict()}
            overall["metrics_stderr"] = self.overall.metrics_stderr()
            for name, totals in by_type.items():
                found = group_stats.get(name)
                groups = {} if found is None else found.to_dict()
                totals["metrics"] = {**self.by_type[name].metrics(), **groups}
                totals["metrics_stderr"] = self.by_type[name].metrics_stderr()
            if self.mismatches.by_type:
                overall["mismatches"] = self.mismatches.overall()
                for name, totals in by_type.items():
                    totals["mismatches"] = self.mismatches.to_dict(name)
        data = {
            "lines": self.lines,
            "scored": self.overall.count,
            "errors": self.errors,
            "overall": overall,
            "by_annotation_type": by_type,
        }
        if self.ignored_columns:
            data["ignored_columns"] = sorted(self.ignored_columns)
        if self.group_by is not None:
            data["group_by"] = self.group_by
            data["by_group"] = {name: self.by_group[name].to_dict() for name in sorted(self.by_group)}
        return data

    def table(self) -> str:
        """A fixed-width table: one row per annotation type, then the overall row."""
        headers = [
            "annotation type",
            "count",
            *(f"mean {title}" for _, title in MEANS),
            NO_JSON,
            "ann. parse fail",
            "format fail",
        ]
        rows = [self._row(name, self.by_type[name]) for name in sorted(self.by_type)]
        rows.append(self._row(OVERALL, self.overall))
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

        def line(cells: list[str]) -> str:
            first = cells[0].ljust(widths[0])
            return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=False))])

        rule = "-" * len(line(headers))
        out = [line(headers), rule, *(line(r) for r in rows[:-1]), rule, line(rows[-1])]
        out.append(f"{self.lines} lines: {self.overall.count} scored, {self.errors} failed (see the 'error' field)")
        out += self.mismatch_lines()
        if self.group_by is not None:
            group_rows = [self._row(name, self.by_group[name]) for name in sorted(self.by_group)]
            cells = [[f"{self.group_by}", *headers[1:]], *group_rows]
            group_widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
            widths[:] = group_widths
            out += ["", line(cells[0]), "-" * len(line(cells[0])), *(line(r) for r in group_rows)]
        return "\n".join(out)

    def mismatch_lines(self) -> list[str]:
        """One line per annotation type with mismatches: each kind and its count (none when nothing was found)."""
        lines = []
        for name in sorted(self.mismatches.by_type):
            kinds = self.mismatches.kinds(name)
            if kinds:
                parsed = self.mismatches.by_type[name][PARSED]
                found = ", ".join(f"{kind} {count}" for kind, count in kinds.items())
                lines.append(f"mismatches in {name} ({parsed} parsed predictions): {found}")
        return lines

    @staticmethod
    def _row(name: str, totals: _Totals) -> list[str]:
        d = totals.to_dict()
        return [
            name,
            str(d["count"]),
            *(_mean_cell(d[f"mean_{key}"], d[f"mean_{key}_stderr"]) for key, _ in MEANS),
            f"{100 * d['no_json_share']:.1f}%",
            str(d["annotation_parse_failures"]),
            str(d["format_failures"]),
        ]


def _mean_cell(mean: float, stderr: float | None) -> str:
    """A mean and its standard error as the table shows them: ``0.589±0.041`` (``±-`` below 2 rows)."""
    return f"{mean:.3f}±{'-' if stderr is None else f'{stderr:.3f}'}"
