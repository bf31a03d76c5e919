"""slime custom reward models: ``--custom-rm-path`` functions scoring a sample against its trace instance.

slime (THUDM/slime, ``624b824``) loads ``--custom-rm-path module.name`` and
awaits ``rm(args, sample, **kwargs)`` per sample, or, with ``--group-rm``,
``rm(args, samples, **kwargs)`` for a whole group, which returns one reward per
sample (``slime/rollout/rm_hub/__init__.py`` l.55-63, 99-107)::

    # trace_rm.py
    from trace_tasks.integrations.slime import make_batch_rm, make_rm, make_rollout_log_function
    rm = make_rm(format_weight=0.1)
    batch_rm = make_batch_rm(format_weight=0.1)          # for --group-rm
    log_rollout = make_rollout_log_function()

    python train.py ... --label-key instance --custom-rm-path trace_rm.rm --reward-key overall \\
        --custom-rollout-log-function-path trace_rm.log_rollout

The sample's ``label`` holds the trace instance (its JSON string: slime's
``--label-key`` column), or, with ``instance_key="name"``, ``sample.metadata[name]``.
``sample.metadata`` (``--metadata-key``) may override scorer options per row,
as ``extra_info`` does elsewhere. ``sample.response`` is cut at trailing special
tokens (slime decodes with ``--rollout-skip-special-tokens`` off by default).

Rewards (``returns``):

* ``"dict"`` (default): ``{"overall": ..., <logged keys>..., "trace_refused": 0.0}``,
  the same keys for every sample; slime trains on the key ``--reward-key``
  names (``Sample.get_reward_value``, ``slime/utils/types.py`` l.246-247), so
  pass ``--reward-key overall``. The components stay on each sample's
  ``reward``; :func:`make_rollout_log_function` logs their means.
* ``"float"``: the overall reward alone (no ``--reward-key``).

Metrics: slime logs a rollout through ``--custom-rollout-log-function-path``
``f(rollout_id, args, samples, rollout_extra_metrics, rollout_time) -> bool``
and, when it returns ``False``, its own default logging, which starts from the
``rollout_extra_metrics`` dict (``slime/observability/rollout_metrics.py``
l.256-271). :func:`make_rollout_log_function` adds ``rollout/trace/<key>``, the
mean of each component over the rollout's dict rewards, to that dict and
returns ``False``; when slime passes ``None`` it logs them itself with
slime's ``logging_utils.log(args, values, step_key="rollout/step")``.

Errors: a broken instance raises :class:`~trace_tasks.data.InstanceError`
(a ``ValueError``) naming the sample (``sample index=...``) and every
problem; slime awaits the reward model with no ``try`` (``slime/rollout/sglang_rollout.py``
l.277, 287, 332), so the rollout stops with the message. With ``on_invalid="zero"``
such a sample scores 0 with ``trace_refused`` 1.0 (logged at ERROR). Model
output never raises.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Optional

from trace_tasks.errors import OptionError
from trace_tasks.integrations._common import (
    REFUSED_KEY,
    check_on_invalid,
    compile_ground_truth,
    log_error,
    logged_keys,
    refused_row,
    row_options,
    scorer_options,
    strip_special_tokens,
)

__all__ = [
    "LOG_PREFIX",
    "RETURN_SHAPES",
    "SampleScorer",
    "make_batch_rm",
    "make_rm",
    "make_rollout_log_function",
    "rollout_means",
]

logger = logging.getLogger(__name__)

#: ``returns`` values: the reward dict (with ``--reward-key overall``) or the overall float.
RETURN_SHAPES: tuple[str, ...] = ("dict", "float")
#: The prefix of the logged components (slime's own rollout metrics are ``rollout/...``).
LOG_PREFIX = "rollout/trace/"

Reward = dict[str, float] | float


def _where(sample: Any) -> str:
    index = getattr(sample, "index", None)
    if isinstance(index, int) and not isinstance(index, bool):
        return f"sample index={index}"
    return "sample (no index)"


class SampleScorer:
    """What both slime call shapes share: options checked once, one sample scored. Build with :func:`make_rm`."""

    def __init__(
        self, *, instance_key: Optional[str], on_invalid: str, returns: str, log_keys: str, options: Mapping[str, Any]
    ) -> None:
        if instance_key is not None and (not isinstance(instance_key, str) or not instance_key):
            raise OptionError(f"instance_key must be a metadata field name or None (the label), got {instance_key!r}")
        if returns not in RETURN_SHAPES:
            raise OptionError(f"returns must be one of {list(RETURN_SHAPES)}, got {returns!r}")
        self.instance_key = instance_key
        self.on_invalid = check_on_invalid(on_invalid)
        self.returns = returns
        self.options = scorer_options(options, strict=True)
        #: The keys of a dict reward: ``overall``, the logged keys, :data:`REFUSED_KEY`.
        self.keys = tuple(dict.fromkeys(("overall", *logged_keys(log_keys, self.options))))

    def score(self, sample: Any) -> Reward:
        """One sample's reward (raises for a broken instance unless ``on_invalid="zero"``)."""
        metadata = getattr(sample, "metadata", None)
        metadata = metadata if isinstance(metadata, Mapping) else {}
        if self.instance_key is None:
            ground_truth = getattr(sample, "label", None)
        else:
            ground_truth = metadata.get(self.instance_key)
        try:
            compiled, inputs = compile_ground_truth(ground_truth, where=_where(sample))
        except ValueError as exc:  # InstanceError, or a label that is no instance at all
            if self.on_invalid == "raise":
                raise
            log_error(
                logger,
                "trace_tasks refuses a broken trace instance in the sample label: %s; the sample is scored 0 with %s=1.0. "
                "Fix the dataset (`trace-tasks validate FILE` lists every broken row).",
                exc,
                REFUSED_KEY,
            )
            return 0.0 if self.returns == "float" else refused_row(self.keys)
        response = getattr(sample, "response", None)
        text = strip_special_tokens(response) if isinstance(response, str) else ""
        result = compiled.score(text, **inputs, **row_options(self.options, metadata))
        if self.returns == "float":
            return float(result["overall"])
        reward = {key: float(result.get(key, 0.0)) for key in self.keys}
        reward[REFUSED_KEY] = 0.0
        return reward

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(instance_key={self.instance_key!r}, on_invalid={self.on_invalid!r}, "
            f"returns={self.returns!r}, **{self.options!r})"
        )


