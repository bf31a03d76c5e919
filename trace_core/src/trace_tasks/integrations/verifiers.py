"""verifiers reward functions: score a rollout against the trace instance of its task.

**verifiers 0.4.0** (``verifiers.v1``; the ``Rubric`` class is gone at 0.4.0)
scores a task with its ``@vf.reward`` and ``@vf.metric`` methods, or with
functions plugged by name through the task config (``rewards`` and
``metrics``, ``verifiers/v1/configs/task.py`` l.46-50). ``Task.score`` calls each
with the arguments it declares by name, ``task`` (the row's ``TaskData``) and
``trace`` (``verifiers/v1/utils/decorators.py`` l.29-38,
``verifiers/v1/task.py`` l.226-273): a reward's float is summed into the
trace's reward with its weight, and a metric's mapping is recorded key by key
in ``trace.metrics``, not summed (l.257-262)::

    import verifiers.v1 as vf
    from trace_tasks.integrations.verifiers import make_reward_and_metrics

    trace_reward, trace_metrics = make_reward_and_metrics(format_weight=0.1)   # or make_reward(...) alone

    class BoxData(vf.TaskData):
        instance: str                      # the trace instance, as a JSON string

    class BoxTask(vf.Task[BoxData]):
        @vf.reward(weight=1.0)
        async def trace(self, trace: vf.Trace) -> float:
            return await trace_reward(self.data, trace)

        @vf.metric
        async def trace_parts(self, trace: vf.Trace) -> dict[str, float]:
            return await trace_metrics(self.data, trace)

or, without a method, ``--env.taskset.task.rewards.trace.fn my_rewards:trace_reward``
(and ``metrics.trace_parts.fn my_rewards:trace_metrics``). The scored text is
``trace.last_reply``. The row (``task``) holds the instance in the field
``instance_key`` names (default ``"instance"``; a mapping or its JSON string),
or, with ``instance_key=None``, in its own ``answer_gt``, ``annotation_gt``
and ``reward_contract`` fields; an ``extra_info`` field may override scorer
options. The two functions of :func:`make_reward_and_metrics` score each trace once.

**verifiers 0.1-0.3** (``vf.Rubric``, ``verifiers.legacy.Rubric`` at
0.3.1): ``Rubric(funcs=[...], weights=[...])`` calls each function with the
arguments it declares among ``completion, answer, prompt, state, task, info``
(``legacy/rubrics/rubric.py`` l.184-213 at 0.3.1), sync or async, and records
each function's value under its name in ``state["metrics"]``, the weighted sum
as the reward (l.337-349). :func:`make_rubric_funcs` gives ``trace_overall``
and one function per logged key; :func:`rubric_weights` the weights (1.0 for
``trace_overall``, 0.0 for the logged keys, so they are charted, not
trained)::

    rubric = vf.Rubric(funcs=make_rubric_funcs(format_weight=0.1), weights=rubric_weights())

The instance is the row's ``answer`` (its JSON string), or ``info[instance_key]``
with ``instance_key`` set; ``info`` may override scorer options. The scored text
is the last assistant message of ``completion`` (or ``completion`` itself when
it is a string).

Errors: a broken instance raises :class:`~trace_tasks.data.InstanceError`
(a ``ValueError``) naming the row (``task id=...``/``idx=...``; the rubric: the
``answer``) and every problem. verifiers 0.4.0 wraps it in a ``TaskError``
carrying the message (``task.py`` l.231, ``errors.py`` l.81-95) and the rollout records the error.
The 0.3 ``Rubric`` catches any exception of a reward function, logs it at
ERROR and scores 0.0 (l.200-212), so raising would only repeat that: the
rubric functions log a broken row at ERROR once (with the message), score it
0.0, and their ``trace_trace_refused`` function records 1.0 for it (0.0
otherwise), so broken rows show in the metrics. Model output never raises.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Optional

from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import (
    REFUSED_KEY,
    REQUIRED_FIELDS,
    SIZE_FIELDS,
    compile_ground_truth,
    log_error,
    logged_keys,
    row_options,
    scorer_options,
)
from trace_tasks.integrations.trl import completion_text

__all__ = [
    "TraceScorer",
    "make_metrics",
    "make_reward",
    "make_reward_and_metrics",
    "make_rubric_funcs",
    "rubric_weights",
]

logger = logging.getLogger(__name__)

_FIELDS = (*REQUIRED_FIELDS, *SIZE_FIELDS)
#: Traces whose result is held for the second of their two calls (reward and metrics).
_HELD = 256


def _field(row: Any, name: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(name)
    return getattr(row, name, None)


def _task_where(task: Any) -> str:
    for name in ("id", "idx"):
        value = _field(task, name)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"task {name}={value!r}"
    return "task (no id or idx)"


def _reply(trace: Any) -> str:
    """``trace.last_reply`` (verifiers 0.4.0): the root agent's reply, or the last assistant message."""
    try:
        text = getattr(trace, "last_reply", None)
    except (AttributeError, IndexError, TypeError, ValueError):
        return ""
    return text if isinstance(text, str) else ""


