"""A real TRL ``GRPOTrainer``, 2 steps on CPU, scoring with the trace reward functions.

Opt-in (``tests/trainers/run.sh`` builds the environment: torch, TRL,
transformers, datasets, accelerate). The default environment has no TRL, and
this module is skipped there, with the reason saying how to run it.

Each variant checks, against the scorer called directly on the completions TRL
handed in:

* the rewards our function returned, and TRL's own ``rewards/<name>/mean``;
* the ``trace/*`` metrics in ``trainer.state.log_history`` (finite, one per
  logged step, equal to the per-completion means of that step's call);
* the columns TRL passed (the instance columns, ``log_metric``, ``log_extra``).
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip("trl", reason="the opt-in trainer layer (TRL, torch): run tests/trainers/run.sh")

from trace_tasks import score_trace_response
from trace_tasks.integrations.trl import (
    ROWS_METRIC,
    completion_text,
    make_async_reward_func,
    make_component_reward_funcs,
    make_reward_func,
    metric_keys,
)

from . import tiny

pytestmark = [pytest.mark.trainers, pytest.mark.slow]

INSTANCE_COLUMNS = ("answer_gt", "annotation_gt", "reward_contract")
#: What TRL must pass besides the dataset columns for the adapter to log.
CALLBACKS = ("log_metric", "log_extra")


class Recorder:
    """Wraps a reward function, keeping what TRL passed and what the function returned, call by call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def _keep(self, completions: Any, kwargs: dict[str, Any], out: list[Optional[float]]) -> None:
        self.calls.append(
            {
                "completions": list(completions),
                "kwargs": set(kwargs),
                "columns": {name: list(kwargs[name]) for name in INSTANCE_COLUMNS if name in kwargs},
                "rewards": list(out),
            }
        )

    def wrap(self, func: Any) -> Any:
        """A function TRL sees as ``func`` (same name; async stays async)."""
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def spy_async(*, completions: Any, **kwargs: Any) -> list[Optional[float]]:
                out = await func(completions=completions, **kwargs)
                self._keep(completions, kwargs, out)
                return out

            return spy_async

        @functools.wraps(func)
        def spy(*, completions: Any, **kwargs: Any) -> list[Optional[float]]:
            out = func(completions=completions, **kwargs)
            self._keep(completions, kwargs, out)
            return out

        return spy


def reference(call: dict[str, Any], i: int, **options: Any) -> Optional[dict[str, float]]:
    """The scorer called directly on row ``i`` of a recorded call (``None`` for a row without an instance)."""
    fields = {name: call["columns"][name][i] for name in INSTANCE_COLUMNS}
    if all(v is None for v in fields.values()):
        return None
    decoded = {name: json.loads(v) for name, v in fields.items()}
    return score_trace_response(response=completion_text(call["completions"][i]), **decoded, **options)


def expected_metrics(call: dict[str, Any], **options: Any) -> dict[str, float]:
    """What the adapter logs for one call: per-completion means (a row without an instance counts 0)."""
    refs = [reference(call, i, **options) for i in range(len(call["completions"]))]
    n = len(refs)
    scored = [r for r in refs if r is not None]
    out = {f"trace/{key}": sum(r[key] for r in scored) / n for key in metric_keys()}
    out[ROWS_METRIC] = len(scored) / n
    return out


def train(reward_funcs: list[Any], data: Any, tmp_path: Path, **config: Any) -> Any:
    from trl import GRPOTrainer

    tok = tiny.tokenizer()
    trainer = GRPOTrainer(
        model=tiny.model(len(tok)),
        reward_funcs=reward_funcs,
        args=tiny.grpo_args(str(tmp_path), **config),
        train_dataset=data,
        processing_class=tok,
    )
    trainer.train()
    return trainer


def logged_steps(trainer: Any) -> list[dict[str, float]]:
    """The per-step log entries (the final summary entry has ``train_runtime`` and no metrics)."""
    return [entry for entry in trainer.state.log_history if "train_runtime" not in entry]


def check_trace_run(trainer: Any, recorder: Recorder, component: str = "overall", **options: Any) -> None:
    """Rewards equal the scorer's; the logged ``trace/*`` values equal the means of each step's call."""
    steps = logged_steps(trainer)
    assert len(steps) == trainer.args.max_steps == len(recorder.calls), (len(steps), len(recorder.calls))
    for call in recorder.calls:
        assert set(INSTANCE_COLUMNS) | set(CALLBACKS) <= call["kwargs"], sorted(call["kwargs"])
        refs = [reference(call, i, **options) for i in range(len(call["completions"]))]
        assert call["rewards"] == [None if r is None else r[component] for r in refs]
    for entry, call in zip(steps, recorder.calls, strict=True):
        assert math.isfinite(entry["loss"]), entry
        for name, value in expected_metrics(call, **options).items():
            assert math.isfinite(entry[name]), (name, entry)
            assert entry[name] == pytest.approx(value, abs=1e-6), (name, entry[name], value)


