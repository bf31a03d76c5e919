"""OpenRLHF custom reward function (``--remote_rm_url /path/to/reward_func.py``).

OpenRLHF loads a Python file and calls its ``reward_func(queries, prompts,
labels)``; a one-line file re-exporting ours is enough::

    from trace_tasks.integrations.openrlhf import reward_func  # noqa: F401

Run with ``--label_key`` naming the dataset column that holds the trace
instance (its JSON string, or a mapping). ``queries`` are prompt + response
decoded *with* special tokens, so the response is the query minus its prompt
prefix (when it starts with it), with trailing special tokens such as
``<|im_end|>`` or ``</s>`` removed, since the response contract requires the
final object to end the text.

Returns ``{"rewards", "scores", "extra_logs"}``: ``rewards`` and ``scores`` are
the overall reward (in [0, 1]), ``extra_logs`` every key the scorer always
returns, one value per query. They are torch tensors when torch is importable
(older OpenRLHF concatenates them with ``torch.cat``), lists otherwise.
:func:`score_queries` returns the same with plain lists (the HTTP server uses it).

Errors: a malformed label or invalid option raises ``ValueError`` (OpenRLHF then
stops with the traceback; a broken dataset should not train silently on zeros).
Model output never raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.core.reward_scoring import score_trace_response
from trace_tasks.integrations._common import scorer_options, scoring_kwargs, stable_keys, stable_view

__all__ = ["SPECIAL_TOKENS", "extract_response", "reward_func", "score_queries"]

#: Plain end-of-sequence tokens stripped from the end of a response, besides any ``<|...|>`` token.
SPECIAL_TOKENS: tuple[str, ...] = ("</s>", "<eos>", "<end_of_turn>", "<｜end▁of▁sentence｜>")
_MAX_TOKEN_LEN = 64
#: Scorer options for reward files, read from the environment (OpenRLHF passes no options).
OPTIONS_ENV = "TRACE_TASKS_OPTIONS"


def _strip_special_tokens(text: str) -> str:
    """Drop trailing whitespace and special tokens (``<|im_end|>``, ``</s>``, ...).

    Moves an end index instead of slicing, so a response made of a million
    tokens is still handled in linear time.
    """
    end = len(text)
    while True:
        while end and text[end - 1].isspace():
            end -= 1
        if text.endswith("|>", 0, end):
            start = text.rfind("<|", max(0, end - _MAX_TOKEN_LEN), end)
            if start != -1 and not any(ch.isspace() for ch in text[start:end]):
                end = start
                continue
        for token in SPECIAL_TOKENS:
            if text.endswith(token, 0, end):
                end -= len(token)
                break
        else:
            return text[:end]


def extract_response(query: Any, prompt: Any) -> str:
    """The response inside an OpenRLHF query: the query minus its prompt prefix, special tokens stripped."""
    if not isinstance(query, str):
        return ""
    if isinstance(prompt, str) and prompt and query.startswith(prompt):
        query = query[len(prompt) :]
    return _strip_special_tokens(query)


def _options_from_env() -> dict[str, Any]:
    import json

    raw = os.environ.get(OPTIONS_ENV)
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{OPTIONS_ENV} must be a JSON object of scorer options: {exc}") from exc
    if not isinstance(options, Mapping):
        raise ValueError(f"{OPTIONS_ENV} must be a JSON object of scorer options, got {raw!r}")
    return scorer_options(options, strict=True)


def score_queries(
    queries: Sequence[Any], prompts: Sequence[Any] | None, labels: Sequence[Any], options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Score OpenRLHF queries; ``{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}`` as lists.

    ``options`` must already be picked and validated (:func:`scorer_options`).
    Raises ``ValueError`` for mismatched lengths or a malformed label.
    """
    n = len(queries)
    if prompts is None:
        prompts = [None] * n
    if len(prompts) != n or len(labels) != n:
        raise ValueError(f"query, prompts and labels must have the same length, got {n}, {len(prompts)}, {len(labels)}")
    keys = stable_keys()
    logs: dict[str, list[float]] = {key: [] for key in keys}
    for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
        kwargs = scoring_kwargs(label, options=options, where=f"labels[{i}]")
        result = stable_view(score_trace_response(response=extract_response(query, prompt), **kwargs))
        for key in keys:
            logs[key].append(result[key])
    overall = [min(max(value, 0.0), 1.0) for value in logs["overall"]]
    return {"rewards": list(overall), "scores": list(overall), "extra_logs": logs}


def _as_tensors(result: dict[str, Any]) -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return result
    return {
        "rewards": torch.tensor(result["rewards"], dtype=torch.float32),
        "scores": torch.tensor(result["scores"], dtype=torch.float32),
        "extra_logs": {k: torch.tensor(v, dtype=torch.float32) for k, v in result["extra_logs"].items()},
    }


def reward_func(queries: Sequence[Any], prompts: Sequence[Any], labels: Sequence[Any], **kwargs: Any) -> dict[str, Any]:
    """OpenRLHF's custom reward function.

    Scorer options come from ``kwargs`` (unknown keys ignored) over the JSON
    object in the ``TRACE_TASKS_OPTIONS`` environment variable.
    """
    options = {**_options_from_env(), **scorer_options(kwargs, strict=False)}
    return _as_tensors(score_queries(queries, prompts, labels, options))
