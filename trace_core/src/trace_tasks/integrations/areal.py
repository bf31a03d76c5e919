"""AReaL reward functions: score a rollout against the trace instance in its dataset row.

AReaL (``areal`` 1.0.4) calls ``reward_fn(prompt, completions, prompt_ids,
completion_ids, **row)`` and takes one float (``areal/api/reward_api.py``
l.40-59): every column of the dataset row arrives as a keyword argument. Its
workflows wrap the function in ``AsyncRewardWrapper``, which runs it in a
process pool (so it must pickle; l.62-70, 141-153) and awaits it::

    # trace_reward.py
    from trace_tasks.integrations.areal import make_reward_fn
    reward_fn = make_reward_fn(format_weight=0.1)

    workflow = VisionRLVRWorkflow(
        reward_fn="trace_reward.reward_fn", gconfig=..., tokenizer=..., processor=..., enable_thinking=False
    )

The row holds the instance: its ``answer_gt``, ``annotation_gt`` and
``reward_contract`` columns (mappings or JSON strings; optional
``image_size``, ``image_sizes``, ``metadata``), or, with
``instance_key="instance"``, one column holding the instance. A row's
``extra_info`` mapping may override scorer options. ``completions`` is decoded
with special tokens (``tokenizer.decode(resp.output_tokens)``,
``areal/workflow/rlvr.py`` l.100), so trailing tokens such as ``<|im_end|>``
are cut (:func:`~trace_tasks.integrations._common.strip_special_tokens`).

Metrics: AReaL's reward function returns one float from a worker process, and
the workflow logs it as ``reward`` (``stats_tracker.get(workflow_context.stat_scope()).scalar(reward=reward)``,
``areal/workflow/rlvr.py`` l.135). To log the charted components too, score
in the rollout process with :func:`make_async_reward_fn` and set it as the
workflow's ``async_reward_fn`` (the attribute ``_compute_rewards`` awaits,
l.101-107): it logs ``trace/<key>`` with the same ``stats_tracker`` call. Set it
in a workflow subclass's ``__init__``: AReaL's default single-controller mode
builds the workflow again in the rollout workers from its class path and
``workflow_kwargs`` (``rollout_controller.py`` l.742-743, 957-967), so an
attribute set on an instance never reaches them (docs/integrations.md).

Errors: a broken instance raises :class:`~trace_tasks.data.InstanceError`
(a ``ValueError``) naming the row (its ``query_id``/``id`` when it has one)
and every problem; ``AsyncRewardWrapper`` logs it, retries (3 times) and
re-raises it (l.176-181), so the rollout fails with the message. With
``on_invalid="zero"`` such a row scores 0.0 and is logged at ERROR (and, with
:func:`make_async_reward_fn`, counted in ``trace/trace_refused``). Model
output never raises.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Optional

from trace_tasks.data import CompiledInstance
from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import (
    REFUSED_KEY,
    check_on_invalid,
    compile_ground_truth,
    log_error,
    logged_keys,
    refused_row,
    row_options,
    scorer_options,
    strip_special_tokens,
)

__all__ = ["AsyncRewardFn", "RewardFn", "make_async_reward_fn", "make_reward_fn"]

logger = logging.getLogger(__name__)

#: Row fields that name a dataset row in an error, first found wins.
_ROW_IDS = ("query_id", "id", "uid", "index", "question_id")


def _where(row: Mapping[str, Any]) -> str:
    for name in _ROW_IDS:
        value = row.get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return f"dataset row {name}={value!r}"
    return "dataset row (no query_id or id column)"


class RewardFn:
    """AReaL's ``reward_fn(prompt, completions, prompt_ids, completion_ids, **row) -> float``.

    A plain class (not a closure), so it pickles into ``AsyncRewardWrapper``'s
    process pool. Build it with :func:`make_reward_fn`.
    """

    def __init__(self, *, instance_key: Optional[str], on_invalid: str, options: Mapping[str, Any]) -> None:
        if instance_key is not None and (not isinstance(instance_key, str) or not instance_key):
            raise OptionError(f"instance_key must be a column name or None, got {instance_key!r}")
        self.instance_key = instance_key
        self.on_invalid = check_on_invalid(on_invalid)
        self.options = scorer_options(options, strict=True)

    def compile(self, row: Mapping[str, Any]) -> tuple[CompiledInstance, dict[str, Any]] | None:
        """The row's compiled instance; ``None`` for a refused one (``on_invalid="zero"``, logged at ERROR)."""
        ground_truth = row if self.instance_key is None else row.get(self.instance_key)
        try:
            return compile_ground_truth(ground_truth, where=_where(row))
        except ValueError as exc:  # InstanceError, or a row that holds no instance at all
            if self.on_invalid == "raise":
                raise
            log_error(
                logger,
                "trace_tasks refuses a broken trace instance in the AReaL dataset row: %s; the rollout is scored 0. "
                "Fix the dataset (`trace-tasks validate FILE` lists every broken row).",
                exc,
            )
            return None

    def result(self, completions: Any, row: Mapping[str, Any]) -> dict[str, float] | None:
        """The scorer's result for one rollout (``None`` for a refused row)."""
        entry = self.compile(row)
        if entry is None:
            return None
        compiled, inputs = entry
        text = strip_special_tokens(completions) if isinstance(completions, str) else ""
        return compiled.score(text, **inputs, **row_options(self.options, row.get("extra_info")))

    def __call__(self, prompt: Any, completions: Any, prompt_ids: Any, completion_ids: Any, **row: Any) -> float:
        result = self.result(completions, row)
        return 0.0 if result is None else float(result["overall"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(instance_key={self.instance_key!r}, on_invalid={self.on_invalid!r}, **{self.options!r})"


StatsLogger = Callable[..., None]


def _areal_stats() -> StatsLogger:
    """``stats_tracker.get(workflow_context.stat_scope()).scalar``: where AReaL's workflows log ``reward``."""
    from areal import workflow_context
    from areal.utils import stats_tracker

    scalar: StatsLogger = stats_tracker.get(workflow_context.stat_scope()).scalar
    return scalar


class AsyncRewardFn(RewardFn):
    """An ``async`` reward function for a workflow's ``async_reward_fn``: scores in a thread, logs ``trace/<key>``.

    Build it with :func:`make_async_reward_fn`.
    """

    def __init__(
        self,
        *,
        instance_key: Optional[str],
        on_invalid: str,
        log_keys: str,
        stats: Optional[Callable[[], StatsLogger]],
        options: Mapping[str, Any],
    ) -> None:
        super().__init__(instance_key=instance_key, on_invalid=on_invalid, options=options)
        self.keys = logged_keys(log_keys, self.options)
        self._stats = _areal_stats if stats is None else stats

    async def __call__(  # type: ignore[override]
        self, prompt: Any, completions: Any, prompt_ids: Any, completion_ids: Any, **row: Any
    ) -> float:
        # Scoring is CPU work: a thread keeps the rollout's event loop free for generation.
        result = await asyncio.to_thread(self.result, completions, row)
        if result is None:
            logged = refused_row(self.keys)
        else:
            logged = {key: float(result.get(key, 0.0)) for key in self.keys}
            logged[REFUSED_KEY] = 0.0
        if self.keys:
            self._stats()(**{f"trace/{key}": value for key, value in logged.items()})
        return 0.0 if result is None else float(result["overall"])


def make_reward_fn(*, instance_key: Optional[str] = None, on_invalid: str = "raise", **options: Any) -> RewardFn:
    """AReaL's ``reward_fn`` with ``options`` (every scorer option of ``score_trace_response``, checked now).

    ``instance_key``: ``None`` (the row holds the instance columns) or the
    column holding the instance. ``on_invalid``: ``"raise"`` (default) or
    ``"zero"`` (0.0, logged at ERROR). Picklable, for ``AsyncRewardWrapper``.
    """
    return RewardFn(instance_key=instance_key, on_invalid=on_invalid, options=options)


def make_async_reward_fn(
    *,
    instance_key: Optional[str] = None,
    on_invalid: str = "raise",
    log_keys: str = "charted",
    stats: Optional[Callable[[], StatsLogger]] = None,
    **options: Any,
) -> AsyncRewardFn:
    """An ``async`` reward function that also logs ``trace/<key>`` to AReaL's ``stats_tracker``.

    Set it as the workflow's ``async_reward_fn`` (in place of
    ``AsyncRewardWrapper(reward_fn)``); it scores in a thread of the rollout
    process, so nothing needs to pickle. ``log_keys``: ``"charted"`` (default)
    or ``"all"``; ``trace/trace_refused`` is logged too. ``stats``: a callable
    returning the ``scalar(**values)`` to log with (default AReaL's
    ``stats_tracker.get(workflow_context.stat_scope()).scalar``, imported on
    the first call). Other arguments as :func:`make_reward_fn`.
    """
    return AsyncRewardFn(instance_key=instance_key, on_invalid=on_invalid, log_keys=log_keys, stats=stats, options=options)
