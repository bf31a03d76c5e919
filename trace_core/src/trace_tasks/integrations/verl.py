"""verl custom reward functions, configured in the one-line reward file.

verl 0.9.x (current: the reward-loop managers ``naive`` (default), ``dapo``,
``gdpo``, ``remote``)::

    # trace_reward.py
    from trace_tasks.integrations.verl import make_compute_score
    compute_score = make_compute_score(format_weight=0.1)

    reward.custom_reward_function.path=trace_reward.py

(``main_ppo`` of verl 0.9.1 does not migrate the legacy top-level
``custom_reward_function.*`` keys: only ``experimental/fully_async_policy/fully_async_main.py``
l.237 calls ``migrate_legacy_reward_impl``.)

verl 0.8.0 always builds the reward-loop manager (naive, dapo...); the batch and
prime managers below can be selected up to v0.7.0 (``use_reward_loop=False``,
``reward_model.reward_manager=batch|prime``): ``compute_score =
make_compute_score_batch(...)`` for ``batch`` (one call per batch);
``compute_score = make_compute_score(returns="float")`` for ``prime``, which
takes ``result[0]`` of anything but a number and zeroes the whole batch on the
dict.

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
(:func:`trace_tasks.data.compile_instance`, cached by content, so a group
of rollouts compiles its ground truth once). A broken one raises
:class:`~trace_tasks.data.InstanceError` (a ``ValueError``) naming the row
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
manager logs it at ERROR and returns ``{"error", "acc"}`` for the row
(``reward_manager/limited.py`` l.460-467), which ``compute_rm_score`` cannot stack
with the other rows (``reward_loop.py`` l.364-369: ``KeyError``). For that
manager use ``on_invalid="zero"``: a broken row is logged at ERROR (naming
``extra_info['index']``, the dataset row, when the row has one) and returns
every key of a scored row at 0.0 with ``trace_refused`` 1.0 (0.0 on every
scored row). A bad scorer option in one row's ``extra_info`` raises
:class:`~trace_tasks.errors.OptionError` and a ``solution_str`` that is not
text (a list, ``None``, bytes) :class:`~trace_tasks.errors.ResponseTypeError`,
each naming the row; under ``on_invalid="zero"`` both are refused the same way
as a broken instance. Model output (any text) never raises.
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.data import CompiledInstance
from trace_tasks.errors import OptionError, ResponseTypeError
from trace_tasks.integrations._common import (
    REFUSED_KEY,
    check_on_invalid,
    compile_ground_truth,
    log_error,
    logged_keys,
    refused_row,
    row_options,
    score_checked,
    scorer_options,
)

logger = logging.getLogger(__name__)

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

    def __init__(self, *, returns: str, log_keys: str, options: Mapping[str, Any], on_invalid: str = "raise") -> None:
        if returns not in RETURN_SHAPES:
            raise OptionError(f"returns must be one of {list(RETURN_SHAPES)}, got {returns!r}")
        self.returns = returns
        self.log_keys = log_keys
        self.on_invalid = check_on_invalid(on_invalid)
        self.options = scorer_options(options, strict=True)
        self.keys = logged_keys(log_keys, self.options)
        #: Every row's keys: ``score``, ``acc``, the logged keys and, with ``on_invalid="zero"``, :data:`REFUSED_KEY`.
        self.row_keys = tuple(dict.fromkeys(("score", "acc", *self.keys)))

    def compile(self, ground_truth: Any, where: str) -> tuple[CompiledInstance, dict[str, Any]] | None:
        """The row's compiled instance; ``None`` for a refused one (``on_invalid="zero"``, logged at ERROR)."""
        try:
            return compile_ground_truth(ground_truth, where=where)  # raises InstanceError / RecordError
        except ValueError as exc:
            if self.on_invalid == "raise":
                raise
            self._log_refusal("a broken trace instance in reward_model.ground_truth", exc)
            return None

    @staticmethod
    def _log_refusal(what: str, exc: Exception) -> None:
        log_error(
            logger,
            "trace_tasks refuses %s: %s; the row is scored 0 with %s=1.0. "
            "Fix the dataset (`trace-tasks validate FILE` lists every broken row).",
            what,
            exc,
            REFUSED_KEY,
        )

    def refused(self) -> dict[str, float] | float:
        """A refused row: 0.0, or every key of a scored row at 0.0 with :data:`REFUSED_KEY` 1.0."""
        return 0.0 if self.returns == "float" else refused_row(self.row_keys)

    def score(
        self,
        compiled: CompiledInstance,
        inputs: dict[str, Any],
        solution_str: Any,
        extra_info: Any,
        options: dict[str, Any],
        where: str,
    ) -> dict[str, float] | float:
        """One row's score; a row verl cannot have meant (a response that is not text, a bad option in its
        ``extra_info``) raises naming ``where``, or under ``on_invalid="zero"`` is refused like a broken instance."""
        try:
            result = score_checked(compiled, inputs, solution_str, row_options(options, extra_info), where=where)
        except (OptionError, ResponseTypeError) as exc:
            if self.on_invalid == "raise":
                raise
            what = "a response that is not text" if isinstance(exc, ResponseTypeError) else "a bad scorer option of the row"
            self._log_refusal(what, exc)
            return self.refused()
        overall = result["overall"]
        if self.returns == "float":
            return overall
        row = {"score": overall, "acc": overall, **{key: float(result.get(key, 0.0)) for key in self.keys}}
        if self.on_invalid == "zero":
            row[REFUSED_KEY] = 0.0
        return row

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(returns={self.returns!r}, log_keys={self.log_keys!r}, "
            f"on_invalid={self.on_invalid!r}, **{self.options!r})"
        )


