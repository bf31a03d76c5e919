"""Running totals of scored lines, per annotation type and overall, and their table.

Only sums are kept (constant memory however many lines are scored).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OVERALL = "all"
#: Score keys averaged in the table, with their column titles.
MEANS = (("overall", "overall"), ("answer_reward", "answer"), ("annotation_reward", "annotation"), ("format", "format"))


class _Totals:
    __slots__ = ("annotation_parse_failures", "count", "format_failures", "no_json", "sums")

    def __init__(self) -> None:
        self.count = 0
        self.sums = dict.fromkeys((key for key, _ in MEANS), 0.0)
        self.no_json = 0
        self.annotation_parse_failures = 0
        self.format_failures = 0

    def add(self, scores: Mapping[str, Any]) -> None:
        self.count += 1
        for key in self.sums:
            self.sums[key] += float(scores.get(key, 0.0))
        self.no_json += scores.get("json_found") == 0.0
        self.annotation_parse_failures += scores.get("annotation_parse_ok") == 0.0
        self.format_failures += scores.get("format") == 0.0

    def merge(self, other: _Totals) -> None:
        self.count += other.count
        for key in self.sums:
            self.sums[key] += other.sums[key]
        self.no_json += other.no_json
        self.annotation_parse_failures += other.annotation_parse_failures
        self.format_failures += other.format_failures

    def to_dict(self) -> dict[str, Any]:
        n = self.count
        return {
            "count": n,
            **{f"mean_{key}": (self.sums[key] / n if n else 0.0) for key, _ in MEANS},
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

    def add_scores(self, annotation_type: str, scores: Mapping[str, Any]) -> None:
        self.lines += 1
        self.overall.add(scores)
        self.by_type.setdefault(annotation_type, _Totals()).add(scores)

    def add_error(self) -> None:
        self.lines += 1
        self.errors += 1

    def merge(self, other: Summary) -> None:
        """Add another run's totals (a Ray block's, a worker's): sums add, so the means stay exact."""
        self.lines += other.lines
        self.errors += other.errors
        self.overall.merge(other.overall)
        for name, totals in other.by_type.items():
            self.by_type.setdefault(name, _Totals()).merge(totals)

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable summary (``--summary-json``)."""
        return {
            "lines": self.lines,
            "scored": self.overall.count,
            "errors": self.errors,
            "overall": self.overall.to_dict(),
            "by_annotation_type": {name: self.by_type[name].to_dict() for name in sorted(self.by_type)},
        }

    def table(self) -> str:
        """A fixed-width table: one row per annotation type, then the overall row."""
        headers = [
            "annotation type",
            "count",
            *(f"mean {title}" for _, title in MEANS),
            "no JSON",
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
        return "\n".join(out)

    @staticmethod
    def _row(name: str, totals: _Totals) -> list[str]:
        d = totals.to_dict()
        return [
            name,
            str(d["count"]),
            *(f"{d[f'mean_{key}']:.3f}" for key, _ in MEANS),
            f"{100 * d['no_json_share']:.1f}%",
            str(d["annotation_parse_failures"]),
            str(d["format_failures"]),
        ]
