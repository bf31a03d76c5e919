"""slime custom reward models, driven the way slime calls them (copied from THUDM/slime at ``624b824``).

slime is not on PyPI (the ``slime`` there is an unrelated statistics package),
and it needs torch, Megatron and SGLang; the code below is copied from the
repository at commit ``624b824a898ab0ec1fcb4d373004c7f3852bf515`` (2026-08-21):

* ``slime/utils/misc.py`` l.39-47 ``load_function``: ``--custom-rm-path
  module.attr`` imported by its dotted path;
* ``slime/rollout/rm_hub/__init__.py`` l.55-63 ``async_rm``: ``await
  rm(args, sample, **kwargs)`` per sample; l.99-107 ``batched_async_rm``: ``await
  rm(args, samples, **kwargs)`` for a group (``--group-rm``), one reward per sample;
* ``slime/rollout/sglang_rollout.py`` l.277-287, 330-334: the reward assigned to
  ``sample.reward``, awaited with no ``try``;
* ``slime/utils/types.py`` l.93-142 ``Sample`` (the fields used here) and
  l.246-247 ``get_reward_value``: ``sample.reward[args.reward_key]`` with
  ``--reward-key``;
* ``slime/observability/rollout_metrics.py`` l.256-271 ``log_rollout_data``: the
  custom log function first (it returns whether to skip the default), then
  the default logging starting from ``rollout_extra_metrics``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import sys
from argparse import Namespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest

from trace_tasks import InstanceError
from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, strip_special_tokens
from trace_tasks.integrations.slime import LOG_PREFIX, make_rm, make_rollout_log_function

from .helpers import INSTANCES, RESPONSES, instance, pairs, reference


@dataclass
class Sample:
    """slime/utils/types.py l.93-142: the fields a reward model reads and writes."""

    group_index: Optional[int] = None
    index: Optional[int] = None
    prompt: Any = ""
    response: str = ""
    label: Optional[str] = None
    reward: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    custom_rm_path: Optional[str] = None

    def get_reward_value(self, args: Any) -> Any:
        """types.py l.246-247."""
        return self.reward if not args.reward_key else self.reward[args.reward_key]


def load_function(path: str) -> Any:
    """slime/utils/misc.py l.39-47."""
    module_path, _, attr = path.rpartition(".")
    module = importlib.import_module(module_path)
    return getattr(module, attr)


async def async_rm(args: Any, sample: Sample, **kwargs: Any) -> Any:
    """rm_hub/__init__.py l.55-63."""
    if sample.custom_rm_path:
        rm_function = load_function(sample.custom_rm_path)
        return await rm_function(args, sample, **kwargs)
    if args.custom_rm_path is not None:
        rm_function = load_function(args.custom_rm_path)
        return await rm_function(args, sample, **kwargs)
    raise NotImplementedError("Rule-based RM type is not specified.")


async def batched_async_rm(args: Any, samples: list[Sample], **kwargs: Any) -> list[Any]:
    """rm_hub/__init__.py l.99-107 (the custom batch path)."""
    rm_function = load_function(args.custom_rm_path)
    result: list[Any] = await rm_function(args, samples, **kwargs)
    return result


@pytest.fixture
def rm_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The reward file of docs/integrations.md, importable as ``trace_rm``."""
    (tmp_path / "trace_rm.py").write_text(
        "from trace_tasks.integrations.slime import make_batch_rm, make_rm, make_rollout_log_function\n"
        "rm = make_rm(format_weight=0.1)\n"
        "batch_rm = make_batch_rm(format_weight=0.1)\n"
        "float_rm = make_rm(returns='float', trace_reward_mode='answer')\n"
        "log_rollout = make_rollout_log_function()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("trace_rm", None)
    return "trace_rm"


def _sample(i: int, reply: str, inst: Any, **extra: Any) -> Sample:
    label = inst if isinstance(inst, str) else json.dumps(inst)
    return Sample(index=i, prompt="q", response=reply + "<|im_end|>", label=label, **extra)


def test_every_pair_per_sample_dict_reward_exact(rm_module: str) -> None:
    args = Namespace(custom_rm_path=f"{rm_module}.rm", reward_key="overall")
    for i, (reply, inst) in enumerate(pairs()):
        sample = _sample(i, reply, inst)
        sample.reward = asyncio.run(async_rm(args, sample))  # sglang_rollout.py l.287
        expected = reference(strip_special_tokens(sample.response), inst, format_weight=0.1)
        assert sample.get_reward_value(args) == expected["overall"]
        assert sample.reward == {**{k: expected[k] for k in ("overall", *CHARTED_KEYS)}, REFUSED_KEY: 0.0}


def test_group_rm_and_the_float_form(rm_module: str) -> None:
    args = Namespace(custom_rm_path=f"{rm_module}.batch_rm", reward_key="overall")
    group = [_sample(i, reply, INSTANCES[1]) for i, reply in enumerate(RESPONSES)]
    rewards = asyncio.run(batched_async_rm(args, group))  # sglang_rollout.py l.330-334
    assert len(rewards) == len(group)
    for sample, reward in zip(group, rewards, strict=True):
        assert reward["overall"] == reference(strip_special_tokens(sample.response), INSTANCES[1], format_weight=0.1)["overall"]
    args = Namespace(custom_rm_path=f"{rm_module}.float_rm", reward_key=None)
    for i, inst in enumerate(INSTANCES):
        sample = _sample(i, RESPONSES[i], inst)
        sample.reward = asyncio.run(async_rm(args, sample))
        assert sample.get_reward_value(args) == reference(RESPONSES[i], inst, trace_reward_mode="answer")["overall"]


def test_instance_in_metadata_and_per_row_options() -> None:
    rm = make_rm(instance_key="instance", log_keys="all", answer_weight=0.3, annotation_weight=0.7)
    args = Namespace(custom_rm_path=None, reward_key="overall")
    for i, inst in enumerate(INSTANCES):
        metadata: dict[str, Any] = {"instance": inst}
        options: dict[str, Any] = {"answer_weight": 0.3, "annotation_weight": 0.7}
        if i == 4:
            metadata["trace_reward_mode"] = "annotation"
            options["trace_reward_mode"] = "annotation"
        sample = Sample(index=i, response=RESPONSES[i], metadata=metadata)
        reward = asyncio.run(rm(args, sample))
        expected = reference(RESPONSES[i], inst, **options)
        assert reward["overall"] == expected["overall"]
        assert reward["answer_parse_ok"] == expected["answer_parse_ok"]  # log_keys="all"


BROKEN = instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})