def test_standard_completions(tmp_path: Path) -> None:
    recorder = Recorder()
    func = recorder.wrap(make_reward_func(format_weight=0.1))
    trainer = train([func], tiny.dataset(tiny.TRACE_ROWS, repeat=4), tmp_path)
    check_trace_run(trainer, recorder, format_weight=0.1)
    assert all(isinstance(c, str) for call in recorder.calls for c in call["completions"])
    for entry, call in zip(logged_steps(trainer), recorder.calls, strict=True):
        assert entry[ROWS_METRIC] == 1.0
        # TRL charts our rewards under the function's name.
        assert entry["rewards/trace_overall/mean"] == pytest.approx(sum(call["rewards"]) / len(call["rewards"]), abs=1e-6)


def test_conversational_completions_async(tmp_path: Path) -> None:
    recorder = Recorder()
    func = recorder.wrap(make_async_reward_func(format_weight=0.1))
    trainer = train([func], tiny.dataset(tiny.TRACE_ROWS, conversational=True, repeat=4), tmp_path)
    check_trace_run(trainer, recorder, format_weight=0.1)
    for call in recorder.calls:
        for completion in call["completions"]:
            assert isinstance(completion, list)
            assert completion[-1]["role"] == "assistant"


def test_component_reward_funcs(tmp_path: Path) -> None:
    recorders = [Recorder() for _ in range(3)]
    funcs = [r.wrap(f) for r, f in zip(recorders, make_component_reward_funcs(), strict=True)]
    trainer = train(funcs, tiny.dataset(tiny.TRACE_ROWS, repeat=4), tmp_path, reward_weights=[0.5, 0.4, 0.1])
    for recorder, component in zip(recorders, ("answer_reward", "annotation_reward", "format"), strict=True):
        check_trace_run(trainer, recorder, component)
    for entry, calls in zip(logged_steps(trainer), zip(*(r.calls for r in recorders), strict=True), strict=True):
        for name, call in zip(("trace_answer", "trace_annotation", "trace_format"), calls, strict=True):
            assert entry[f"rewards/{name}/mean"] == pytest.approx(sum(call["rewards"]) / len(call["rewards"]), abs=1e-6)


def test_mixed_dataset(tmp_path: Path) -> None:
    recorder = Recorder()
    func = recorder.wrap(make_reward_func())
    # Two trace rows to one other row: with shuffling, a step may hold either kind only.
    data = tiny.dataset([*tiny.TRACE_ROWS, tiny.OTHER_ROW], repeat=4)
    trainer = train([func, tiny.other_task_reward], data, tmp_path)
    check_trace_run(trainer, recorder)
    rows = [r for call in recorder.calls for r in call["rewards"]]
    assert None in rows and any(r is not None for r in rows), rows  # both kinds of row were trained on
    for entry in logged_steps(trainer):
        assert 0.0 <= entry[ROWS_METRIC] <= 1.0


TWO_PROCESS_TIMEOUT_S = 600


def test_two_processes_one_without_trace_rows(tmp_path: Path) -> None:
    """2 processes (gloo on CPU) where rank 1's batches hold no trace row: the run finishes.

    TRL 1.0-1.13 gather once per metric name a process logged; a process that
    logged fewer names would wait in a collective call forever. The timeout
    turns such a hang into a failure.
    """
    script = Path(__file__).with_name("two_process.py")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script), str(tmp_path)]
    # A session of its own, so that a hung run's workers (torchrun's children) are killed with it.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TWO_PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the 2-process run did not finish in {TWO_PROCESS_TIMEOUT_S} s (hung):\n{out[-4000:]}\n{err[-4000:]}")
    assert proc.returncode == 0, out[-4000:] + err[-4000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    # Rank 0 scored trace rows only, rank 1 none: the case that used to hang.
    assert ranks[0]["rows_seen"] and all(r is not None for r in ranks[0]["rows_seen"])
    assert ranks[1]["rows_seen"] and all(r is None for r in ranks[1]["rows_seen"])
    for rank in ranks:
        assert rank["steps"] == 2
        for entry in rank["log_history"]:
            if "train_runtime" in entry:
                continue
            # TRL averages each name across processes: rank 1 logged 0.0 for every name, never NaN.
            assert entry[ROWS_METRIC] == pytest.approx(0.5)
            for key in metric_keys():
                assert math.isfinite(entry[f"trace/{key}"]), (key, entry)
