"""TRL ``GRPOTrainer`` reward functions.

::

    from trace_tasks.integrations.trl import make_reward_func, make_component_reward_funcs

    trainer = GRPOTrainer(..., reward_funcs=[make_reward_func(format_weight=0.1)])
    # or weigh the parts yourself (GRPOConfig(reward_weights=[0.5, 0.4, 0.1])):
    trainer = GRPOTrainer(..., reward_funcs=make_component_reward_funcs())

The dataset needs the columns ``answer_gt``, ``annotation_gt`` and
``reward_contract`` (mappings or JSON strings; optional ``image_size``,
``image_sizes``, ``metadata``, ``extra_info``). TRL passes every column except
``prompt`` to reward functions as a keyword list. A row whose three instance
columns are all empty (a non-trace task in a mixed dataset) gets ``None``, TRL's
"not applicable". Every other row's instance is validated through the strict
path (:func:`trace_tasks.instances.compile_instance`, cached by content, so the
``num_generations`` rows of a group compile their ground truth once) before
anything is scored; a broken one (only some of the columns, a zero-area target
box, an unknown type, a contract that disagrees, an answer its type cannot
hold, ...) raises :class:`~trace_tasks.instances.InstanceError` (a
``ValueError``) naming the row and listing every problem. It is never turned
into ``None``, which TRL would take for "not applicable" and hide. TRL 1.16
calls a sync reward function with no ``try`` (``trl/trainer/grpo_trainer.py``
l.1626-1628), so training stops at that step with the message. Model output
never raises.

When TRL passes ``log_metric``, each call logs the batch mean of the main
components as ``trace/<name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from trace_tasks.core.reward_scoring import FLAG_KEYS, REWARD_KEYS
from trace_tasks.instances import CompiledInstance
from trace_tasks.integrations._common import (
    REQUIRED_FIELDS,
    SIZE_FIELDS,
    compile_ground_truth,
    row_options,
    scorer_options,
    stable_keys,
)

__all__ = ["LOGGED_COMPONENTS", "RewardFunc", "completion_text", "make_component_reward_funcs", "make_reward_func"]

RewardFunc = Callable[..., list[Optional[float]]]

#: Components logged through ``log_metric`` (batch means): the per-response
#: rewards and flags. Option echoes are constant and left out, and
#: ``task_reward_effective`` / ``task_reward_gated`` repeat ``task_reward_raw``.
LOGGED_COMPONENTS: tuple[str, ...] = (
    *(key for key in REWARD_KEYS if key not in ("task_reward_effective", "task_reward_gated")),
    *FLAG_KEYS,
)
_INSTANCE_COLUMNS = REQUIRED_FIELDS + SIZE_FIELDS


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string, or the last assistant message's content.

    Content given as a list of parts (``[{"type": "text", "text": ...}]``) is joined.
    A conversation without an assistant message is an empty response.
    """
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, Sequence):
        raise ValueError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")
    for message in reversed(completion):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return "".join(
                    part["text"] for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                )
            return ""
    return ""


def _column(kwargs: Mapping[str, Any], name: str, n: int) -> Sequence[Any]:
    values = kwargs.get(name)
    if values is None:
        return [None] * n
    if len(values) != n:
        raise ValueError(f"dataset column {name!r} has {len(values)} values for {n} completions")
    return values


def _score_batch(
    completions: Sequence[Any], kwargs: Mapping[str, Any], options: dict[str, Any]
) -> list[Optional[dict[str, float]]]:
    n = len(completions)
    missing = [name for name in REQUIRED_FIELDS if name not in kwargs]
    if missing:
        raise ValueError(
            f"the dataset lacks the column(s) {missing}; trace rewards need {list(REQUIRED_FIELDS)} "
            f"(got columns {sorted(k for k in kwargs if not k.startswith('log_'))})"
        )
    columns = {name: _column(kwargs, name, n) for name in (*_INSTANCE_COLUMNS, "extra_info")}
    compiled: list[
        Optional[tuple[CompiledInstance, dict[str, Any]]]
    ] = []  # every row first: a broken instance raises before anything is scored or logged
    for i in range(n):
        row = {name: columns[name][i] for name in _INSTANCE_COLUMNS}
        if all(row[name] is None for name in REQUIRED_FIELDS):
            compiled.append(None)  # not a trace row: TRL's "not applicable"
        else:
            compiled.append(compile_ground_truth(row, where=f"row {i}"))  # raises InstanceError
    results: list[Optional[dict[str, float]]] = []
    for i, (completion, entry) in enumerate(zip(completions, compiled, strict=True)):
        if entry is None:
            results.append(None)
            continue
        instance, inputs = entry
        results.append(instance.score(completion_text(completion), **inputs, **row_options(options, columns["extra_info"][i])))
    return results


def _log_means(log_metric: Any, results: Sequence[Optional[Mapping[str, float]]]) -> None:
    scored = [r for r in results if r is not None]
    if not callable(log_metric) or not scored:
        return
    for name in LOGGED_COMPONENTS:
        log_metric(f"trace/{name}", sum(r[name] for r in scored) / len(scored))


def make_reward_func(component: str = "overall", *, name: str | None = None, **options: Any) -> RewardFunc:
    """A TRL reward function returning ``component`` of the score dict per completion.

    ``component`` is any key the scorer always returns (``overall``,
    ``answer_reward``, ``annotation_reward``, ``format``, ...). ``options`` are
    scorer options (``trace_reward_mode``, weights, ...), checked now; a row's
    ``extra_info`` column may override them. ``name`` sets ``__name__``, which
    TRL uses to label the reward in its logs (default ``trace_<component>``).
    """
    keys = stable_keys()
    if component not in keys:
        raise ValueError(f"unknown component {component!r}; choose one of {list(keys)}")
    picked = scorer_options(options, strict=True)

    def reward_func(
        prompts: Any = None, completions: Any = None, completion_ids: Any = None, **kwargs: Any
    ) -> list[Optional[float]]:
        if completions is None:
            raise ValueError("TRL reward functions are called with completions=[...]")
        results = _score_batch(completions, kwargs, picked)
        _log_means(kwargs.get("log_metric"), results)
        return [None if r is None else r[component] for r in results]

    reward_func.__name__ = reward_func.__qualname__ = name or f"trace_{component}"
    reward_func.__doc__ = f"TRL reward: the trace scorer's {component!r} per completion."
    return reward_func


def make_component_reward_funcs(**options: Any) -> list[RewardFunc]:
    """Answer, annotation and format rewards as three functions, for ``reward_weights``.

    With weights ``[a, n, f]`` the summed reward is ``a * answer_reward +
    n * annotation_reward + f * format``: the additive formula. For the gated
    formula (a wrong answer earns nothing for its annotation) use
    ``make_reward_func()`` alone.
    """
    return [
        make_reward_func("answer_reward", name="trace_answer", **options),
        make_reward_func("annotation_reward", name="trace_annotation", **options),
        make_reward_func("format", name="trace_format", **options),
    ]
