"""inspect-ai scorer: score a model's output against the trace instance in the sample's metadata.

inspect-ai (0.3.285) calls a scorer as ``await scorer(state, target) -> Score``
(``inspect_ai/scorer/_scorer.py`` l.35-40); :func:`make_scorer` builds one,
registered through inspect's own ``@scorer`` decorator (so the eval log records
its name, options and metrics)::

    from inspect_ai import Task, task
    from inspect_ai.dataset import json_dataset
    from inspect_ai.solver import generate
    from trace_tasks.integrations.inspect_ai import make_scorer

    @task
    def trace_bbox():
        return Task(dataset=json_dataset("samples.jsonl"), solver=generate(), scorer=make_scorer(format_weight=0.1))

(a whole task: ``examples/inspect_ai/``). Each sample's ``metadata`` holds the
instance: its ``answer_gt``, ``annotation_gt`` and ``reward_contract`` fields
(mappings or JSON strings; optional ``image_size``, ``image_sizes``,
``metadata``), or, with ``instance_key="instance"``, one field holding the
instance (a mapping or its JSON string). A ``metadata["extra_info"]`` mapping
may override scorer options for its sample, as in the trainer adapters. The
scored text is ``state.output.completion``, the model's final output.

The ``Score``'s value is a dict, the same keys for every sample, and the
scorer declares a ``mean()`` metric per key (``overall`` also ``stderr()``),
so inspect reports one mean per key (``inspect view`` and ``EvalLog.results``):

* the rewards (``overall``, ``answer_reward``, ``annotation_reward``, ``format``)
  and the logged components (``log_keys="charted"``:
  :data:`~trace_tasks.integrations._common.CHARTED_KEYS`, or ``"all"``);
* the field metrics of ``trace-tasks score --summary-json``
  (:data:`~trace_tasks.integrations.lmms_eval.FIELD_METRICS`: ``answer_accuracy``,
  ``acc@iou0.5``, ``f1@iou0.5``, ``size_mae``, ...), read from the scorer's own
  trail (:func:`trace_tasks.scoring.row_metrics`). A metric that does not apply
  to the sample's type is NaN, inspect's "unscored" value: inspect leaves it out
  of that key's mean (``_eval/task/results.py`` l.527-537 at 0.3.285) and
  counts it in the key's ``unscored_samples``, so ``f1@iou0.5`` is the mean
  over the collection samples;
* ``trace_refused`` (below).

``metrics=[...]`` keeps only the keys named. The score's ``metadata`` holds
the full result of ``score_trace_response`` (with the per-type diagnostics).

Errors: a broken instance raises :class:`~trace_tasks.data.InstanceError`
(a ``ValueError``) naming the sample (``sample id=...``) and every problem;
inspect marks that sample as errored with the message and, by default
(``fail_on_error``), the eval ends with status ``"error"``. With
``on_invalid="zero"`` such a sample scores 0 with ``trace_refused`` 1.0 (logged
at ERROR), so the eval finishes and ``trace_refused``'s mean is the fraction of
broken samples. Model output never raises.

Importing this module does not import inspect-ai; :func:`make_scorer` does
(``pip install inspect-ai``, Python >= 3.11).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import (
    REFUSED_KEY,
    MissingExtraError,
    check_on_invalid,
    compile_ground_truth,
    log_error,
    logged_keys,
    picked_metrics,
    row_options,
    scorer_options,
)
from trace_tasks.integrations.lmms_eval import FIELD_METRICS, REWARD_METRICS
from trace_tasks.scoring import ANSWER_ACCURACY, Trail, options_from, row_metrics, shape_of

__all__ = ["SCORER_NAME", "TraceScorer", "make_scorer", "score_keys"]

logger = logging.getLogger(__name__)

#: The name inspect records for the scorer (``EvalScore.scorer``).
SCORER_NAME = "trace_tasks_score"


def score_keys(log_keys: str = "charted", options: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Every key of the ``Score`` value, in order: rewards, logged components, field metrics, ``trace_refused``."""
    return tuple(dict.fromkeys((*REWARD_METRICS, *logged_keys(log_keys, options), *FIELD_METRICS, REFUSED_KEY)))


def _where(state: Any) -> str:
    sample_id = getattr(state, "sample_id", None)
    epoch = getattr(state, "epoch", None)
    where = f"sample id={sample_id!r}"
    return where if epoch is None else f"{where} (epoch {epoch})"


def _completion(state: Any) -> str:
    """``state.output.completion``: the model's final text (empty when there is none)."""
    output = getattr(state, "output", None)
    text = getattr(output, "completion", None) if output is not None else None
    return text if isinstance(text, str) else ""