def make_rm(
    *,
    instance_key: Optional[str] = None,
    on_invalid: str = "raise",
    returns: str = "dict",
    log_keys: str = "charted",
    **options: Any,
) -> Callable[..., Awaitable[Reward]]:
    """slime's per-sample ``async rm(args, sample, **kwargs)`` with ``options`` (every scorer option, checked now).

    ``instance_key``: ``None`` (``sample.label`` holds the instance) or the
    ``sample.metadata`` field holding it. ``on_invalid``: ``"raise"`` (default)
    or ``"zero"``. ``returns``: ``"dict"`` (default; train with
    ``--reward-key overall``) or ``"float"``. ``log_keys``: the components of
    the dict, ``"charted"`` (default) or ``"all"``.
    """
    scorer = SampleScorer(instance_key=instance_key, on_invalid=on_invalid, returns=returns, log_keys=log_keys, options=options)

    async def rm(args: Any, sample: Any, **kwargs: Any) -> Reward:
        # Scoring is CPU work: a thread keeps slime's rollout event loop generating.
        return await asyncio.to_thread(scorer.score, sample)

    rm.__doc__ = f"slime custom reward model: {scorer!r}."
    return rm


def make_batch_rm(
    *,
    instance_key: Optional[str] = None,
    on_invalid: str = "raise",
    returns: str = "dict",
    log_keys: str = "charted",
    **options: Any,
) -> Callable[..., Awaitable[list[Reward]]]:
    """slime's batch ``async rm(args, samples, **kwargs) -> list`` (``--group-rm``); arguments as :func:`make_rm`."""
    scorer = SampleScorer(instance_key=instance_key, on_invalid=on_invalid, returns=returns, log_keys=log_keys, options=options)

    def score_all(samples: Sequence[Any]) -> list[Reward]:
        return [scorer.score(sample) for sample in samples]

    async def batch_rm(args: Any, samples: Sequence[Any], **kwargs: Any) -> list[Reward]:
        return await asyncio.to_thread(score_all, list(samples))

    batch_rm.__doc__ = f"slime custom batch reward model (--group-rm): {scorer!r}."
    return batch_rm


def rollout_means(samples: Sequence[Any]) -> dict[str, float]:
    """``rollout/trace/<key>``: the mean of each key over the samples whose reward is a dict (none: empty)."""
    rewards = [s.reward for s in _flat(samples) if isinstance(getattr(s, "reward", None), Mapping)]
    if not rewards:
        return {}
    keys = dict.fromkeys(key for reward in rewards for key in reward)
    means = {}
    for key in keys:
        values = [float(r[key]) for r in rewards if isinstance(r.get(key), (int, float))]
        if values:
            means[f"{LOG_PREFIX}{key}"] = math.fsum(values) / len(values)
    return means


def _flat(samples: Sequence[Any]) -> list[Any]:
    """slime hands a rollout's samples as a flat list, or as groups (lists) of them."""
    flat: list[Any] = []
    for item in samples:
        if isinstance(item, (list, tuple)):
            flat.extend(_flat(item))
        else:
            flat.append(item)
    return flat


def _slime_log(args: Any, rollout_id: int, values: dict[str, float]) -> None:
    """Log ``values`` at the rollout's step the way slime's default logging does (rollout_metrics.py l.269-271)."""
    from slime.observability import logging_utils
    from slime.observability.metric_utils import compute_rollout_step

    values = {**values, "rollout/step": compute_rollout_step(args, rollout_id)}
    logging_utils.log(args, values, step_key="rollout/step")


def make_rollout_log_function(
    *, log: Optional[Callable[[Any, int, dict[str, float]], None]] = None
) -> Callable[[int, Any, Any, Any, Any], bool]:
    """slime's ``--custom-rollout-log-function-path`` function, adding the means of the reward components.

    It never replaces slime's logging (returns ``False``). ``log``: how to log
    when slime passes no ``rollout_extra_metrics`` dict (default: slime's own
    ``logging_utils.log`` at ``rollout/step``, imported then).
    """
    write = _slime_log if log is None else log

    def log_rollout(rollout_id: int, args: Any, samples: Any, rollout_extra_metrics: Any, rollout_time: Any) -> bool:
        means = rollout_means(samples or [])
        if means:
            if isinstance(rollout_extra_metrics, dict):
                rollout_extra_metrics.update(means)  # slime's default logging starts from this dict
            else:
                write(args, rollout_id, means)
        return False

    return log_rollout
