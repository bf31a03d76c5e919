"""Adapters that plug ``score_trace_response`` into RL trainers.

One module per trainer, each importable on its own without the trainer or any
optional dependency installed:

* :mod:`trace_tasks.integrations.verl`: ``make_compute_score`` (reward loop,
  naive, dapo, rate_limited with ``on_invalid="zero"``; ``returns="float"`` for
  prime), ``make_compute_score_batch``
* :mod:`trace_tasks.integrations.trl`: ``make_reward_func``,
  ``make_async_reward_func``, ``make_component_reward_funcs`` for ``GRPOTrainer``
* :mod:`trace_tasks.integrations.openrlhf`: ``make_reward_func`` for
  ``--reward.remote_url reward_func.py`` (``--remote_rm_url`` before 0.10.2)
* :mod:`trace_tasks.integrations.server`: the same protocol over HTTP
  (``trace-tasks serve``, needs ``trace-core[server]``)
* :mod:`trace_tasks.integrations.easyr1`: ``make_compute_score`` (batch and sequential)
* :mod:`trace_tasks.integrations.ray`: Ray Data scoring (needs ``trace-core[ray]``)
* :mod:`trace_tasks.integrations.swift`: ``register`` / ``make_orm``, an ms-swift
  reward plugin for ``--external_plugins`` / ``--reward_funcs``
* :mod:`trace_tasks.integrations.lmms_eval`: ``make_process_results`` and the
  ``mean`` aggregations for an lmms-eval task (evaluation)
* :mod:`trace_tasks.integrations.inspect_ai`: ``make_scorer``, an inspect-ai
  scorer reading the instance from the sample's metadata (evaluation)
* :mod:`trace_tasks.integrations.verifiers`: ``make_reward`` / ``make_metrics``
  for verifiers 0.4.0 tasks, ``make_rubric_funcs`` for the 0.1-0.3 ``Rubric``
* :mod:`trace_tasks.integrations.areal`: ``make_reward_fn`` (AReaL's
  ``reward_fn``) and ``make_async_reward_fn`` (logs to its ``stats_tracker``)
* :mod:`trace_tasks.integrations.slime`: ``make_rm``, ``make_batch_rm`` and
  ``make_rollout_log_function`` for ``--custom-rm-path``

Each factory takes the scorer options, so they are set in the one-line reward
file. See ``docs/integrations.md`` for a snippet per trainer and version.
"""

from trace_tasks.integrations._common import (
    CHARTED_KEYS,
    REFUSED_KEY,
    SPECIAL_TOKENS,
    MissingExtraError,
    require,
    strip_special_tokens,
)

__all__ = ["CHARTED_KEYS", "REFUSED_KEY", "SPECIAL_TOKENS", "MissingExtraError", "require", "strip_special_tokens"]