class TraceScorer:
    """What the inspect scorer does for one sample, without inspect (the scorer awaits :meth:`score`).

    Build it through :func:`make_scorer`; options are checked when it is built.
    """

    def __init__(
        self,
        *,
        instance_key: Optional[str],
        on_invalid: str,
        log_keys: str,
        metrics: Optional[Sequence[str]],
        options: Mapping[str, Any],
    ) -> None:
        if instance_key is not None and (not isinstance(instance_key, str) or not instance_key):
            raise OptionError(f"instance_key must be a metadata field name or None, got {instance_key!r}")
        self.instance_key = instance_key
        self.on_invalid = check_on_invalid(on_invalid)
        self.options = scorer_options(options, strict=True)
        self.all_keys = score_keys(log_keys, self.options)
        self.keys = _check_metrics(metrics, self.all_keys)

    def score(self, metadata: Any, completion: Any, where: str) -> tuple[dict[str, float], dict[str, float]]:
        """``(value, result)`` for one sample: the ``Score`` value (:attr:`keys`) and the scorer's full result."""
        if not isinstance(metadata, Mapping):
            metadata = {}
        ground_truth = metadata if self.instance_key is None else metadata.get(self.instance_key)
        try:
            compiled, inputs = compile_ground_truth(ground_truth, where=where)
        except ValueError as exc:  # InstanceError, or metadata that holds no instance at all
            if self.on_invalid == "raise":
                raise
            log_error(
                logger,
                "trace_tasks refuses a broken trace instance in the sample metadata: %s; the sample is scored 0 with %s=1.0",
                exc,
                REFUSED_KEY,
            )
            refused = dict.fromkeys(self.all_keys, 0.0)
            refused.update(dict.fromkeys(FIELD_METRICS, math.nan))
            refused[ANSWER_ACCURACY] = 0.0
            refused[REFUSED_KEY] = 1.0
            return self._pick(refused), {}
        kwargs = row_options(self.options, metadata.get("extra_info"))
        extra_info = kwargs.pop("extra_info", None)
        image_sizes = inputs.get("image_sizes")
        sizes = None if image_sizes is None and extra_info is None else (None, image_sizes, None, extra_info)
        trail = Trail()
        text = completion if isinstance(completion, str) else ""
        result = compiled.run(check_response(text), options_from(kwargs), sizes, trail)
        field = row_metrics(trail, result, shape_of(compiled.annotation_type))
        value = {key: float(result.get(key, 0.0)) for key in self.all_keys}
        value.update({key: float(field.get(key, math.nan)) for key in FIELD_METRICS})
        value[REFUSED_KEY] = 0.0
        return self._pick(value), dict(result)

    def _pick(self, value: dict[str, float]) -> dict[str, float]:
        return value if self.keys == self.all_keys else {key: value[key] for key in self.keys}

    def __repr__(self) -> str:
        return (
            f"TraceScorer(instance_key={self.instance_key!r}, on_invalid={self.on_invalid!r}, "
            f"metrics={list(self.keys)!r}, **{self.options!r})"
        )


def _check_metrics(metrics: Optional[Sequence[str]], keys: tuple[str, ...]) -> tuple[str, ...]:
    return picked_metrics(metrics, keys, "score keys")


def make_scorer(
    *,
    instance_key: Optional[str] = None,
    on_invalid: str = "raise",
    log_keys: str = "charted",
    metrics: Optional[Sequence[str]] = None,
    **options: Any,
) -> Any:
    """An inspect-ai ``Scorer`` with ``options`` (every scorer option of ``score_trace_response``, checked now).

    ``instance_key``: ``None`` (the sample metadata holds the instance fields)
    or the metadata field holding the instance. ``on_invalid``: ``"raise"``
    (default: the sample errors with the message) or ``"zero"`` (scored 0 with
    ``trace_refused`` 1.0, logged at ERROR). ``log_keys``: ``"charted"``
    (default) or ``"all"``. ``metrics``: the keys to keep (default all of
    :func:`score_keys`). Imports inspect-ai (raises
    :class:`~trace_tasks.integrations.MissingExtraError` without it).
    """
    trace = TraceScorer(instance_key=instance_key, on_invalid=on_invalid, log_keys=log_keys, metrics=metrics, options=options)
    try:
        from inspect_ai.scorer import Score, mean, scorer, stderr
    except ImportError as exc:
        raise MissingExtraError(
            "trace_tasks.integrations.inspect_ai needs inspect-ai, which is not installed: pip install inspect-ai"
        ) from exc

    def trace_tasks_score(**params: Any) -> Any:
        async def score(state: Any, target: Any) -> Any:
            value, result = trace.score(state.metadata, _completion(state), _where(state))
            return Score(value=value, metadata={"scores": result})

        return score

    # inspect's own decorator registers the scorer with its metrics (one mean per key); the parameters
    # are recorded in the eval log, and the scorer itself closes over ``trace``.
    register: Any = scorer(
        metrics={key: [mean(), stderr()] if key == "overall" else [mean()] for key in trace.keys}, name=SCORER_NAME
    )
    return register(trace_tasks_score)(
        instance_key=instance_key, on_invalid=on_invalid, log_keys=log_keys, metrics=metrics, **options
    )
