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

Errors: every input's instance is validated through the strict path
(:func:`trace_tasks.instances.compile_instance`, cached by content, so a group
of rollouts compiles its ground truth once) before anything is scored. A
broken one raises :class:`~trace_tasks.instances.InstanceError` (a
``ValueError``) naming ``reward_inputs[i].ground_truth`` and listing every
problem; an invalid option raises ``ValueError``. EasyR1 calls the function
with no ``try`` (``verl/workers/reward/function.py`` l.95) inside a Ray actor
whose result the trainer takes with ``ray.get`` (``verl/trainer/ray_trainer.py``
l.519), so the run stops with the message. Model output never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.integrations._common import compile_ground_truth, scorer_options, stable_view

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
    compiled = []  # every input first: a broken instance raises before anything is scored
    for i, item in enumerate(reward_inputs):
        if not isinstance(item, Mapping):
            raise ValueError(f"reward_inputs[{i}] must be a mapping, got {type(item).__name__}")
        compiled.append(compile_ground_truth(item.get("ground_truth"), where=f"reward_inputs[{i}].ground_truth"))
    scores = []
    for item, (instance, inputs) in zip(reward_inputs, compiled, strict=True):
        response = item.get("response")
        scores.append(stable_view(instance.score(response if isinstance(response, str) else "", **inputs, **picked)))
    return scores
