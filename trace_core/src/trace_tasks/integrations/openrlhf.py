"""OpenRLHF custom reward function, configured in the one-line reward file.

OpenRLHF loads a Python file and calls its ``reward_func(queries, prompts,
labels)``::

    # reward_func.py
    from trace_tasks.integrations.openrlhf import make_reward_func
    reward_func = make_reward_func(format_weight=0.1)

    # OpenRLHF >= 0.10.2 (0.11.2 current; the flags were renamed at 0.10.2):
    python -m openrlhf.cli.train_ppo_ray ... --reward.remote_url reward_func.py --data.label_key instance
    # OpenRLHF <= 0.10.1 (0.9.0):
    python -m openrlhf.cli.train_ppo_ray ... --remote_rm_url reward_func.py --label_key instance

The label column holds the trace instance (its JSON string, or a mapping).
``queries`` are prompt + response decoded *with* special tokens, so the response
is the query minus its prompt prefix (when it starts with it), with trailing
special tokens such as ``<|im_end|>``, ``</s>`` or a ``<pad>`` run removed
(:func:`trace_tasks.integrations._common.strip_special_tokens`), since the
response contract requires the final object to end the text.

Returns ``{"rewards", "scores", "extra_logs"}``: ``rewards`` and ``scores`` are
the overall reward (in [0, 1]), ``extra_logs`` the logged components
(``log_keys="charted"``: :data:`~trace_tasks.integrations._common.CHARTED_KEYS`,
or ``"all"``) and ``trace_refused``, one value per query, the same keys on every
call (OpenRLHF 0.9.0 concatenates them per key across calls with ``torch.cat``,
``trainer/ppo_utils/experience_maker.py`` l.218-231; 0.11.2 reads one value
per sample, ``samples_generator.py`` l.289-292). They are torch tensors when
torch is importable, lists otherwise. :func:`score_queries` returns the same
with plain lists (the HTTP server uses it).

Broken labels: every label is validated through the strict path
(:func:`trace_tasks.data.compile_instance`, cached by content, so the
``n_samples_per_prompt`` rollouts of a prompt compile their label once).
OpenRLHF 0.11.2 catches any exception of the reward function, logs it at INFO
and leaves the sample's reward ``None`` (``openrlhf/utils/agent.py``
l.286-304): the message drowns among INFO lines and the run later fails with
an unrelated error. So a broken label (not an instance, a zero-area target box,
an unknown type, a contract that disagrees, an answer its type cannot hold, ...)
is, by default (``on_invalid="zero"``), logged at ERROR level once per label
content with the label and every problem, and scored 0 with ``trace_refused``
1.0 in ``extra_logs``: OpenRLHF logs the mean of ``trace_refused`` with the
step's metrics, so a broken dataset shows in the first step. With a group
baseline (``--algo.advantage.estimator group_norm`` on 0.10.2 and later,
``--advantage_estimator`` before; ``rloo``, ``dr_grpo``...) a
prompt whose rollouts all score 0 has zero advantage and trains nothing.
``on_invalid="raise"`` logs the same line and raises the
:class:`~trace_tasks.data.InstanceError` instead (OpenRLHF 0.9.0 does not
catch it: ``ray.get`` in ``experience_maker.py`` l.418 re-raises, and the run
stops with the message). An invalid option raises
:class:`~trace_tasks.errors.OptionError` (a ``ValueError``). A query that is
not text (a list, ``None``, bytes) is a :class:`~trace_tasks.errors.ResponseTypeError`
naming ``queries[i]``, refused like a broken label under ``on_invalid``
(never scored as the empty response). Model output (any text) never raises.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from trace_tasks.data import CompiledInstance
from trace_tasks.errors import OptionError, ResponseTypeError
from trace_tasks.integrations._common import (
    ON_INVALID,
    REFUSED_KEY,
    SPECIAL_TOKENS,
    CompiledEntry,
    compile_ground_truth,
    log_error,
    logged_keys,
    position,
    response_text,
    scorer_options,
    strip_special_tokens,
    to_plain,
)
from trace_tasks.scoring import ScoringOptions, columns, options_from

__all__ = [
    "ON_INVALID",
    "OPTIONS_ENV",
    "SPECIAL_TOKENS",
    "extract_response",
    "make_reward_func",
    "reward_func",
    "score_compiled",
    "score_queries",
]

logger = logging.getLogger(__name__)

#: Scorer options of the ready-made :func:`reward_func`, read from the environment.
#: Prefer :func:`make_reward_func` in the reward file: ``train_ppo_ray`` forwards
#: only a few variables of its own to its Ray actors.
OPTIONS_ENV = "TRACE_TASKS_OPTIONS"
_LABEL_PREVIEW = 300

_Entry = Optional[tuple[CompiledInstance, dict[str, Any]]]


#: Placeholders a vision-language processor expands into one token per image patch (or frame): Qwen2-VL,
#: Qwen2.5-VL and Qwen3-VL's pads, LLaVA's ``<image>``, InternVL's ``<IMG_CONTEXT>``.
EXPANDED_PLACEHOLDERS: tuple[str, ...] = ("<|image_pad|>", "<|video_pad|>", "<image>", "<IMG_CONTEXT>")
#: A run of one placeholder (a prompt's run of them stands for one longer run in the query).
_PLACEHOLDER = re.compile("|".join(f"(?:{re.escape(token)})+" for token in EXPANDED_PLACEHOLDERS))


def extract_response(query: Any, prompt: Any) -> str:
    """The response inside an OpenRLHF query: the query minus its prompt prefix, special tokens stripped.

    With images, OpenRLHF 0.11.2 decodes the query from the processor's tokens, where each image's one
    placeholder of the prompt (``<|image_pad|>``) became one per patch (``openrlhf/utils/agent.py``
    l.211-214 and 288, ``vlm_utils.py`` l.106-107), and passes the prompt as it was: the prompt is then
    matched with each placeholder standing for a run of them. A query the prompt does not start is scored
    whole.
    """
    if not isinstance(query, str):
        return ""
    if isinstance(prompt, str) and prompt:
        if query.startswith(prompt):  # the usual query (no image placeholders expanded): no call
            query = query[len(prompt) :]
        else:
            end = _prompt_end(query, prompt)
            if end is not None:
                query = query[end:]
    return strip_special_tokens(query)


def _prompt_end(query: str, prompt: str) -> int | None:
    """Where ``prompt`` ends at the start of ``query`` (its expanded placeholders as runs), or ``None``."""
    if query.startswith(prompt):
        return len(prompt)
    if _PLACEHOLDER.search(prompt) is None:
        return None
    pieces = []
    position = 0
    for run in _PLACEHOLDER.finditer(prompt):
        token = next(token for token in EXPANDED_PLACEHOLDERS if run.group().startswith(token))
        pieces.append(re.escape(prompt[position : run.start()]))
        pieces.append(f"(?:{re.escape(token)})+")  # followed by other text: one way to match, linear
        position = run.end()
    pieces.append(re.escape(prompt[position:]))
    matched = re.match("".join(pieces), query)
    return matched.end() if matched is not None else None


def _options_from_env() -> dict[str, Any]:
    raw = os.environ.get(OPTIONS_ENV)
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise OptionError(f"{OPTIONS_ENV} must be a JSON object of scorer options: {exc}") from exc
    if not isinstance(options, Mapping):
        raise OptionError(f"{OPTIONS_ENV} must be a JSON object of scorer options, got {raw!r}")
    return scorer_options(options, strict=True)


def _check_lengths(queries: Sequence[Any], prompts: Sequence[Any] | None, labels: Sequence[Any]) -> Sequence[Any]:
    n = len(queries)
    if prompts is None:
        prompts = [None] * n
    if len(prompts) != n or len(labels) != n:
        raise OptionError(f"query, prompts and labels must have the same length, got {n}, {len(prompts)}, {len(labels)}")
    return prompts


def _score_entries(
    queries: Sequence[Any],
    prompts: Sequence[Any],
    entries: Sequence[_Entry],
    options: Mapping[str, Any] | ScoringOptions | None,
    keys: tuple[str, ...],
    *,
    refused_key: bool,
) -> dict[str, Any]:
    """Score each query against its compiled label; a ``None`` entry (a refused label) scores 0."""
    results: list[Mapping[str, float]] = []
    opts: ScoringOptions | None = None  # the options record, made once (at the first label scored)
    for query, prompt, entry in zip(queries, prompts, entries, strict=True):
        if entry is None:
            results.append({})
        else:
            if opts is None:
                opts = options if isinstance(options, ScoringOptions) else options_from(options or {})
            instance, inputs = entry
            text = extract_response(query, prompt)
            results.append(instance.score(text, opts, **inputs) if inputs else instance.score(text, opts))
    overall, logs = columns(results, keys)  # in C in the native build
    if refused_key:
        logs[REFUSED_KEY] = [1.0 if entry is None else 0.0 for entry in entries]
    return {"rewards": overall, "scores": list(overall), "extra_logs": logs}


def score_queries(
    queries: Sequence[Any],
    prompts: Sequence[Any] | None,
    labels: Sequence[Any],
    options: Mapping[str, Any] | None = None,
    *,
    log_keys: str = "all",
) -> dict[str, Any]:
    """Score OpenRLHF queries; ``{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}`` as lists.

    ``options`` must already be picked and validated (:func:`scorer_options`);
    ``log_keys`` picks the ``extra_logs`` keys (``"all"``: every always-present
    key; ``"charted"``). Raises :class:`~trace_tasks.errors.OptionError` (a
    ``ValueError``) for mismatched lengths and
    :class:`~trace_tasks.data.InstanceError` naming ``labels[i]`` for the
    first broken label, :class:`~trace_tasks.errors.RecordError` (a ``ValueError``)
    for one that is no instance at all
    (every label is compiled before any query is scored).
    """
    keys = logged_keys(log_keys, options)
    prompts = _check_lengths(queries, prompts, labels)
    entries = [compile_ground_truth(label, where=f"labels[{i}]") for i, label in enumerate(labels)]
    for i, query in enumerate(queries):
        if type(query) is not str:  # the error names the query (its position is written only then)
            response_text(query, where=position(i, "queries"), name="a query")
    return _score_entries(queries, prompts, entries, options, keys, refused_key=False)


def score_compiled(
    queries: Sequence[Any],
    prompts: Sequence[Any] | None,
    entries: Sequence[CompiledEntry],
    options: Mapping[str, Any] | ScoringOptions | None = None,
    *,
    log_keys: str = "all",
) -> dict[str, Any]:
    """:func:`score_queries` with labels already compiled (one :func:`compile_ground_truth` entry a query).

    The reward server validates every label before scoring any and hands its
    entries here, so no label is compiled (or linted) twice. ``options`` may
    also be their :class:`~trace_tasks.ScoringOptions` record (the server
    makes it once, not once a request).
    """
    keys = logged_keys(log_keys, options)
    prompts = _check_lengths(queries, prompts, entries)
    for i, query in enumerate(queries):
        if type(query) is not str:  # the error names the query (its position is written only then)
            response_text(query, where=position(i, "queries"), name="a query")
    return _score_entries(queries, prompts, entries, options, keys, refused_key=False)


#: Digests of the broken labels already logged (bounded): one ERROR line per label content.
_LOGGED_MAX = 4096
_logged: collections.OrderedDict[str, None] = collections.OrderedDict()
_logged_lock = threading.Lock()


def _label_text(label: Any) -> str:
    if isinstance(label, (bytes, bytearray)):
        return bytes(label).decode("utf-8", errors="replace")
    if isinstance(label, str):
        return label
    try:
        return json.dumps(to_plain(label), sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(label)


def _first_sighting(text: str) -> bool:
    """True the first time a label content is seen (bounded memory of digests)."""
    digest = hashlib.blake2b(text.encode("utf-8", errors="surrogatepass"), digest_size=16).hexdigest()
    with _logged_lock:
        if digest in _logged:
            _logged.move_to_end(digest)
            return False
        _logged[digest] = None
        while len(_logged) > _LOGGED_MAX:
            _logged.popitem(last=False)
    return True


def _log_refusal(label: Any, error: ValueError, *, on_invalid: str) -> None:
    """Log a refused label at ERROR, once per label content, with the label and every problem."""
    text = _label_text(label)
    if not _first_sighting(text):
        return
    preview = text if len(text) <= _LABEL_PREVIEW else text[:_LABEL_PREVIEW] + f"... ({len(text)} characters)"
    consequence = (
        "the sample is scored 0 and counted in the trace_refused metric"
        if on_invalid == "zero"
        else "the error is raised (OpenRLHF >= 0.10 catches it, logs it at INFO and gives the sample no reward)"
    )
    log_error(
        logger,
        "trace_tasks refuses a broken trace instance in the label column (--data.label_key / --label_key): %s; "
        "label: %s; %s. Fix the dataset (`trace-tasks validate FILE` lists every broken row).",
        error,
        preview,
        consequence,
    )


def _log_response_refusal(error: ResponseTypeError, *, on_invalid: str) -> None:
    """Log a query that is not text at ERROR (every time: it is the caller's bug, not a dataset row's)."""
    consequence = (
        "the sample is scored 0 and counted in the trace_refused metric" if on_invalid == "zero" else "the error is raised"
    )
    log_error(logger, "trace_tasks refuses a query that is not text: %s; %s.", error, consequence)


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


RewardFunc = Callable[..., dict[str, Any]]


def make_reward_func(*, log_keys: str = "charted", on_invalid: str = "zero", **options: Any) -> RewardFunc:
    """OpenRLHF's ``reward_func(queries, prompts, labels, **kwargs)`` with ``options`` (scorer options, checked now).

    ``log_keys``: ``"charted"`` (default) or ``"all"``. ``on_invalid``:
    ``"zero"`` (default: ERROR log, reward 0, ``trace_refused`` 1.0) or
    ``"raise"`` (ERROR log, then the error). Returns a plain function, since
    OpenRLHF 0.9.0 wraps it with ``ray.remote``.
    """
    logged_keys(log_keys)  # an unknown set raises before anything else
    if on_invalid not in ON_INVALID:
        raise OptionError(f"on_invalid must be one of {list(ON_INVALID)}, got {on_invalid!r}")
    picked = scorer_options(options, strict=True)
    keys = logged_keys(log_keys, picked)

    def reward_func(queries: Sequence[Any], prompts: Sequence[Any], labels: Sequence[Any], **kwargs: Any) -> dict[str, Any]:
        call_options = {**picked, **scorer_options(kwargs, strict=False)} if kwargs else picked
        checked = _check_lengths(queries, prompts, labels)
        entries: list[_Entry] = []
        for i, (query, label) in enumerate(zip(queries, labels, strict=True)):
            try:
                entries.append(compile_ground_truth(label, where=position(i, "labels")))
            except ValueError as exc:  # InstanceError, or a label that is no instance at all
                _log_refusal(label, exc, on_invalid=on_invalid)
                if on_invalid == "raise":
                    raise
                entries.append(None)
                continue
            try:
                response_text(query, where=position(i, "queries"), name="a query")
            except ResponseTypeError as exc:  # never scored as the empty response: refused like a broken label
                _log_response_refusal(exc, on_invalid=on_invalid)
                if on_invalid == "raise":
                    raise
                entries[-1] = None
        return _as_tensors(_score_entries(queries, checked, entries, call_options, keys, refused_key=True))

    reward_func.__doc__ = f"OpenRLHF reward: trace scorer with options {picked!r}."
    return reward_func


_DEFAULT = make_reward_func()


def reward_func(queries: Sequence[Any], prompts: Sequence[Any], labels: Sequence[Any], **kwargs: Any) -> dict[str, Any]:
    """The ready-made reward function: :func:`make_reward_func` defaults, scorer options from ``TRACE_TASKS_OPTIONS``.

    Kept for reward files written before the factory existed; a file that
    calls :func:`make_reward_func` needs no environment variable on the Ray workers.
    """
    env = _options_from_env()
    return _DEFAULT(queries, prompts, labels, **{**env, **kwargs})
