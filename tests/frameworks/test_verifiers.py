"""verifiers 0.4.0 itself scoring with the trace reward and metrics (opt-in: ``tests/frameworks/run.sh``; CPU, no model).

verifiers 0.4.0 ships only ``verifiers.v1`` (its ``Rubric`` is gone; the 0.3
``Rubric`` is replayed in ``tests/integrations/test_verifiers_rubric.py``).
Each test builds a ``vf.Task`` with the trace functions, a ``Trace`` holding the
model's reply as a sampled assistant message (what a rollout leaves,
``verifiers/v1/rollout.py`` l.120-131) and awaits verifiers' own
``Task.score(trace)`` (``verifiers/v1/task.py`` l.213-285), which:

* calls every ``@vf.reward``/``@vf.metric`` method and every function plugged
  through ``TaskConfig.rewards``/``metrics`` (``verifiers/v1/configs/task.py``
  l.46-51, loaded by ``verifiers/v1/utils/loaders.py`` l.236-271) with the
  arguments it declares by name, ``task`` and ``trace`` (l.227;
  ``verifiers/v1/utils/decorators.py`` l.29-38);
* records a metric's mapping key by key in ``trace.metrics`` and a reward's
  float with its weight in ``trace.rewards`` (``task.py`` l.257-273), summed
  into ``trace.reward`` (``verifiers/v1/trace.py`` l.472-474);
* wraps an exception in ``TaskError("task <name> scoring: <type>: <message>")``
  (``task.py`` l.231, ``verifiers/v1/errors.py`` l.81-95).

The reply is read as ``trace.last_reply`` (``trace.py`` l.648-654). Values are
compared exactly with ``score_trace_response``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip("verifiers.v1", reason="the opt-in framework layer (verifiers 0.4.0): run tests/frameworks/run.sh")

import verifiers.v1 as vf
from verifiers.v1.configs.agent import AgentConfig
from verifiers.v1.configs.task import DecoratedFunctionConfig, RewardFunctionConfig
from verifiers.v1.errors import TaskError
from verifiers.v1.graph import MessageNode
from verifiers.v1.trace import AgentInfo, TraceTask

from tests.integrations.helpers import INSTANCES, RESPONSES, instance, reference
from trace_tasks.integrations._common import CHARTED_KEYS, stable_keys
from trace_tasks.integrations.verifiers import make_reward, make_reward_and_metrics

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]

OPTIONS = {"format_weight": 0.1}
trace_reward, trace_metrics = make_reward_and_metrics(**OPTIONS)


class BoxData(vf.TaskData):
    instance: str  # the trace instance as a JSON string, as a dataset column holds it


class BoxTask(vf.Task[BoxData]):
    @vf.reward(weight=1.0)
    async def trace(self, trace: vf.Trace) -> float:
        return await trace_reward(self.data, trace)

    @vf.metric
    async def trace_parts(self, trace: vf.Trace) -> dict[str, float]:
        return await trace_metrics(self.data, trace)


def _trace(task: vf.Task[Any], reply: str) -> vf.Trace:
    trace = vf.Trace(task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=AgentConfig()))
    trace.nodes.append(MessageNode(message=vf.UserMessage(content="question")))
    trace.nodes.append(MessageNode(parent=0, message=vf.AssistantMessage(content=reply), sampled=True))
    return trace


def _score(task: vf.Task[Any], reply: str) -> vf.Trace:
    trace = _trace(task, reply)
    asyncio.run(task.score(trace))
    return trace


def test_every_reply_scored_exactly_reward_and_metrics() -> None:
    for i, inst in enumerate(INSTANCES):
        task = BoxTask(BoxData(id=f"row{i}", instance=json.dumps(inst)))
        for reply in RESPONSES:
            trace = _score(task, reply)
            assert trace.last_reply == reply.strip()
            expected = reference(trace.last_reply, inst, **OPTIONS)
            assert trace.rewards["trace"] is not None
            assert trace.rewards["trace"].score == expected["overall"]
            assert trace.reward == expected["overall"]  # the metrics are recorded, not summed
            assert trace.metrics == {f"trace/{key}": expected[key] for key in CHARTED_KEYS}


def test_plugged_functions_through_the_task_config(tmp_path: Path) -> None:
    # the two-line rewards file of docs/integrations.md, plugged by path (loaders.py l.215-233)
    module = tmp_path / "my_rewards.py"
    module.write_text(
        "from trace_tasks.integrations.verifiers import make_metrics, make_reward\n"
        "trace_reward = make_reward(trace_reward_mode='answer')\n"
        "trace_metrics = make_metrics(trace_reward_mode='answer', log_keys='all')\n"
    )
    config = vf.TaskConfig(
        rewards={"trace": RewardFunctionConfig(fn=f"{module}:trace_reward", weight=2.0)},
        metrics={"trace_parts": DecoratedFunctionConfig(fn=f"{module}:trace_metrics")},
    )
    task: vf.Task[BoxData] = vf.Task(BoxData(id="plugged", instance=json.dumps(INSTANCES[2])), config)
    trace = _score(task, RESPONSES[2])
    expected = reference(RESPONSES[2], INSTANCES[2], trace_reward_mode="answer")
    assert trace.rewards["trace"] is not None
    assert (trace.rewards["trace"].score, trace.rewards["trace"].weight) == (expected["overall"], 2.0)
    assert trace.metrics == {f"trace/{key}": expected[key] for key in stable_keys()}


class FieldData(vf.TaskData):
    answer_gt: dict[str, Any]
    annotation_gt: dict[str, Any]
    reward_contract: dict[str, Any]
    image_size: Optional[list[int]] = None
    extra_info: Optional[dict[str, Any]] = None


field_reward = make_reward(instance_key=None, trace_reward_mode="annotation", format_weight=0.2)


class FieldTask(vf.Task[FieldData]):
    @vf.reward
    async def trace(self, trace: vf.Trace) -> float:
        return await field_reward(self.data, trace)


def test_instance_fields_on_the_task_options_and_extra_info() -> None:
    for i, inst in enumerate(INSTANCES):
        extra = {"trace_reward_mode": "answer"} if i == 3 else None
        task = FieldTask(FieldData(id=f"f{i}", extra_info=extra, **inst))
        trace = _score(task, RESPONSES[i])
        options: dict[str, Any] = {"trace_reward_mode": "annotation", "format_weight": 0.2}
        if extra:
            options.update(extra)
        assert trace.rewards["trace"] is not None
        assert trace.rewards["trace"].score == reference(RESPONSES[i], inst, **options)["overall"]


def test_a_broken_instance_raises_naming_the_task() -> None:
    broken = instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})
    task = BoxTask(BoxData(id="broken-row", instance=json.dumps(broken)))
    with pytest.raises(TaskError, match=r"task BoxTask scoring: InstanceError: task id='broken-row': invalid instance"):
        _score(task, RESPONSES[1])