class TraceScorer:
    """Options checked once; each trace scored once for the functions built on it (:func:`make_reward_and_metrics`)."""

    def __init__(self, *, instance_key: Optional[str], log_keys: str, options: Mapping[str, Any]) -> None:
        if instance_key is not None and (not isinstance(instance_key, str) or not instance_key):
            raise OptionError(f"instance_key must be a task field name or None, got {instance_key!r}")
        self.instance_key = instance_key
        self.options = scorer_options(options, strict=True)
        self.keys = logged_keys(log_keys, self.options)
        self._lock = threading.Lock()
        # id(trace) -> (trace, text, result): the trace is held, so its id is not reused while cached.
        self._held: collections.OrderedDict[int, tuple[Any, str, dict[str, float]]] = collections.OrderedDict()

    def ground_truth(self, task: Any) -> Any:
        if self.instance_key is not None:
            return _field(task, self.instance_key)
        return {name: _field(task, name) for name in _FIELDS}

    def score_text(self, text: str, ground_truth: Any, extra_info: Any, where: str) -> dict[str, float]:
        compiled, inputs = compile_ground_truth(ground_truth, where=where)  # raises InstanceError / RecordError
        return compiled.score(text, **inputs, **row_options(self.options, extra_info))

    def score_trace(self, task: Any, trace: Any) -> dict[str, float]:
        """The scorer's result for ``trace`` (the last one of a trace scored again with the same reply)."""
        text = _reply(trace)
        with self._lock:
            held = self._held.get(id(trace))
            if held is not None and held[0] is trace and held[1] == text:
                return held[2]
        result = self.score_text(text, self.ground_truth(task), _field(task, "extra_info"), _task_where(task))
        with self._lock:
            self._held[id(trace)] = (trace, text, result)
            while len(self._held) > _HELD:
                self._held.popitem(last=False)
        return result

    def __repr__(self) -> str:
        return f"TraceScorer(instance_key={self.instance_key!r}, **{self.options!r})"


RewardFunc = Callable[..., Awaitable[float]]
MetricsFunc = Callable[..., Awaitable[dict[str, float]]]


def _reward(scorer: TraceScorer) -> RewardFunc:
    async def trace_reward(task: Any, trace: Any) -> float:
        # Scoring is CPU work: a thread keeps the rollouts' event loop free.
        result = await asyncio.to_thread(scorer.score_trace, task, trace)
        return float(result["overall"])

    return trace_reward


def _metrics(scorer: TraceScorer) -> MetricsFunc:
    async def trace_metrics(task: Any, trace: Any) -> dict[str, float]:
        result = await asyncio.to_thread(scorer.score_trace, task, trace)
        return {f"trace/{key}": float(result.get(key, 0.0)) for key in scorer.keys}

    return trace_metrics


def make_reward(*, instance_key: Optional[str] = "instance", **options: Any) -> RewardFunc:
    """A verifiers 0.4.0 reward ``async (task, trace) -> float``: the overall reward.

    ``options``: every scorer option of ``score_trace_response``, checked now.
    ``instance_key``: the task field holding the instance (``None``: the task's
    own instance fields). With the charted keys too, build both with
    :func:`make_reward_and_metrics`, which scores each trace once for the two.
    """
    return _reward(TraceScorer(instance_key=instance_key, log_keys="charted", options=options))


def make_metrics(*, instance_key: Optional[str] = "instance", log_keys: str = "charted", **options: Any) -> MetricsFunc:
    """A verifiers 0.4.0 metric ``async (task, trace) -> {"trace/<key>": value}``, recorded in ``trace.metrics``.

    ``log_keys``: ``"charted"`` (default) or ``"all"``. Other arguments as :func:`make_reward`.
    """
    return _metrics(TraceScorer(instance_key=instance_key, log_keys=log_keys, options=options))


def make_reward_and_metrics(
    *, instance_key: Optional[str] = "instance", log_keys: str = "charted", **options: Any
) -> tuple[RewardFunc, MetricsFunc]:
    """:func:`make_reward` and :func:`make_metrics` sharing one scoring per trace (``Task.score`` calls both)."""
    scorer = TraceScorer(instance_key=instance_key, log_keys=log_keys, options=options)
    return _reward(scorer), _metrics(scorer)


