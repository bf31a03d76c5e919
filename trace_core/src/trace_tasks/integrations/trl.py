"""TRL ``GRPOTrainer`` reward functions.

::

    from trace_tasks.integrations.trl import make_component_reward_funcs, make_reward_func

    trainer = GRPOTrainer(..., reward_funcs=[make_reward_func(format_weight=0.1)])
    # or weigh the parts yourself (GRPOConfig(reward_weights=[0.5, 0.4, 0.1])):
    trainer = GRPOTrainer(..., reward_funcs=make_component_reward_funcs())
    # async (TRL runs async reward functions concurrently on its event loop):
    trainer = GRPOTrainer(..., reward_funcs=[make_async_reward_func()])

The dataset needs the columns ``answer_gt``, ``annotation_gt`` and
``reward_contract`` (mappings or JSON strings; optional ``image_size``,
``image_sizes``, ``metadata``, ``extra_info``). TRL passes every column except
``prompt`` to reward functions as a keyword list. A row whose three instance
columns are all empty (a non-trace task in a mixed dataset) gets ``None``, TRL's
"not applicable". Every other row's instance is validated through the strict
path (:func:`trace_tasks.data.compile_instance`, cached by content, so the
``num_generations`` rows of a group compile their ground truth once) before
anything is scored; a broken one raises
:class:`~trace_tasks.data.InstanceError` (a ``ValueError``) naming the row
and listing every problem. It is never turned into ``None``, which TRL would
take for "not applicable" and hide. TRL 1.16 calls a sync reward function with
no ``try`` (``trl/trainer/grpo_trainer.py`` l.1626-1628), so training stops at
that step with the message. A bad scorer option in a row's ``extra_info``
column raises :class:`~trace_tasks.errors.OptionError`, and a completion that
is neither text nor a list of messages (``None``, bytes)
:class:`~trace_tasks.errors.ResponseTypeError`, both naming the position.
Model output never raises.

Logging (both can be turned off with ``log_metrics=False`` / ``log_extra=False``):

* ``log_metric``: on **every** call, the same names in the same order,
  ``trace/<key>`` for the logged keys then ``trace/rows``. TRL 1.0-1.13 gather
  once per metric name each step (``grpo_trainer.py`` l.2769-2773 in 1.9.0), so
  a process that logged a name another did not would make a different number
  of collective calls and hang the run; so a call with no trace rows logs every
  name too, with 0.0, never NaN (a NaN makes the gathered value of that step
  NaN on every process, and TRL then drops it). Values are **per completion of
  the call** (a row without an instance counts 0) and ``trace/rows`` is the
  fraction of the call's completions that are trace rows: that keeps every
  value additive, so TRL's means across processes and steps stay exact, and
  ``trace/<key> / trace/rows`` is the exact mean over trace rows. On a dataset
  of trace rows only ``trace/rows`` is 1.0 and ``trace/<key>`` is the mean.
  The logged keys describe the model's output (:data:`~trace_tasks.integrations._common.CHARTED_KEYS`,
  ``log_keys="charted"``) or every always-present key (``log_keys="all"``,
  ``answer_parse_ok`` included: it describes the ground truth, 1.0 on every
  validated row).
* ``log_extra``: per-completion columns ``trace/<key>`` for
  :data:`EXTRA_COLUMNS` in TRL's completions table, ``None`` for rows without an
  instance; the same columns on every call, for the same reason.

:func:`make_component_reward_funcs` scores each batch once for its three
functions (the second and third reuse the first's results) and only the first
one logs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Optional

from trace_tasks.data import CompiledInstance
from trace_tasks.errors import OptionError, ResponseTypeError
from trace_tasks.integrations._common import (
    NEEDED_FIELDS,
    REQUIRED_FIELDS,
    SIZE_FIELDS,
    compile_ground_truth,
    logged_keys,
    position,
    row_options,
    score_checked,
    scorer_options,
    stable_keys,
)

__all__ = [
    "EXTRA_COLUMNS",
    "ROWS_METRIC",
    "AsyncRewardFunc",
    "RewardFunc",
    "completion_text",
    "make_async_reward_func",
    "make_component_reward_funcs",
    "make_reward_func",
    "metric_keys",
]

RewardFunc = Callable[..., list[Optional[float]]]
AsyncRewardFunc = Callable[..., Awaitable[list[Optional[float]]]]

#: Per-completion columns given to ``log_extra`` (TRL's completions table).
EXTRA_COLUMNS: tuple[str, ...] = ("overall", "answer_reward", "annotation_reward", "format", "json_found")
#: The metric holding the fraction of a call's completions that are trace rows.
ROWS_METRIC = "trace/rows"
_INSTANCE_COLUMNS = REQUIRED_FIELDS + SIZE_FIELDS
_Results = list[Optional[dict[str, float]]]


def metric_keys(log_keys: str = "charted") -> tuple[str, ...]:
    """The result keys logged as ``trace/<key>`` for ``log_keys``, in logging order (``trace/rows`` follows).

    ``"all"`` is every always-present key, ``answer_parse_ok`` included (1.0 on every
    validated row: it describes the ground truth, and ``"charted"`` leaves it out).
    """
    return logged_keys(log_keys)


def completion_text(completion: Any, where: str = "a completion") -> str:
    """The text of one TRL completion: a string, or the last assistant message's content.

    Content given as a list of parts (``[{"type": "text", "text": ...}]``) is joined.
    A conversation without an assistant message is an empty response. Anything
    else (``None``, bytes, a number) raises :class:`~trace_tasks.errors.ResponseTypeError`
    naming ``where`` (the reward call names the position).
    """
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, Sequence) or isinstance(completion, (bytes, bytearray)):
        raise ResponseTypeError(f"{where} must be a string or a list of messages, got {type(completion).__name__}")
    for message in reversed(completion):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return "".join(
                    part["text"] for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                )
            return ""
    return ""


def _column(kwargs: Mapping[str, Any], name: str, n: int) -> Sequence[Any]:
    values: Sequence[Any] | None = kwargs.get(name)  # a dataset column, as TRL passes it
    if values is None:
        return [None] * n
    if len(values) != n:
        raise OptionError(f"dataset column {name!r} has {len(values)} values for {n} completions")
    return values


def _score_batch(completions: Sequence[Any], kwargs: Mapping[str, Any], options: dict[str, Any]) -> _Results:
    n = len(completions)
    missing = [name for name in NEEDED_FIELDS if name not in kwargs]  # answer_gt: optional (annotation_only)
    if missing:
        raise OptionError(
            f"the dataset lacks the column(s) {missing}; trace rewards need {list(REQUIRED_FIELDS)} "
            f"(got columns {sorted(k for k in kwargs if not k.startswith('log_'))})"
        )
    columns = {name: _column(kwargs, name, n) for name in (*_INSTANCE_COLUMNS, "extra_info")}
    # Every row first: a broken instance raises before anything is scored or logged.
    compiled: list[Optional[tuple[CompiledInstance, dict[str, Any]]]] = []
    for i in range(n):
        row = {name: columns[name][i] for name in _INSTANCE_COLUMNS}
        if all(row[name] is None for name in REQUIRED_FIELDS):
            compiled.append(None)  # not a trace row: TRL's "not applicable"
        else:
            # TRL passes no dataset row index: the error names the position in the reward call
            compiled.append(compile_ground_truth(row, where=position(i)))  # raises InstanceError
    results: _Results = []
    for i, (completion, entry) in enumerate(zip(completions, compiled, strict=True)):
        if entry is None:
            results.append(None)
            continue
        instance, inputs = entry
        where = position(i)  # TRL passes no dataset row index
        text = completion_text(completion, where=f"completions[{i}] ({where})")
        # A bad option in the row's extra_info column raises OptionError naming the position.
        results.append(score_checked(instance, inputs, text, row_options(options, columns["extra_info"][i]), where=where))
    return results


class _BatchScorer:
    """Scores a batch once for every reward function that shares it (the component functions).

    TRL hands each reward function of a step the same completions and the same
    column values; the last batch's values are held (so their ids cannot be
    reused by new objects) as tuples, a snapshot that a caller mutating its
    lists in place cannot change, and compared item by item by identity.
    """

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._inputs: tuple[Any, ...] | None = None
        self._results: _Results = []

    @staticmethod
    def _same(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
        if a is None or b is None:
            return a is b
        return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))

    def score(self, completions: Sequence[Any], kwargs: Mapping[str, Any]) -> _Results:
        columns = (kwargs.get(name) for name in (*_INSTANCE_COLUMNS, "extra_info"))
        inputs = (tuple(completions), *(None if c is None else tuple(c) for c in columns))
        with self._lock:
            last = self._inputs
            if last is not None and all(self._same(a, b) for a, b in zip(inputs, last, strict=True)):
                return self._results
            results = _score_batch(completions, kwargs, self.options)
            self._inputs, self._results = inputs, results
            return results


class _Logger:
    """What a reward function logs to TRL on each call (see the module docstring)."""

    def __init__(self, *, log_metrics: bool, log_extra: bool, log_keys: str) -> None:
        if not isinstance(log_metrics, bool) or not isinstance(log_extra, bool):
            raise OptionError(f"log_metrics and log_extra must be True or False, got {log_metrics!r}, {log_extra!r}")
        self.keys = metric_keys(log_keys)
        self.log_metrics = log_metrics
        self.log_extra = log_extra

    def __call__(self, kwargs: Mapping[str, Any], results: _Results) -> None:
        log_metric = kwargs.get("log_metric")
        if self.log_metrics and callable(log_metric):
            n = len(results)
            scored = [r for r in results if r is not None]
            for key in self.keys:
                log_metric(f"trace/{key}", sum(r[key] for r in scored) / n if n else 0.0)
            log_metric(ROWS_METRIC, len(scored) / n if n else 0.0)
        log_extra = kwargs.get("log_extra")
        if self.log_extra and callable(log_extra):
            for key in EXTRA_COLUMNS:
                log_extra(f"trace/{key}", [None if r is None else r[key] for r in results])


def _check_component(component: str) -> None:
    keys = stable_keys()
    if component not in keys:
        raise OptionError(f"unknown component {component!r}; choose one of {list(keys)}")


def _name(func: Any, name: str | None, component: str, doc: str) -> None:
    func.__name__ = func.__qualname__ = name or f"trace_{component}"
    func.__doc__ = doc


def _sync_func(component: str, scorer: _BatchScorer, logger: _Logger | None) -> RewardFunc:
    def reward_func(
        prompts: Any = None, completions: Any = None, completion_ids: Any = None, **kwargs: Any
    ) -> list[Optional[float]]:
        if completions is None:
            raise OptionError("TRL reward functions are called with completions=[...]")
        results = scorer.score(completions, kwargs)
        if logger is not None:
            logger(kwargs, results)
        return [None if r is None else r[component] for r in results]

    return reward_func


def _async_func(component: str, scorer: _BatchScorer, logger: _Logger | None) -> AsyncRewardFunc:
    async def reward_func(
        prompts: Any = None, completions: Any = None, completion_ids: Any = None, **kwargs: Any
    ) -> list[Optional[float]]:
        if completions is None:
            raise OptionError("TRL reward functions are called with completions=[...]")
        # Scoring is CPU work: a thread keeps TRL's event loop free for the other async functions.
        results = await asyncio.to_thread(scorer.score, completions, kwargs)
        if logger is not None:
            logger(kwargs, results)
        return [None if r is None else r[component] for r in results]

    return reward_func


def _scorer_and_logger(
    component: str, options: dict[str, Any], log_metrics: bool, log_extra: bool, log_keys: str
) -> tuple[_BatchScorer, _Logger]:
    """What a reward function built by the factories holds: options and logging settings checked now."""
    _check_component(component)
    scorer = _BatchScorer(scorer_options(options, strict=True))
    return scorer, _Logger(log_metrics=log_metrics, log_extra=log_extra, log_keys=log_keys)


def make_reward_func(
    component: str = "overall",
    *,
    name: str | None = None,
    log_metrics: bool = True,
    log_extra: bool = True,
    log_keys: str = "charted",
    **options: Any,
) -> RewardFunc:
    """A TRL reward function returning ``component`` of the score dict per completion.

    ``component`` is any key the scorer always returns (``overall``,
    ``answer_reward``, ``annotation_reward``, ``format``, ...). ``options`` are
    scorer options (``trace_reward_mode``, weights, ...), checked now; a row's
    ``extra_info`` column may override them. ``name`` sets ``__name__``, which
    TRL uses to label the reward in its logs (default ``trace_<component>``).
    ``log_metrics``, ``log_extra``, ``log_keys``: see the module docstring.
    """
    scorer, logger = _scorer_and_logger(component, options, log_metrics, log_extra, log_keys)
    func = _sync_func(component, scorer, logger)
    _name(func, name, component, f"TRL reward: the trace scorer's {component!r} per completion.")
    return func


def make_async_reward_func(
    component: str = "overall",
    *,
    name: str | None = None,
    log_metrics: bool = True,
    log_extra: bool = True,
    log_keys: str = "charted",
    **options: Any,
) -> AsyncRewardFunc:
    """:func:`make_reward_func` as an ``async def`` function (TRL 1.x awaits those on its event loop)."""
    scorer, logger = _scorer_and_logger(component, options, log_metrics, log_extra, log_keys)
    func = _async_func(component, scorer, logger)
    _name(func, name, component, f"Async TRL reward: the trace scorer's {component!r} per completion.")
    return func


#: The component functions: (component, name).
_COMPONENTS: tuple[tuple[str, str], ...] = (
    ("answer_reward", "trace_answer"),
    ("annotation_reward", "trace_annotation"),
    ("format", "trace_format"),
)


def make_component_reward_funcs(
    *,
    log_metrics: bool = True,
    log_extra: bool = True,
    log_keys: str = "charted",
    asynchronous: bool = False,
    **options: Any,
) -> list[Any]:
    """Answer, annotation and format rewards as three functions, for ``reward_weights``.

    With weights ``[a, n, f]`` the summed reward is ``a * answer_reward +
    n * annotation_reward + f * format``: the additive formula. For the gated
    formula (a wrong answer earns nothing for its annotation) use
    ``make_reward_func()`` alone. The three share one scoring per batch; only
    the first logs. ``asynchronous=True`` gives ``async def`` functions.
    """
    scorer, logger = _scorer_and_logger(_COMPONENTS[0][0], options, log_metrics, log_extra, log_keys)
    make = _async_func if asynchronous else _sync_func
    funcs: list[Any] = []
    for i, (component, name) in enumerate(_COMPONENTS):
        func = make(component, scorer, logger if i == 0 else None)
        _name(func, name, component, f"TRL reward: the trace scorer's {component!r} per completion.")
        funcs.append(func)
    return funcs
