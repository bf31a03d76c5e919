"""verl custom reward functions, configured in the one-line reward file.

verl 0.9.x (current: the reward-loop managers ``naive`` (default), ``dapo``,
``gdpo``, ``remote``)::

    # trace_reward.py
    from trace_tasks.integrations.verl import make_compute_score
    compute_score = make_compute_score(format_weight=0.1)

    reward.custom_reward_function.path=trace_reward.py   # (or the legacy custom_reward_function.path)

verl 0.8 and earlier (``reward_model.reward_manager=naive|dapo|batch|prime``):
the same ``compute_score`` for ``naive`` and ``dapo``;
``compute_score = make_compute_score_batch(...)`` for ``batch`` (one call per
batch); ``compute_score = make_compute_score(returns="float")`` for ``prime``,
which takes ``result[0]`` of anything but a number and zeroes the whole batch
on the dict.

The dataset row's ``reward_model.ground_truth`` is the trace instance (a
mapping or, more robust in parquet, its JSON string). ``extra_info`` may carry
the image size and per-row scorer options. Options: the factory's, overridden
by ``reward_kwargs`` of verl's config, overridden by the row's ``extra_info``.

Return shapes (``returns``):

* ``"dict"`` (default): ``{"score": overall, "acc": overall, ...}`` plus the
  logged components (``log_keys="charted"``: :data:`~trace_tasks.integrations._common.CHARTED_KEYS`;
  ``"all"``: every key the scorer always returns). verl stacks those per key
  with the first row's keys (``reward_loop.py`` l.365-369 in 0.9.1), so every
  row carries the same keys and the per-type diagnostics are never returned.
  ``acc`` is the key DAPO's ``filter_groups.metric=acc`` reads (verl's own
  managers set ``acc`` to the score of a float return); ``accuracy``-style
  filtering on the answer alone is ``filter_groups.metric=answer_reward``.
* ``"float"``: the overall reward alone (verl Prime).

Errors: every row's instance is validated through the strict path
(:func:`trace_tasks.instances.compile_instance`, cached by content, so a group
of rollouts compiles its ground truth once). A broken one raises
:class:`~trace_tasks.instances.InstanceError` (a ``ValueError``) naming the row
and listing every problem; an invalid option raises
:class:`~trace_tasks.errors.OptionError` (a ``ValueError``). verl 0.9.1
does not catch exceptions of a custom reward function: the reward-loop naive
and dapo managers await it with no ``try``
(``experimental/reward_loop/reward_manager/naive.py`` l.66-84), the worker
gathers without ``return_exceptions`` (``experimental/reward_loop/reward_loop.py``
l.138-143) and the trainer's ``ray.get`` re-raises (l.350-356), so the step
stops with our message, which is what a broken dataset deserves. verl 0.8's
Prime manager is the exception: it catches a row's error, prints it and scores
the row 0 (``workers/reward_manager/prime.py`` l.40-42, 81-83); the ``rate_limited``
manager logs it at ERROR and scores 0 (``reward_manager/limited.py`` l.460-467).
Model output never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.data import CompiledInstance
from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import compile_ground_truth, logged_keys, row_options, scorer_options

__all__ = [
    "RETURN_SHAPES",
    "ComputeScore",
    "ComputeScoreBatch",
    "compute_score",
    "compute_score_batch",
    "compute_score_float",
    "make_compute_score",
    "make_compute_score_batch",
]

#: ``returns`` values: a dict for the naive, dapo and batch managers, a float for Prime.
RETURN_SHAPES: tuple[str, ...] = ("dict", "float")


def _merged(base: Mapping[str, Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The factory's options overridden by the scorer options verl passes (``reward_kwargs``); other keys ignored."""
    if not kwargs:
        return dict(base)
    return {**base, **scorer_options(kwargs, strict=False)}


class _Scorer:
    """What both verl call shapes share: options checked once, the keys to report."""

    def __init__(self, *, returns: str, log_keys: str, options: Mapping[str, Any]) -> None:
        if returns not in RETURN_SHAPES:
            raise OptionError(f"returns must be one of {list(RETURN_SHAPES)}, got {returns!r}")
        self.returns = returns
        self.log_keys = log_keys
        self.options = scorer_options(options, strict=True)
        self.keys = logged_keys(log_keys, self.options)

    def score(
        self, compiled: CompiledInstance, inputs: dict[str, Any], solution_str: Any, extra_info: Any, options: dict[str, Any]
    ) -> dict[str, float] | float:
        # verl decodes with skip_special_tokens; anything that is not text scores as an empty response.
        response = solution_str if isinstance(solution_str, str) else ""
        result = compiled.score(response, **inputs, **row_options(options, extra_info))
        overall = result["overall"]
        if self.returns == "float":
            return overall
        return {"score": overall, "acc": overall, **{key: float(result.get(key, 0.0)) for key in self.keys}}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(returns={self.returns!r}, log_keys={self.log_keys!r}, **{self.options!r})"


class ComputeScore(_Scorer):
    """verl's per-row ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``.

    A plain class (not a closure), so it pickles: verl 0.8's Prime manager sends
    it to a process pool. Build it with :func:`make_compute_score`.
    """

    def __call__(
        self, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None, **kwargs: Any
    ) -> dict[str, float] | float:
        options = _merged(self.options, kwargs)
        compiled, inputs = compile_ground_truth(ground_truth, where="ground_truth")  # raises InstanceError
        return self.score(compiled, inputs, solution_str, extra_info, options)


class ComputeScoreBatch(_Scorer):
    """verl's batch ``compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs)`` (verl ≤ 0.8)."""

    def __call__(
        self,
        data_sources: Sequence[Any],
        solution_strs: Sequence[Any],
        ground_truths: Sequence[Any],
        extra_infos: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[dict[str, float] | float]:
        n = len(solution_strs)
        if len(ground_truths) != n:
            raise OptionError(f"got {n} solution_strs but {len(ground_truths)} ground_truths")
        if extra_infos is None:
            extra_infos = [None] * n
        elif len(extra_infos) != n:
            raise OptionError(f"got {n} solution_strs but {len(extra_infos)} extra_infos")
        options = _merged(self.options, kwargs)
        # Every row first: a broken instance raises before anything is scored.
        compiled = [compile_ground_truth(truth, where=f"ground_truths[{i}]") for i, truth in enumerate(ground_truths)]
        return [
            self.score(instance, inputs, solution, extra, options)
            for (instance, inputs), solution, extra in zip(compiled, solution_strs, extra_infos, strict=True)
        ]


def make_compute_score(*, returns: str = "dict", log_keys: str = "charted", **options: Any) -> ComputeScore:
    """A per-row verl reward function with ``options`` (scorer options, checked now).

    ``returns``: ``"dict"`` (naive, dapo, the reward loop) or ``"float"`` (Prime).
    ``log_keys``: ``"charted"`` (default) or ``"all"`` (every always-present key).
    """
    return ComputeScore(returns=returns, log_keys=log_keys, options=options)


def make_compute_score_batch(*, log_keys: str = "charted", **options: Any) -> ComputeScoreBatch:
    """A batch verl reward function (``reward_model.reward_manager=batch``, verl ≤ 0.8) with ``options``."""
    return ComputeScoreBatch(returns="dict", log_keys=log_keys, options=options)


#: Ready-made functions with the default options, for ``custom_reward_function.name``.
compute_score = make_compute_score()
compute_score_float = make_compute_score(returns="float")
compute_score_batch = make_compute_score_batch()