def test_a_broken_label_stops_the_rollout_naming_the_sample(rm_module: str) -> None:
    args = Namespace(custom_rm_path=f"{rm_module}.rm", reward_key="overall")
    with pytest.raises(InstanceError, match=r"sample index=12: invalid instance"):
        asyncio.run(async_rm(args, _sample(12, RESPONSES[1], BROKEN)))
    args = Namespace(custom_rm_path=f"{rm_module}.batch_rm", reward_key="overall")
    with pytest.raises(ValueError, match=r"sample index=3 is a string but not JSON"):
        asyncio.run(batched_async_rm(args, [_sample(2, "", INSTANCES[0]), _sample(3, "", "not json")]))


def test_on_invalid_zero_logs_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    rm = make_rm(on_invalid="zero")
    with caplog.at_level(logging.ERROR, logger="trace_tasks.integrations.slime"):
        reward = asyncio.run(rm(Namespace(), _sample(5, RESPONSES[1], BROKEN)))
    assert reward == {**dict.fromkeys(("overall", *CHARTED_KEYS), 0.0), REFUSED_KEY: 1.0}
    assert any("sample index=5" in r.getMessage() for r in caplog.records)


def log_rollout_data(
    rollout_id: int, args: Any, samples: list[Any], rollout_extra_metrics: Any, logged: list[dict[str, Any]]
) -> None:
    """rollout_metrics.py l.256-271, with logging_utils.log recording what it was given."""
    if args.custom_rollout_log_function_path is not None:
        custom_log_func = load_function(args.custom_rollout_log_function_path)
        if custom_log_func(rollout_id, args, samples, rollout_extra_metrics, 1.0):
            return
    log_dict = {**(rollout_extra_metrics or {})}
    log_dict["rollout/step"] = rollout_id
    logged.append(log_dict)


def test_the_rollout_log_function_adds_the_component_means(rm_module: str) -> None:
    args = Namespace(
        custom_rm_path=f"{rm_module}.rm", reward_key="overall", custom_rollout_log_function_path=f"{rm_module}.log_rollout"
    )
    samples = [_sample(i, RESPONSES[i], inst) for i, inst in enumerate(INSTANCES)]
    for sample in samples:
        sample.reward = asyncio.run(async_rm(args, sample))
    logged: list[dict[str, Any]] = []
    log_rollout_data(3, args, samples, {"rollout/extra": 1.0}, logged)
    (entry,) = logged
    assert entry["rollout/extra"] == 1.0 and entry["rollout/step"] == 3
    for key in ("overall", *CHARTED_KEYS, REFUSED_KEY):
        values = [s.reward[key] for s in samples]
        assert entry[f"{LOG_PREFIX}{key}"] == pytest.approx(sum(values) / len(values))
    # slime passes no metrics dict: the function logs the means itself, and slime's logging goes on
    written: list[tuple[int, dict[str, float]]] = []
    log_fn = make_rollout_log_function(log=lambda a, rollout_id, values: written.append((rollout_id, values)))
    assert log_fn(4, args, [samples], None, 1.0) is False  # groups of samples are flattened
    ((rollout_id, values),) = written
    assert rollout_id == 4 and values[f"{LOG_PREFIX}overall"] == entry[f"{LOG_PREFIX}overall"]
