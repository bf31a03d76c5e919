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

Errors: a malformed ground truth or an invalid option raises ``ValueError``.
verl stops on it at the first step, which is what a broken dataset deserves;
model output never raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_tasks.core.reward_scoring import score_trace_response
from trace_tasks.integrations._common import scorer_options, scoring_kwargs, stable_view

__all__ = ["compute_score", "compute_score_batch"]


def _score(solution_str: Any, ground_truth: Any, extra_info: Any, options: dict[str, Any], where: str) -> dict[str, float]:
    kwargs = scoring_kwargs(ground_truth, extra_info=extra_info, options=options, where=where)
    # verl decodes with skip_special_tokens; anything that is not text scores as an empty response.
    response = solution_str if isinstance(solution_str, str) else ""
    result = stable_view(score_trace_response(response=response, **kwargs))
    return {"score": result["overall"], **result}


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, float]:
    """Score one response (verl ``NaiveRewardManager`` signature).

    ``kwargs``: scorer options from ``custom_reward_function.reward_kwargs``;
    other keyword arguments verl passes are ignored.
    """
    return _score(solution_str, ground_truth, extra_info, scorer_options(kwargs, strict=False), "ground_truth")


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Score a batch (verl ``BatchRewardManager`` signature); one dict per response, in order."""
    n = len(solution_strs)
    if len(ground_truths) != n:
        raise ValueError(f"got {n} solution_strs but {len(ground_truths)} ground_truths")
    if extra_infos is None:
        extra_infos = [None] * n
    elif len(extra_infos) != n:
        raise ValueError(f"got {n} solution_strs but {len(extra_infos)} extra_infos")
    options = scorer_options(kwargs, strict=False)
    return [
        _score(solution, truth, extra, options, f"ground_truths[{i}]")
        for i, (solution, truth, extra) in enumerate(zip(solution_strs, ground_truths, extra_infos))
    ]
