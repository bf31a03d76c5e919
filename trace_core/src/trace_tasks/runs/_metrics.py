"""Scoring rows with their field metrics for the CLI (``score --summary-json``, ``report``).

The metrics themselves are :func:`trace_tasks.scoring.row_metrics`, read from
the trail of the very run that scored the row. A row's metrics travel with its
scores under :data:`METRICS_KEY` (which no score key can be) and are taken off
before the row is written. The trail keeps the hints (``Trail(hints=True)``),
so the row's mismatch kinds ride beside them under
:data:`~trace_tasks.runs._mismatches.MISMATCHES_KEY`; neither changes a score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.data import mode_problem
from trace_tasks.errors import OptionError
from trace_tasks.plugins import get_registry
from trace_tasks.runs._mismatches import MISMATCHES_KEY, row_record
from trace_tasks.scoring import (
    ScoringOptions,
    Trail,
    declared_model_size,
    frame_problem,
    options_from,
    prepare_target,
    row_metrics,
    run,
    shape_of,
)

#: Where a row's metrics ride beside its scores between the scorer and the summary (never written).
METRICS_KEY = "\x00metrics"
#: Where a row's predicted answer rides, as JSON (``None``: no answer), for ``majority@k`` (never written).
ANSWER_KEY = "\x00answer"


def answer_text(trail: Trail) -> str | None:
    """The predicted answer as comparable text (sorted-key JSON of the final object's ``answer``).

    ``None`` when the final object has no ``answer`` (the scorer then reads the
    whole text as the answer: not something two rollouts share) or it is no JSON value.
    """
    payload = trail.extraction.payload if trail.extraction is not None else None
    if payload is None or payload.get("answer") is None:
        return None
    try:
        return json.dumps(trail.predicted_answer, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def score_compiled_with_metrics(work: Any, opts: ScoringOptions) -> dict[str, Any]:
    """One response scored by its compiled instance with a trail: the scores, and the row's metrics under :data:`METRICS_KEY`."""
    assert work.item is not None and work.compiled is not None
    try:
        work.compiled.check_mode(opts)  # an instance without an answer: annotation_only only
        work.compiled.check_frame(opts)  # a declared frame it cannot be scored in: refused, as score_trace_response does
        trail = Trail(hints=True)
        scores: dict[str, Any] = work.compiled.run(check_response(work.item["response"]), opts, None, trail)
    except Exception as exc:  # isolate the item, as score_trace_batch does
        return {"error": f"{type(exc).__name__}: {exc}"}
    scores[METRICS_KEY] = row_metrics(trail, scores, shape_of(work.compiled.annotation_type))
    scores[ANSWER_KEY] = answer_text(trail)
    scores[MISMATCHES_KEY] = row_record(trail)
    return scores


def score_batch_with_metrics(items: list[Mapping[str, Any]], **options: Any) -> list[dict[str, Any]]:
    """A pool worker's chunk: each item (``score_trace_response``'s keyword arguments) scored as it scores it, with a trail.

    The same ``options_from``, ``prepare_target`` and ``run`` calls as
    ``score_trace_response``, so the scores are its scores; a failing item is
    ``{"error": ...}``, as in :func:`trace_tasks.data.score_trace_batch`.
    """
    opts = options_from(options)
    registry = get_registry()
    results: list[dict[str, Any]] = []
    for item in items:
        try:
            problem = mode_problem(item, opts)  # as CompiledInstance.check_mode says it
            if problem:
                raise OptionError(problem)
            sizes = (item.get("image_size"), item.get("image_sizes"), item.get("metadata"), item.get("extra_info"))
            target = prepare_target(item["answer_gt"], item["annotation_gt"], item["reward_contract"], opts, registry, sizes)
            declared = item.get("model_image_size")
            if declared is not None:  # the resized frame's input size, as score_trace_response reads it
                target.model_size = declared_model_size(declared)
            frame = frame_problem(opts, target)  # as score_trace_response refuses a declared frame it cannot apply
            if frame:
                raise OptionError(frame)
            trail = Trail(hints=True)
            scores: dict[str, Any] = run(check_response(item["response"]), opts, registry, target, trail)
        except Exception as exc:
            results.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        scores[METRICS_KEY] = row_metrics(trail, scores, shape_of(target.type_name))
        scores[ANSWER_KEY] = answer_text(trail)
        scores[MISMATCHES_KEY] = row_record(trail)
        results.append(scores)
    return results
