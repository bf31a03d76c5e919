"""verl custom reward function.

verl config (``custom_reward_function.path`` = this file's path, or a one-line
file that re-exports it)::

    custom_reward_function:
      path: /path/to/trace_reward.py   # from trace_tasks.integrations.verl import compute_score
      name: compute_score              # or compute_score_batch with reward_model.reward_manager=batch
      reward_kwargs: {trace_reward_mode: answer_and_annotation, format_weight: 0.1}

The dataset row's ``reward_model.ground_truth`` is the trace instance (a mapping
or, more robust in parquet, its JSON string). ``extra_info`` may carry the
image size and per-row scorer options.

Returns a dict holding ``score`` (= ``overall``) and every key the scorer always
returns; verl logs each of them as ``reward_extra_info``. verl stacks those
lists per key, so every row must have the same keys: the type-specific
diagnostics (present only when an annotation parsed) are left out.

Errors: every row's instance is validated through the strict path
(:func:`trace_tasks.instances.compile_instance`, cached by content, so a group
of rollouts compiles its ground truth once). A broken one (not an instance, a
zero-area target box, an unknown type, a contract that disagrees, an answer
value its type cannot hold, ...) raises
:class:`~trace_tasks.instances.InstanceError` (a ``ValueError``) naming the row
and listing every problem; an invalid option raises ``ValueError``. verl 0.9.1
does not catch exceptions of a custom reward function: the reward-loop naive
and dapo managers await it with no ``try``
(``experimental/reward_loop/reward_manager/naive.py`` l.66-84), the worker
gathers without ``return_exceptions`` (``experimental/reward_loop/reward_loop.py``
l.138-143) and the trainer's ``ray.get`` re-raises (l.350-356), so the step
stops with our message, which is what a broken dataset deserves. (The
``rate_limited`` manager alone catches it, logs it at ERROR and scores 0 with
an ``error`` key: ``reward_manager/limited.py`` l.460-467.) Model output never raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_tasks.instances import CompiledInstance
from trace_tasks.integrations._common import compile_ground_truth, row_options, scorer_options, stable_view

__all__ = ["compute_score", "compute_score_batch"]


def _score(
    compiled: CompiledInstance, inputs: dict[str, Any], solution_str: Any, extra_info: Any, options: dict[str, Any]
) -> dict[str, float]:
    # verl decodes with skip_special_tokens; anything that is not text scores as an empty response.
    response = solution_str if isinstance(solution_str, str) else ""
    result = stable_view(compiled.score(response, **inputs, **row_options(options, extra_info)))
    return {"score": result["overall"], **result}


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, float]:
    """Score one response (verl ``NaiveRewardManager`` signature).

    ``kwargs``: scorer options from ``custom_reward_function.reward_kwargs``;
    other keyword arguments verl passes are ignored.
    """
    options = scorer_options(kwargs, strict=False)
    compiled, inputs = compile_ground_truth(ground_truth, where="ground_truth")  # raises InstanceError
    return _score(compiled, inputs, solution_str, extra_info, options)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Score a batch (verl ``BatchRewardManager`` signature); one dict per response, in order.

    Every row's instance is compiled before any response is scored; the first
    broken one raises :class:`~trace_tasks.instances.InstanceError` naming
    ``ground_truths[i]``.
    """
    n = len(solution_strs)
    if len(ground_truths) != n:
        raise ValueError(f"got {n} solution_strs but {len(ground_truths)} ground_truths")
    if extra_infos is None:
        extra_infos = [None] * n
    elif len(extra_infos) != n:
        raise ValueError(f"got {n} solution_strs but {len(extra_infos)} extra_infos")
    options = scorer_options(kwargs, strict=False)
    compiled = [compile_ground_truth(truth, where=f"ground_truths[{i}]") for i, truth in enumerate(ground_truths)]
    return [
        _score(instance, inputs, solution, extra, options)
        for (instance, inputs), solution, extra in zip(compiled, solution_strs, extra_infos, strict=True)
    ]
