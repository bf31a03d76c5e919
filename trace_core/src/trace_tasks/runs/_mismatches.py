"""Counting every mismatch of a run per annotation type (``score --summary-json``, ``report``), and its warnings.

A row scored with its field metrics is scored with ``Trail(hints=True)``: the
run itself also scores each other reading of the same parsed prediction, and
:func:`trace_tasks.scoring.row_mismatches` names the ones that would score
clearly more, where the scored object came from inside ``<think>``, and a
final ``<answer>`` block whose tags ``final_only`` refused. The row carries
what it found under :data:`MISMATCHES_KEY` (never written, never a reward) and
:class:`MismatchCounts` adds it up: constant memory, exact merges.

The run warns once per type in which most parsed predictions would score
more under one declared frame (naming the flag that declares it), and once
when ``final_only`` ignored ``<answer>`` tags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trace_tasks.scoring import ANSWER_TAG_IGNORED, PREDICTION_FRAMES, UNPARSED, Trail, row_mismatches

#: Where a row's mismatch kinds ride beside its scores between the scorer and the summary (never written).
MISMATCHES_KEY = "\x00mismatches"
#: The count of rows whose annotation parsed (the warning's denominator), beside the kinds.
PARSED = "parsed_predictions"


def row_record(trail: Trail) -> tuple[bool, tuple[str, ...]]:
    """What one row adds to the counts: did its annotation parse, and the kinds of its mismatches."""
    parsed = trail.parsed_prediction is not UNPARSED and trail.prediction is not None
    return parsed, tuple(m.kind for m in row_mismatches(trail))


class MismatchCounts:
    """Per annotation type: rows whose prediction parsed, and the rows of each mismatch kind."""

    __slots__ = ("by_type",)

    def __init__(self) -> None:
        self.by_type: dict[str, dict[str, int]] = {}

    def add(self, annotation_type: str, record: tuple[bool, Iterable[str]]) -> None:
        counts = self.by_type.setdefault(annotation_type, {PARSED: 0})
        parsed, kinds = record
        counts[PARSED] += parsed
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1

    def merge(self, other: MismatchCounts) -> None:
        for name, theirs in other.by_type.items():
            mine = self.by_type.setdefault(name, {PARSED: 0})
            for kind, count in theirs.items():
                mine[kind] = mine.get(kind, 0) + count

    def kinds(self, annotation_type: str) -> dict[str, int]:
        """The mismatch counts of one type, kinds in name order (without the parsed count)."""
        counts = self.by_type.get(annotation_type, {})
        return {kind: counts[kind] for kind in sorted(counts) if kind != PARSED}

    def overall(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for counts in self.by_type.values():
            for kind, count in counts.items():
                if kind != PARSED:
                    total[kind] = total.get(kind, 0) + count
        return dict(sorted(total.items()))

    def to_dict(self, annotation_type: str) -> dict[str, int]:
        """``{"parsed_predictions": n, kind: count, ...}`` for one type (the ``--summary-json`` value)."""
        return {PARSED: self.by_type.get(annotation_type, {}).get(PARSED, 0), **self.kinds(annotation_type)}

    def warnings(self, options: Mapping[str, Any]) -> list[str]:
        """One line per type where most parsed predictions would score more under one other frame; one for ignored tags."""
        lines: list[str] = []
        for name in sorted(self.by_type):
            counts = self.by_type[name]
            parsed = counts.get(PARSED, 0)
            frames = [(count, kind) for kind, count in counts.items() if kind in PREDICTION_FRAMES]
            if not frames or not parsed:
                continue
            count, frame = max(frames)
            if 2 * count > parsed:
                lines.append(
                    f"warning: {count} of {parsed} parsed {name} predictions would score more read in the {frame} frame: "
                    f"if the model writes that frame, declare it with --prediction-frame {frame}"
                )
        ignored = self.overall().get(ANSWER_TAG_IGNORED, 0)
        if ignored:
            lines.append(
                f"warning: {ignored} rows answered in a final <answer> block whose tags the format refused under "
                f"--recovery {options.get('trace_recovery') or 'final_only'} (format 0): add --format-accept-answer-tag "
                "for the R1 template"
            )
        return lines
