"""The field metrics of a report (``report --instances``): the scored inputs run again, each with a trail.

A scores file holds no trail, so the report streams the inputs it was scored
from (the combined file, or the instances index and the responses file)
through the very slots and scorer of ``score --summary-json``
(:func:`trace_tasks.runs._metrics.score_compiled_with_metrics`), each row with
the options its own scores row echoes, into a
:class:`~trace_tasks.runs._summary.Summary`. Memory: the summary's sums, the
instances index in the two-file layout, and per scored row its input line,
overall and (shared) options.
A row whose re-scored ``overall`` differs from the scores file's is counted:
the file was scored with other inputs or another version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.cli.report._data import ALL
from trace_tasks.runs import (
    ANSWER_KEY,
    METRICS_KEY,
    MISMATCHES_KEY,
    InstanceIndex,
    Summary,
    combined_slots,
    joined_slots,
    open_binary,
    read_lines,
    score_compiled_with_metrics,
)
from trace_tasks.scoring import options_from


@attrs.frozen
class RunMetrics:
    """Per type (and ``overall``) the metrics means, and how many rows were re-scored or disagreed."""

    by_type: Mapping[str, Mapping[str, float]]
    overall: Mapping[str, float]
    rescored: int
    disagreeing: int
    #: Per type (and ``all``): the re-scored rows of each mismatch kind (``trace_tasks.scoring.row_mismatches``).
    mismatches: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)


def run_metrics(by_line: Mapping[int, tuple[Any, Mapping[str, Any]]], instances: str, responses: str | None) -> RunMetrics:
    """Re-score the input lines of ``by_line`` (line: the scores file's overall and the row's options) with a trail."""
    summary = Summary()
    disagreeing = rescored = 0
    with open_binary(instances) as fh:
        if responses is None:
            slots: Any = combined_slots(read_lines(fh, instances))
            disagreeing, rescored = _score(slots, by_line, summary)
        else:
            index = InstanceIndex.load(read_lines(fh, instances), instances)
            with open_binary(responses) as rfh:
                disagreeing, rescored = _score(joined_slots(read_lines(rfh, responses), index), by_line, summary)
    data = summary.to_dict()
    by_type = {name: totals.get("metrics", {}) for name, totals in data["by_annotation_type"].items()}
    mismatches = {name: summary.mismatches.kinds(name) for name in summary.mismatches.by_type}
    mismatches[ALL] = summary.mismatches.overall()
    return RunMetrics(by_type, data["overall"].get("metrics", {}), rescored, disagreeing, mismatches)


def _score(slots: Any, by_line: Mapping[int, tuple[Any, Mapping[str, Any]]], summary: Summary) -> tuple[int, int]:
    disagreeing = rescored = 0
    for slot in slots:
        found = by_line.get(slot.line)
        if found is None or slot.item is None or slot.compiled is None:
            continue
        overall, options = found
        result = score_compiled_with_metrics(slot, options_from(dict(options)))
        values = result.pop(METRICS_KEY, None)
        mismatches = result.pop(MISMATCHES_KEY, None)
        answer = result.pop(ANSWER_KEY, None)
        if values is None:
            continue
        if mismatches is not None:
            summary.mismatches.add(slot.annotation_type, mismatches)
        rescored += 1
        disagreeing += result.get("overall") != overall
        summary.add_scores(slot.annotation_type, result)
        summary.add_metrics(slot.annotation_type, slot.id, result["overall"], values, result, answer)
    return disagreeing, rescored
