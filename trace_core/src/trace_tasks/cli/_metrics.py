"""The field's metrics of a scored row, read from the scorer's own trail (``score --summary-json``).

Nothing here measures geometry: a row is scored once, with a
:class:`~trace_tasks.scoring.Trail`, and its metrics are read from the
family's :class:`~trace_tasks.plugins.AnnotationExplanation` of that very run
(the pairs the scorer matched, with their similarity, and the items it left
unmatched on either side, missing and extra map keys' items included):

* a scalar type (``bbox``, ``point``, ``segment``): ``acc@iou0.5`` and
  ``acc@iou0.75`` when the family's metric is ``iou``, else ``acc@sim0.5``: 1
  when the pair's similarity is at least the threshold, 0 otherwise (nothing
  parsed: no pair, a miss);
* a collection (set, sequence, map, set map): ``f1@iou0.5``, ``f1@iou0.75`` (or
  ``f1@sim0.5``): hits are the matched pairs at or above the threshold,
  precision = hits / predicted items, recall = hits / target items, F1 of the
  two, which is ``2 hits / (predicted + target items)``; both sides empty = 1,
  one side empty = 0;
* a set type (shape ``set``): ``size_mae``, ``|predicted items - target items|``,
  on the rows whose prediction parsed;
* every row: ``answer_accuracy`` (the scorer's ``accuracy``).

A row's metrics travel with its scores under :data:`METRICS_KEY` (which no
score key can be) and are taken off before the row is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.plugins import get_registry
from trace_tasks.scoring import UNPARSED, ScoringOptions, Trail, options_from, prepare_target, run

#: Where a row's metrics ride beside its scores between the scorer and the summary (never written).
METRICS_KEY = "\x00metrics"
IOU_THRESHOLDS = (0.5, 0.75)
SIMILARITY_THRESHOLDS = (0.5,)
ANSWER_ACCURACY = "answer_accuracy"
SIZE_MAE = "size_mae"


def row_metrics(trail: Trail, scores: Mapping[str, float], shape: str) -> dict[str, float]:
    """The metrics of one scored row, from its trail; ``shape`` is the annotation type's (``scalar``, ``set``, ...)."""
    values = {ANSWER_ACCURACY: float(scores.get("accuracy", 0.0))}
    explanation = trail.explanation
    if explanation is None:  # the family cannot explain, or the target did not parse: no geometry to report
        return values
    iou = explanation.metric == "iou"
    thresholds, name = (IOU_THRESHOLDS, "iou") if iou else (SIMILARITY_THRESHOLDS, "sim")
    similarities = [pair.similarity for pair in explanation.pairs]
    if shape == "scalar":
        best = max(similarities, default=0.0)
        for t in thresholds:
            values[f"acc@{name}{t:g}"] = 1.0 if best >= t else 0.0
        return values
    predicted = len(similarities) + len(explanation.unmatched_predictions)
    targets = len(similarities) + len(explanation.unmatched_targets)
    for t in thresholds:
        hits = sum(1 for s in similarities if s >= t)
        values[f"f1@{name}{t:g}"] = 1.0 if predicted + targets == 0 else 2.0 * hits / (predicted + targets)
    if shape == "set" and trail.parsed_prediction is not UNPARSED:
        values[SIZE_MAE] = float(abs(predicted - targets))
    return values


def shape_of(annotation_type: str | None) -> str:
    """The collection shape the registry knows for a type ("" when none)."""
    entry = get_registry().annotation_types.get(annotation_type or "")
    return entry.spec.shape if entry is not None and entry.spec is not None else ""


def score_compiled_with_metrics(work: Any, opts: ScoringOptions) -> dict[str, Any]:
    """One response scored by its compiled instance with a trail: the scores, and the row's metrics under :data:`METRICS_KEY`."""
    assert work.item is not None and work.compiled is not None
    try:
        trail = Trail()
        scores: dict[str, Any] = work.compiled.run(check_response(work.item["response"]), opts, None, trail)
    except Exception as exc:  # isolate the item, as score_trace_batch does
        return {"error": f"{type(exc).__name__}: {exc}"}
    scores[METRICS_KEY] = row_metrics(trail, scores, shape_of(work.compiled.annotation_type))
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
            sizes = (item.get("image_size"), item.get("image_sizes"), item.get("metadata"), item.get("extra_info"))
            target = prepare_target(item["answer_gt"], item["annotation_gt"], item["reward_contract"], opts, registry, sizes)
            trail = Trail()
            scores: dict[str, Any] = run(check_response(item["response"]), opts, registry, target, trail)
        except Exception as exc:
            results.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        scores[METRICS_KEY] = row_metrics(trail, scores, shape_of(target.type_name))
        results.append(scores)
    return results