# --- the Rubric of verifiers 0.1-0.3 ---------------------------------------------------------


class _RubricScorer:
    """One scoring per rollout for the rubric's functions (held by the ``state`` mapping's identity)."""

    def __init__(self, *, instance_key: Optional[str], options: Mapping[str, Any]) -> None:
        if instance_key is not None and (not isinstance(instance_key, str) or not instance_key):
            raise OptionError(f"instance_key must be an info field name or None (the answer), got {instance_key!r}")
        self.instance_key = instance_key
        self.base = TraceScorer(instance_key=None, log_keys="charted", options=options)
        self._lock = threading.Lock()
        self._held: collections.OrderedDict[int, tuple[Any, str, Optional[dict[str, float]]]] = collections.OrderedDict()

    def score(self, completion: Any, answer: Any, info: Any, state: Any) -> Optional[dict[str, float]]:
        """The result for one rollout, ``None`` for a refused row (logged at ERROR: the Rubric would zero an error anyway)."""
        text = completion_text(completion) if isinstance(completion, (str, Sequence)) else ""
        key = id(state) if state is not None else None
        if key is not None:
            with self._lock:
                held = self._held.get(key)
                if held is not None and held[0] is state and held[1] == text:
                    return held[2]
        info = info if isinstance(info, Mapping) else {}
        ground_truth = answer if self.instance_key is None else info.get(self.instance_key)
        where = "the rollout's answer" if self.instance_key is None else f"the rollout's info[{self.instance_key!r}]"
        result: Optional[dict[str, float]]
        try:
            result = self.base.score_text(text, ground_truth, info, where)
        except ValueError as exc:  # InstanceError, or a row that is no instance at all
            log_error(
                logger,
                "trace_tasks refuses a broken trace instance: %s; the verifiers Rubric scores the rollout 0 "
                "and trace_refused records 1.0. Fix the dataset (`trace-tasks validate FILE` lists every broken row).",
                exc,
            )
            result = None
        if key is not None:
            with self._lock:
                self._held[key] = (state, text, result)
                while len(self._held) > _HELD:
                    self._held.popitem(last=False)
        return result


def _rubric_func(key: str, scorer: _RubricScorer, asynchronous: bool) -> Callable[..., Any]:
    def value(completion: Any, answer: Any = None, info: Any = None, state: Any = None) -> float:
        result = scorer.score(completion, answer, info, state)
        if key == REFUSED_KEY:
            return 1.0 if result is None else 0.0
        return 0.0 if result is None else float(result.get(key, 0.0))

    func: Callable[..., Any]
    if asynchronous:

        async def func(completion: Any, answer: Any = None, info: Any = None, state: Any = None) -> float:
            return await asyncio.to_thread(value, completion, answer, info, state)

    else:

        def func(completion: Any, answer: Any = None, info: Any = None, state: Any = None) -> float:
            return value(completion, answer, info, state)

    func.__name__ = func.__qualname__ = f"trace_{key}"
    func.__doc__ = f"verifiers Rubric function: the trace scorer's {key!r}."
    return func


def make_rubric_funcs(
    *,
    instance_key: Optional[str] = None,
    log_keys: str = "charted",
    asynchronous: bool = False,
    **options: Any,
) -> list[Callable[..., Any]]:
    """Functions for ``vf.Rubric(funcs=...)`` (verifiers 0.1-0.3): ``trace_overall``, then ``trace_<key>`` per logged key.

    The last is ``trace_trace_refused`` (1.0 for a row whose instance was
    refused). Each declares ``completion, answer, info, state``; the functions
    of one rollout share one scoring. ``asynchronous=True`` gives ``async def``
    functions. Weigh them with :func:`rubric_weights`. ``options``: every
    scorer option, checked now.
    """
    if not isinstance(asynchronous, bool):
        raise OptionError(f"asynchronous must be True or False, got {asynchronous!r}")
    scorer = _RubricScorer(instance_key=instance_key, options=options)
    keys = tuple(dict.fromkeys(("overall", *logged_keys(log_keys, scorer.base.options), REFUSED_KEY)))
    return [_rubric_func(key, scorer, asynchronous) for key in keys]


def rubric_weights(log_keys: str = "charted", options: Mapping[str, Any] | None = None) -> list[float]:
    """The weights for :func:`make_rubric_funcs`: 1.0 for ``trace_overall``, 0.0 for each logged key."""
    picked = scorer_options(options or {}, strict=True)
    keys = tuple(dict.fromkeys(("overall", *logged_keys(log_keys, picked), REFUSED_KEY)))
    return [1.0 if key == "overall" else 0.0 for key in keys]
