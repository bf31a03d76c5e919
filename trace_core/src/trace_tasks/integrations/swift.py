"""ms-swift GRPO reward plugin (``--external_plugins FILE --reward_funcs NAME``).

ms-swift 4.6 imports each ``--external_plugins`` file (``swift/utils/utils.py``
l.409-429, from ``swift/arguments/base_args/base_args.py`` l.170-183), then
instantiates every ``--reward_funcs`` name found in ``swift.rewards.orms`` with
``orms[name](args=args)`` (``swift rlhf``: ``GRPOTrainer._prepare_rewards``,
``swift/rlhf_trainers/grpo_trainer.py`` l.2215-2228; Megatron:
``swift/rlhf_trainers/utils.py`` l.2289-2294) and calls it as
``reward_func(completions, **reward_kwargs)`` (``swift/rl_core/grpo_algorithm.py``
l.65): ``completions`` are the last messages' contents, ``reward_kwargs`` every
dataset column as a list (``RowPreprocessor.rows_to_batched``, a column missing
from a row as ``None``) plus ``trainer_state``, ``messages`` and the like. swift
logs each function's mean as ``rewards/<class name>/mean``
(``grpo_trainer.py`` l.2232-2237 and l.429): :func:`register` names the class
after its name, so ``register("trace_answer", ...)`` logs ``rewards/trace_answer/mean``::

    # trace_plugin.py
    from trace_tasks.integrations.swift import register
    register("trace", format_weight=0.1)   # puts a swift ORM subclass into swift.rewards.orms["trace"]

    swift rlhf --rlhf_type grpo ... --external_plugins trace_plugin.py --reward_funcs trace

The dataset needs the columns ``answer_gt``, ``annotation_gt`` and
``reward_contract`` (JSON strings are safest through ``datasets``; mappings
work; optional ``image_size``, ``image_sizes``, ``metadata``, ``extra_info``), as
for TRL. Returns one float per completion: the scorer's ``overall`` (or the
``component`` chosen), ``None`` for a row whose three instance columns are all
empty (a non-trace row of a mixed dataset), which swift turns into NaN (l.66),
its "not applicable". Several components with ``--reward_weights``::

    register("trace_answer", component="answer_reward")
    register("trace_annotation", component="annotation_reward")
    register("trace_format", component="format")

Errors: every row's instance is validated through the strict path before
anything is scored; a broken one raises
:class:`~trace_tasks.data.InstanceError` (a ``ValueError``) naming its
position in the call (swift passes no dataset row index) and listing every
problem. swift calls a sync reward function with no ``try``
(``grpo_algorithm.py`` l.62-67), so the step stops with the message. Model
output never raises.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import MissingExtraError, scorer_options, stable_keys
from trace_tasks.integrations.trl import _score_batch

__all__ = ["COMPONENTS", "make_orm", "register", "score_completions"]

#: ``component`` values: the overall reward, or one part of it.
COMPONENTS: tuple[str, ...] = ("overall", "answer_reward", "annotation_reward", "format")


def score_completions(
    completions: Sequence[Any], columns: Mapping[str, Any], options: Mapping[str, Any], component: str = "overall"
) -> list[Optional[float]]:
    """One value per completion for swift: ``component`` of the scorer's result, ``None`` for a non-trace row."""
    results = _score_batch(completions, columns, dict(options))
    return [None if result is None else float(result[component]) for result in results]


def _swift_rewards() -> Any:
    """``swift.rewards`` (ORM, orms), or :class:`MissingExtraError` naming the package."""
    try:
        return importlib.import_module("swift.rewards")
    except ImportError as exc:
        raise MissingExtraError("trace_tasks.integrations.swift needs ms-swift: pip install 'ms-swift>=4.6'") from exc


def _check_component(component: str) -> str:
    if component not in COMPONENTS:
        raise OptionError(f"component must be one of {list(COMPONENTS)}, got {component!r}")
    return component


def make_orm(*, component: str = "overall", **options: Any) -> type:
    """A subclass of swift's ``ORM`` (``swift.rewards.ORM``) scoring with ``options`` (scorer options, checked now).

    swift instantiates it with ``args=`` (its GRPO config) and calls the
    instance with ``(completions, **dataset_columns)``. Needs ms-swift installed.
    """
    _check_component(component)
    picked = scorer_options(options, strict=True)
    stable_keys(picked)  # a response policy's options are checked now too
    base: type = _swift_rewards().ORM

    def __call__(self: Any, completions: Sequence[Any], **kwargs: Any) -> list[Optional[float]]:
        return score_completions(completions, kwargs, picked, component)

    def __repr__(self: Any) -> str:
        return f"{type(self).__name__}(component={component!r}, **{picked!r})"

    return type(
        "TraceORM",
        (base,),
        {
            "__call__": __call__,
            "__repr__": __repr__,
            "__doc__": f"trace_tasks reward ({component}) with options {picked!r}.",
            "__module__": __name__,
            "component": component,
            "options": picked,
        },
    )


def register(name: str = "trace", *, component: str = "overall", **options: Any) -> type:
    """Build :func:`make_orm` and put it into ``swift.rewards.orms[name]``, the name for ``--reward_funcs``.

    The class is named ``name`` too: swift keys its per-function metrics
    (``rewards/<name>/mean``) by the class name, so several components keep
    apart (with :func:`make_orm`'s default name ``TraceORM`` they would merge).
    """
    if not isinstance(name, str) or not name:
        raise OptionError(f"the reward name must be a non-empty string, got {name!r}")
    orm = make_orm(component=component, **options)
    orm.__name__ = orm.__qualname__ = name
    _swift_rewards().orms[name] = orm
    return orm
