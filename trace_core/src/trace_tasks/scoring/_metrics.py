"""The field's metrics of one scored row, read from the scorer's own trail (``score --summary-json``, lmms-eval).

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
* a version whose explanation's metric is ``click`` (the box family's
  ``bbox_click_hit_v0`` and ``bbox_click_soft_v0``): ``click_acc``, 1 when the
  click is inside the target box (the score's ``annotation_click_inside``),
  else 0 (nothing parsed: a miss); the share of clicks inside over rows;
* every row: ``answer_accuracy`` (the scorer's ``accuracy``); with the row's
  ``answer_gt`` of type ``number``, also ``relaxed_accuracy``: ChartQA's relaxed
  accuracy of the predicted answer (within 5% of the target, relative; see
  :func:`~trace_tasks.scoring.relaxed_number_match`), an evaluation view that never
  changes the reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trace_tasks.plugins import get_registry
from trace_tasks.reading import is_mapping
from trace_tasks.scoring._pipeline import Trail
from trace_tasks.scoring._plugin_calls import UNPARSED
from trace_tasks.scoring._relaxed import RELAXED_TOLERANCE, relaxed_number_match

IOU_THRESHOLDS = (0.5, 0.75)
SIMILARITY_THRESHOLDS = (0.5,)
ANSWER_ACCURACY = "answer_accuracy"
RELAXED_ACCURACY = "relaxed_accuracy"
SIZE_MAE = "size_mae"
#: The explanation metric a family names for click rewards, and the field metric it gives.
CLICK_METRIC = "click"
CLICK_ACC = "click_acc"
CLICK_INSIDE_KEY = "annotation_click_inside"


def row_metrics(trail: Trail, scores: Mapping[str, float], shape: str, answer_gt: Any = None) -> dict[str, float]:
    """The metrics of one scored row, from its trail; ``shape`` is the annotation type's (``scalar``, ``set``, ...).

    ``answer_gt`` (the row's, optional) adds ``relaxed_accuracy`` for a ``number`` answer.
    """
    values = {ANSWER_ACCURACY: float(scores.get("accuracy", 0.0))}
    if is_mapping(answer_gt) and answer_gt.get("type") == "number" and "value" in answer_gt:
        matched = relaxed_number_match(trail.predicted_answer, answer_gt["value"], RELAXED_TOLERANCE)
        values[RELAXED_ACCURACY] = 1.0 if matched else 0.0
    explanation = trail.explanation
    if explanation is None:  # the family cannot explain, or the target did not parse: no geometry to report
        return values
    if explanation.metric == CLICK_METRIC:  # a click version: was the click inside the box?
        values[CLICK_ACC] = 1.0 if explanation.pairs and scores.get(CLICK_INSIDE_KEY) == 1.0 else 0.0
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
