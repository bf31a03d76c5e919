"""lmms-eval task utilities: score a model's generations against trace instances.

An lmms-eval task (0.7.3) names its functions in the task YAML with
``!function utils.NAME``, resolved in the ``utils.py`` next to the YAML
(``lmms_eval/utils.py`` l.933-956). The task's ``utils.py``::

    from trace_tasks.integrations.lmms_eval import make_process_results, mean, mean_lower_is_better  # noqa: F401
    METRICS = ("overall", "f1@iou0.5", ...)   # the names the YAML's metric_list lists
    process_results = make_process_results(format_weight=0.0, metrics=METRICS)

and its YAML (a whole task: ``examples/lmms_eval/trace_bbox/``)::

    output_type: generate_until
    process_results: !function utils.process_results
    metric_list:
      - metric: overall
        aggregation: !function utils.mean
        higher_is_better: true
      - metric: f1@iou0.5
        aggregation: !function utils.mean
        higher_is_better: true
      ...

``process_results(doc, results)`` returns ``{metric: value}`` for one document
(lmms-eval strips each generation and passes them as a list,
``lmms_eval/api/task.py`` l.1584-1595; ``results[0]`` is scored), the same keys
for every document: the rewards (:data:`REWARD_METRICS`: ``overall``,
``answer_reward``, ``annotation_reward``, ``format``) and the field metrics
that ``trace-tasks score --summary-json`` reports (:data:`FIELD_METRICS`:
``answer_accuracy``, ``acc@iou0.5``, ``acc@iou0.75``, ``acc@sim0.5`` for a
single box, point or segment; ``f1@iou0.5``, ``f1@iou0.75``, ``f1@sim0.5`` for
a collection; ``size_mae`` for a set), read from the scorer's own trail by
:func:`trace_tasks.scoring.row_metrics` (nothing is re-measured here). A
metric that does not apply to the document's type is ``None``; :func:`mean`
(and :func:`mean_lower_is_better`, for ``size_mae``) average the documents that
have a value, so ``f1@iou0.5`` is the mean over the collection documents.
lmms-eval aggregates only the metrics the YAML lists
(``lmms_eval/evaluator_utils.py`` l.115-123) and reports a returned key the
YAML does not list as ``[]`` (l.436-438): ``make_process_results(metrics=[...])``
returns only the keys named, the YAML's.

The document holds the instance: its ``answer_gt``, ``annotation_gt`` and
``reward_contract`` fields (JSON strings or mappings; optional ``image_size``,
``metadata``), or, with ``instance_key="instance"``, one field holding the
instance (a mapping or its JSON string).

Errors: a broken instance raises :class:`~trace_tasks.data.InstanceError`
(a ``ValueError``) naming the document (its ``id``/``question_id`` when it has
one) and every problem. lmms-eval 0.7.3 retries ``Task.process_results`` (5
attempts, ``tenacity``, ``api/task.py`` l.1583) and then stops the run with a
``RetryError`` whose cause is that message. ``on_invalid="zero"`` scores such a
document 0 with ``trace_refused`` 1.0 instead (logged at ERROR), so the run
finishes and ``trace_refused`` counts the broken documents. Model output never
raises.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import (
    REFUSED_KEY,
    check_on_invalid,
    compile_ground_truth,
    log_error,
    picked_metrics,
    scorer_options,
)
from trace_tasks.scoring import (
    ANSWER_ACCURACY,
    IOU_THRESHOLDS,
    SIMILARITY_THRESHOLDS,
    SIZE_MAE,
    Trail,
    options_from,
    row_metrics,
    shape_of,
)

__all__ = [
    "FIELD_METRICS",
    "METRICS",
    "REWARD_METRICS",
    "make_process_results",
    "mean",
    "mean_lower_is_better",
    "process_results",
]

logger = logging.getLogger(__name__)

#: The rewards reported per document.
REWARD_METRICS: tuple[str, ...] = ("overall", "answer_reward", "annotation_reward", "format")
#: The field metrics (``trace-tasks score --summary-json``'s), ``None`` where the type has none.
FIELD_METRICS: tuple[str, ...] = (
    ANSWER_ACCURACY,
    *(f"acc@iou{t:g}" for t in IOU_THRESHOLDS),
    *(f"acc@sim{t:g}" for t in SIMILARITY_THRESHOLDS),
    *(f"f1@iou{t:g}" for t in IOU_THRESHOLDS),
    *(f"f1@sim{t:g}" for t in SIMILARITY_THRESHOLDS),
    SIZE_MAE,
)
#: Every key ``process_results`` returns, for every document.
METRICS: tuple[str, ...] = (*REWARD_METRICS, *FIELD_METRICS, REFUSED_KEY)

_DOC_IDS = ("id", "question_id", "doc_id", "index")


def _where(doc: Any) -> str:
    if isinstance(doc, Mapping):
        for name in _DOC_IDS:
            value = doc.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return f"doc {name}={value!r}"
    return "doc"


def _generation(results: Any) -> str:
    """The generation lmms-eval passes (``results[0]``; a nested list's first item too)."""
    while isinstance(results, (list, tuple)):
        if not results:
            return ""
        results = results[0]
    return results if isinstance(results, str) else ""


class ProcessResults:
    """lmms-eval's ``process_results(doc, results)`` for trace instances; build it with :func:`make_process_results`."""

    def __init__(
        self,
        *,
        instance_key: Optional[str],
        on_invalid: str,
        metrics: Optional[Sequence[str]],
        options: Mapping[str, Any],
    ) -> None:
        if instance_key is not None and (not isinstance(instance_key, str) or not instance_key):
            raise OptionError(f"instance_key must be a field name or None, got {instance_key!r}")
        self.instance_key = instance_key
        self.metrics = _check_metrics(metrics)
        self.on_invalid = check_on_invalid(on_invalid)
        self.options = scorer_options(options, strict=True)
        self._opts = options_from(self.options)

    def __call__(self, doc: Mapping[str, Any], results: Any, **kwargs: Any) -> dict[str, Optional[float]]:
        where = _where(doc)
        ground_truth = doc.get(self.instance_key) if self.instance_key is not None else doc
        try:
            compiled, inputs = compile_ground_truth(ground_truth, where=where)
        except ValueError as exc:  # InstanceError, or a document that holds no instance at all
            if self.on_invalid == "raise":
                raise
            log_error(
                logger,
                "trace_tasks refuses a broken trace instance: %s; the document is scored 0 with %s=1.0",
                exc,
                REFUSED_KEY,
            )
            refused: dict[str, Optional[float]] = dict.fromkeys(METRICS, None)
            refused.update(dict.fromkeys(REWARD_METRICS, 0.0))
            refused[ANSWER_ACCURACY] = 0.0
            refused[REFUSED_KEY] = 1.0
            return self._pick(refused)
        sizes = (None, inputs["image_sizes"], None, None) if "image_sizes" in inputs else None
        trail = Trail()
        scores = compiled.run(check_response(_generation(results)), self._opts, sizes, trail)
        field = row_metrics(trail, scores, shape_of(compiled.annotation_type))
        out: dict[str, Optional[float]] = {key: float(scores[key]) for key in REWARD_METRICS}
        out.update({key: field.get(key) for key in FIELD_METRICS})
        out[REFUSED_KEY] = 0.0
        return self._pick(out)

    def _pick(self, out: dict[str, Optional[float]]) -> dict[str, Optional[float]]:
        return out if self.metrics == METRICS else {key: out[key] for key in self.metrics}

    def __repr__(self) -> str:
        return (
            f"ProcessResults(instance_key={self.instance_key!r}, on_invalid={self.on_invalid!r}, "
            f"metrics={list(self.metrics)!r}, **{self.options!r})"
        )


def _check_metrics(metrics: Optional[Sequence[str]]) -> tuple[str, ...]:
    """``metrics`` as a tuple in the caller's order (all of :data:`METRICS` for ``None``), names checked."""
    return picked_metrics(metrics, METRICS, "metric names")


def make_process_results(
    *,
    instance_key: Optional[str] = None,
    on_invalid: str = "raise",
    metrics: Optional[Sequence[str]] = None,
    **options: Any,
) -> Callable[..., dict[str, Optional[float]]]:
    """An lmms-eval ``process_results`` with ``options`` (scorer options, checked now).

    ``instance_key``: ``None`` (the document holds the instance fields) or the
    field holding the instance. ``on_invalid``: ``"raise"`` (default) or
    ``"zero"`` (a broken document scores 0, ``trace_refused`` 1.0).
    ``metrics``: the keys to return (names from :data:`METRICS`; ``None``, the
    default, returns all of them). Give the names the task YAML's
    ``metric_list`` lists: lmms-eval 0.7.3 reports a returned key the YAML does
    not list as ``[]`` in its results (``lmms_eval/evaluator_utils.py`` l.436-438).
    """
    return ProcessResults(instance_key=instance_key, on_invalid=on_invalid, metrics=metrics, options=options)


def mean(items: Sequence[Optional[float]]) -> float:
    """lmms-eval aggregation: the mean of the documents that have a value (NaN when none has)."""
    values = [float(item) for item in items if item is not None]
    return math.fsum(values) / len(values) if values else math.nan


def mean_lower_is_better(items: Sequence[Optional[float]]) -> float:
    """:func:`mean` under another name, for a metric where lower is better (``size_mae``)."""
    return mean(items)


#: Ready-made ``process_results`` with the default options.
process_results = make_process_results()
