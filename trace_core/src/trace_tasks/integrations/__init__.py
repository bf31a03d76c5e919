"""Adapters that plug ``score_trace_response`` into RL trainers.

One module per trainer, each importable on its own without the trainer or any
optional dependency installed:

* :mod:`trace_tasks.integrations.verl`: ``custom_reward_function`` (single and batch)
* :mod:`trace_tasks.integrations.trl`: ``GRPOTrainer(reward_funcs=[...])``
* :mod:`trace_tasks.integrations.openrlhf`: ``--remote_rm_url reward_func.py``
* :mod:`trace_tasks.integrations.server`: the same protocol over HTTP
  (``trace-tasks serve``, needs ``trace-core[server]``)
* :mod:`trace_tasks.integrations.easyr1`: batch reward function
* :mod:`trace_tasks.integrations.ray`: Ray Data scoring (needs ``trace-core[ray]``)

See ``docs/integrations.md`` for a copy-paste snippet per trainer.
"""
