"""EasyR1 batch reward function.

EasyR1 loads a file and calls ``compute_score(reward_inputs, **reward_function_kwargs)``;
a one-line file re-exporting ours is enough::

    # trace_reward.py
    from trace_tasks.integrations.easyr1 import REWARD_NAME, REWARD_TYPE, compute_score  # noqa: F401

    # config: worker.reward.reward_function=./trace_reward.py:compute_score

Each input is ``{"response", "response_length", "ground_truth"}``; the ground
truth (``data.answer_key`` column) is the trace instance, a mapping or its JSON
string. Returns one dict per input with ``overall`` and every key the scorer
always returns (EasyR1 logs the mean of each key). Keep
``skip_special_tokens: true`` (the default) so responses end with the final object.

Errors: a malformed ground truth or invalid option raises ``ValueError``
(EasyR1 stops with the traceback); model output never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.core.reward_scoring import score_trace_response
from trace_tasks.integrations._common import scorer_options, scoring_kwargs, stable_view

__all__ = ["REWARD_NAME", "REWARD_TYPE", "compute_score"]

#: EasyR1 reads these module attributes to pick its batch reward manager.
REWARD_TYPE = "batch"
REWARD_NAME = "trace_tasks"


def compute_score(reward_inputs: Sequence[Mapping[str, Any]], **options: Any) -> list[dict[str, float]]:
    """Score a batch of EasyR1 reward inputs, in order.

    ``options`` are scorer options from ``worker.reward.reward_function_kwargs``;
    they are checked strictly, since nobody but the user passes them.
    """
    picked = scorer_options(options, strict=True)
    scores = []
    for i, item in enumerate(reward_inputs):
        if not isinstance(item, Mapping):
            raise ValueError(f"reward_inputs[{i}] must be a mapping, got {type(item).__name__}")
        kwargs = scoring_kwargs(item.get("ground_truth"), options=picked, where=f"reward_inputs[{i}].ground_truth")
        response = item.get("response")
        scores.append(stable_view(score_trace_response(response=response if isinstance(response, str) else "", **kwargs)))
    return scores