def _where(extra_info: Any, position: int | None = None) -> str:
    """The row's name in an error: verl passes no row index, but its preprocessing scripts put one in
    ``extra_info``; without it, a batch call's error names the position in the call."""
    name = "ground_truth" if position is None else f"ground_truths[{position}]"
    if isinstance(extra_info, Mapping):
        index = extra_info.get("index")
        if isinstance(index, (numbers.Integral, str)) and not isinstance(index, bool):
            return f"{name} (dataset row extra_info['index']={index})"
    return name if position is None else f"{name} (position {position} in this call)"


class ComputeScore(_Scorer):
    """verl's per-row ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``.

    A plain class (not a closure), so it pickles: verl 0.8's Prime manager sends
    it to a process pool. Build it with :func:`make_compute_score`.
    """

    def __call__(
        self, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None, **kwargs: Any
    ) -> dict[str, float] | float:
        options = _merged(self.options, kwargs)
        where = _where(extra_info)
        entry = self.compile(ground_truth, where)  # raises InstanceError unless on_invalid="zero"
        if entry is None:
            return self.refused()
        return self.score(entry[0], entry[1], solution_str, extra_info, options, where)


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
        wheres = [_where(extra, i) for i, extra in enumerate(extra_infos)]
        # Every row first: a broken instance raises before anything is scored.
        compiled = [self.compile(truth, where) for truth, where in zip(ground_truths, wheres, strict=True)]
        return [
            self.refused() if entry is None else self.score(entry[0], entry[1], solution, extra, options, where)
            for entry, solution, extra, where in zip(compiled, solution_strs, extra_infos, wheres, strict=True)
        ]


def make_compute_score(
    *, returns: str = "dict", log_keys: str = "charted", on_invalid: str = "raise", **options: Any
) -> ComputeScore:
    """A per-row verl reward function with ``options`` (scorer options, checked now).

    ``returns``: ``"dict"`` (naive, dapo, the reward loop) or ``"float"`` (Prime).
    ``log_keys``: ``"charted"`` (default) or ``"all"`` (every always-present key).
    ``on_invalid``: ``"raise"`` (default: the step stops with the message) or
    ``"zero"`` (ERROR log, the row scored 0 with every key and ``trace_refused``
    1.0; every row then carries ``trace_refused``): the choice for the
    ``rate_limited`` manager, which catches the error and returns a row verl
    cannot stack.
    """
    return ComputeScore(returns=returns, log_keys=log_keys, options=options, on_invalid=on_invalid)


def make_compute_score_batch(*, log_keys: str = "charted", on_invalid: str = "raise", **options: Any) -> ComputeScoreBatch:
    """A batch verl reward function (``reward_model.reward_manager=batch``, verl ≤ 0.7) with ``options``."""
    return ComputeScoreBatch(returns="dict", log_keys=log_keys, options=options, on_invalid=on_invalid)


#: Ready-made functions with the default options, for ``custom_reward_function.name``.
compute_score = make_compute_score()
compute_score_float = make_compute_score(returns="float")
compute_score_batch = make_compute_score_batch()
