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

Errors: every label is validated through the strict path
(:func:`trace_tasks.instances.compile_instance`, cached by content, so the
``n_samples_per_prompt`` rollouts of a prompt compile their label once). A
broken one (not an instance, a zero-area target box, an unknown type, a contract
that disagrees, an answer its type cannot hold, ...) is refused: ``reward_func``
logs it at ERROR level, once per label content, with every problem, then raises
:class:`~trace_tasks.instances.InstanceError` (a plain ``ValueError`` for a
label that is no instance at all: not JSON, a required field missing). Why both: OpenRLHF 0.11.2 catches
any exception of the reward function, logs it at INFO and leaves the sample's
reward ``None`` (``openrlhf/utils/agent.py`` l.286-304), so the message alone
would drown among INFO lines; the ``None`` reward then stops the run a few
lines later with an unrelated error (``Experience.concat_experiences`` pads a
``None`` reward, or ``experience_maker.py`` l.139-142 asks for a reward model:
"reward_model_group is required when rewards are not precomputed"). The ERROR
line, printed just before, names the real cause. Returning a reward of 0
instead would let the run go on training on a made-up reward.
:func:`score_queries` (used by the HTTP server) raises the same error without
logging. An invalid option raises ``ValueError``. Model output never raises.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from trace_tasks.instances import CompiledInstance
from trace_tasks.integrations._common import compile_ground_truth, scorer_options, stable_keys, stable_view, to_plain

__all__ = ["SPECIAL_TOKENS", "extract_response", "reward_func", "score_queries"]

logger = logging.getLogger(__name__)

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


def _check_lengths(queries: Sequence[Any], prompts: Sequence[Any] | None, labels: Sequence[Any]) -> Sequence[Any]:
    n = len(queries)
    if prompts is None:
        prompts = [None] * n
    if len(prompts) != n or len(labels) != n:
        raise ValueError(f"query, prompts and labels must have the same length, got {n}, {len(prompts)}, {len(labels)}")
    return prompts


def _score_compiled(
    queries: Sequence[Any],
    prompts: Sequence[Any],
    compiled: Sequence[tuple[CompiledInstance, dict[str, Any]]],
    options: Mapping[str, Any] | None,
) -> dict[str, Any]:
    keys = stable_keys()
    logs: dict[str, list[float]] = {key: [] for key in keys}
    options = options or {}
    for query, prompt, (instance, inputs) in zip(queries, prompts, compiled, strict=True):
        result = stable_view(instance.score(extract_response(query, prompt), **inputs, **options))
        for key in keys:
            logs[key].append(result[key])
    overall = [min(max(value, 0.0), 1.0) for value in logs["overall"]]
    return {"rewards": list(overall), "scores": list(overall), "extra_logs": logs}


def score_queries(
    queries: Sequence[Any], prompts: Sequence[Any] | None, labels: Sequence[Any], options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Score OpenRLHF queries; ``{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}`` as lists.

    ``options`` must already be picked and validated (:func:`scorer_options`).
    Raises ``ValueError`` for mismatched lengths and
    :class:`~trace_tasks.instances.InstanceError` naming ``labels[i]`` for the
    first broken label, ``ValueError`` for one that is no instance at all
    (every label is compiled before any query is scored).
    """
    prompts = _check_lengths(queries, prompts, labels)
    compiled = [compile_ground_truth(label, where=f"labels[{i}]") for i, label in enumerate(labels)]
    return _score_compiled(queries, prompts, compiled, options)


#: Digests of the broken labels already logged (bounded): one ERROR line per label content.
_LOGGED_MAX = 4096
_logged: collections.OrderedDict[str, None] = collections.OrderedDict()
_logged_lock = threading.Lock()


def _label_digest(label: Any) -> str:
    if isinstance(label, (bytes, bytearray)):
        data = bytes(label)
    elif isinstance(label, str):
        data = label.encode("utf-8", errors="surrogatepass")
    else:
        try:
            text = json.dumps(to_plain(label), sort_keys=True, default=repr)
        except (TypeError, ValueError, RecursionError):
            text = repr(label)
        data = text.encode("utf-8", errors="surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _log_refusal(label: Any, error: ValueError) -> None:
    """Log a refused label at ERROR, once per label content."""
    digest = _label_digest(label)
    with _logged_lock:
        if digest in _logged:
            _logged.move_to_end(digest)
            return
        _logged[digest] = None
        while len(_logged) > _LOGGED_MAX:
            _logged.popitem(last=False)
    logger.error(
        "trace_tasks refuses a broken trace instance in the label column (--data.label_key): %s. "
        "OpenRLHF catches the error raised now, logs it at INFO and gives the sample no reward; the run then "
        "stops with an unrelated error (a None reward): this is its cause. Fix the dataset "
        "(`trace-tasks validate FILE` lists every broken row).",
        error,
    )


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
    object in the ``TRACE_TASKS_OPTIONS`` environment variable. A broken label
    is logged at ERROR (once per content) and raises
    :class:`~trace_tasks.instances.InstanceError` (``ValueError`` for a label
    that is no instance at all; see the module docstring).
    """
    options = {**_options_from_env(), **scorer_options(kwargs, strict=False)}
    prompts = _check_lengths(queries, prompts, labels)
    compiled = []
    for i, label in enumerate(labels):
        try:
            compiled.append(compile_ground_truth(label, where=f"labels[{i}]"))
        except ValueError as exc:  # InstanceError, or a label that is no instance at all
            _log_refusal(label, exc)
            raise
    return _as_tensors(_score_compiled(queries, prompts, compiled, options))
