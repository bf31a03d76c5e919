"""TRL adapter, driven the way ``GRPOTrainer`` calls reward functions and flushes what they log.

The helpers copy TRL's code (cited by file and line of the released wheels),
without torch or accelerate; a "process" is a :class:`Process` with TRL's
pending dicts, and collective calls are recorded so that two processes can be
compared call for call:

* TRL 1.16.0 (current): ``trl/trainer/grpo_trainer.py`` ``_calculate_rewards``
  (l.1579-1670) and the flush of ``log_metric`` / ``log_extra`` (l.2839-2855),
  which gathers the union of names first;
* TRL 1.9.0 (1.0-1.13 behave alike): the same call (l.1612-1690) and a flush
  that gathers once per name the process itself logged (l.2759-2774), where two
  processes that logged different names make different collective calls and
  hang the run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections import defaultdict
from typing import Any

import pytest

from trace_tasks.integrations._common import CHARTED_KEYS, stable_keys
from trace_tasks.integrations.trl import (
    EXTRA_COLUMNS,
    ROWS_METRIC,
    completion_text,
    make_async_reward_func,
    make_component_reward_funcs,
    make_reward_func,
    metric_keys,
)

from .helpers import INSTANCES, as_json, pairs, reference


def is_async_callable(func: Any) -> bool:
    # TRL 1.16.0 trl/trainer/utils.py l.247-258
    import functools

    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(func.__call__)


class Process:
    """One training process's side of GRPOTrainer: its pending logs and the collective calls it makes."""

    def __init__(self) -> None:
        self.pending_metrics: dict[str, list[float]] = defaultdict(list)
        self.pending_extra: dict[str, list[Any]] = defaultdict(list)
        self.collectives: list[str] = []

    def log_metric(self, name: str, value: float) -> None:
        self.pending_metrics[name].append(value)  # TRL 1.16.0 grpo_trainer.py l.1565-1576

    def log_extra(self, column: str, values: list[Any]) -> None:
        self.pending_extra[column].extend(values)  # TRL 1.16.0 grpo_trainer.py l.1553-1563

    def calculate_rewards(
        self, reward_funcs: list[Any], rows: list[tuple[str, dict | None]], *, json_columns: bool = False
    ) -> list[list[float]]:
        """TRL 1.16.0 grpo_trainer.py l.1579-1670 for a string-completion dataset (TRL 1.9.0 l.1612-1690 alike)."""
        enc = json.dumps if json_columns else (lambda v: v)
        inputs = [
            {
                "prompt": "Q?",
                "answer_gt": None if i is None else enc(i["answer_gt"]),
                "annotation_gt": None if i is None else enc(i["annotation_gt"]),
                "reward_contract": None if i is None else enc(i["reward_contract"]),
                "image_size": None if i is None else i.get("image_size"),
                "image": "img.png",  # an unrelated dataset column
            }
            for _, i in rows
        ]
        prompts = [x["prompt"] for x in inputs]
        completions = [r for r, _ in rows]
        completion_ids_list = [[1, 2, 3] for _ in rows]
        keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]  # l.1584
        reward_kwargs: dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
        reward_kwargs["trainer_state"] = object()
        reward_kwargs["log_extra"] = self.log_extra
        reward_kwargs["log_metric"] = self.log_metric
        columns: list[list[float]] = []
        async_funcs = []
        for index, reward_func in enumerate(reward_funcs):
            columns.append([])
            if is_async_callable(reward_func):  # l.1621
                async_funcs.append((index, reward_func))
                continue
            output = reward_func(prompts=prompts, completions=completions, completion_ids=completion_ids_list, **reward_kwargs)
            columns[index] = [r if r is not None else math.nan for r in output]  # l.1629-1630
        if async_funcs:  # l.1640-1663: asyncio.gather on TRL's loop

            async def run() -> list[tuple[int, list[Any]]]:
                async def invoke(index: int, func: Any) -> tuple[int, list[Any]]:
                    out = await func(
                        prompts=prompts, completions=completions, completion_ids=completion_ids_list, **reward_kwargs
                    )
                    return index, [r if r is not None else math.nan for r in out]

                return await asyncio.gather(*(invoke(i, f) for i, f in async_funcs))

            for index, output in asyncio.run(run()):
                columns[index] = output
        return columns


def flush_1_16(processes: list[Process]) -> dict[str, float]:
    """TRL 1.16.0 grpo_trainer.py l.2850-2855: the union of names, then sum and count gathered per name."""
    names = sorted(set().union(*(list(p.pending_metrics) for p in processes)))  # gather_object(list(...))
    out = {}
    for name in names:
        stats = [(sum(p.pending_metrics.get(name, [])), len(p.pending_metrics.get(name, []))) for p in processes]
        total, count = sum(s for s, _ in stats), sum(c for _, c in stats)
        out[name] = total / count
    for p in processes:
        p.pending_metrics.clear()
    return out


def flush_1_9(processes: list[Process]) -> dict[str, float]:
    """TRL 1.9.0 grpo_trainer.py l.2769-2774: each process gathers once per name it logged, in sorted order.

    ``accelerator.gather`` is a collective call: every process must make the
    same sequence, or the run hangs. The sequences are recorded and compared.
    """
    for p in processes:
        p.collectives = [f"gather:{name}" for name in sorted(p.pending_metrics)]
    sequences = {tuple(p.collectives) for p in processes}
    assert len(sequences) == 1, f"the processes make different collective calls (TRL 1.0-1.13 hang): {sequences}"
    out = {}
    for name in sorted(processes[0].pending_metrics):
        local_means = [sum(p.pending_metrics[name]) / len(p.pending_metrics[name]) for p in processes]
        out[name] = sum(local_means) / len(local_means)  # gather(...).mean()
    for p in processes:
        p.pending_metrics.clear()
    return out


def flush_extra_1_9(processes: list[Process]) -> dict[str, list[Any]]:
    # TRL 1.9.0 grpo_trainer.py l.2762-2764: one gather_object per column each process logged
    sequences = {tuple(sorted(p.pending_extra)) for p in processes}
    assert len(sequences) == 1, f"different log_extra columns per process (TRL 1.0-1.13 hang): {sequences}"
    out = {column: [v for p in processes for v in p.pending_extra[column]] for column in sorted(processes[0].pending_extra)}
    for p in processes:
        p.pending_extra.clear()
    return out


@pytest.mark.parametrize("json_columns", [False, True])
def test_overall_equals_scorer_through_calculate_rewards(json_columns: bool) -> None:
    rows = pairs()
    process = Process()
    func = make_reward_func()
    (got,) = process.calculate_rewards([func], rows, json_columns=json_columns)
    expected = [reference(r, i) for r, i in rows]
    assert got == [e["overall"] for e in expected]
    assert func.__name__ == "trace_overall"
    logged = flush_1_16([process])
    assert list(logged) == sorted([*(f"trace/{k}" for k in CHARTED_KEYS), ROWS_METRIC])
    assert logged[ROWS_METRIC] == 1.0
    for key in CHARTED_KEYS:
        assert logged[f"trace/{key}"] == pytest.approx(sum(e[key] for e in expected) / len(expected))


def test_metrics_describe_the_model_output() -> None:
    # Garbage completions: nothing found, nothing parsed. "charted" leaves out answer_parse_ok (a ground-truth
    # flag); "all" is every always-present key, answer_parse_ok included (issue 40: the docs say "every").
    inst = INSTANCES[0]
    rows: list[tuple[str, dict | None]] = [("no idea", inst), ("{" * 50, inst), ("", inst)]
    process = Process()
    process.calculate_rewards([make_reward_func(log_keys="all")], rows)
    logged = flush_1_16([process])
    assert logged["trace/answer_parse_ok"] == 1.0  # a validated instance's answer always parses
    assert logged["trace/json_found"] == 0.0 and logged["trace/annotation_parse_ok"] == 0.0
    assert logged["trace/format_structure_ok"] == 0.0 and logged["trace/overall"] == 0.0
    assert "trace/annotation_type_bbox_set" in logged
    assert metric_keys("all") == stable_keys() and "answer_parse_ok" not in metric_keys("charted")


def _mixed_processes(funcs_per_process: list[list[Any]]) -> tuple[list[Process], list[list[tuple[str, dict | None]]]]:
    """Two processes of a mixed-task run: the first has trace rows, the second none (another task's prompts)."""
    trace_rows: list[tuple[str, dict | None]] = [(r, i) for r, i in pairs()[:8]]
    other_rows: list[tuple[str, dict | None]] = [("The capital is Paris.", None)] * 8
    processes = [Process(), Process()]
    batches = [trace_rows, other_rows]
    for process, funcs, batch in zip(processes, funcs_per_process, batches, strict=True):
        process.calculate_rewards(funcs, batch)
    return processes, batches


def test_two_processes_log_the_same_names_in_trl_1_9() -> None:
    processes, batches = _mixed_processes([[make_reward_func()], [make_reward_func()]])
    logged = flush_1_9(processes)  # asserts identical collective calls: no hang
    extra = flush_extra_1_9(processes)
    assert all(not math.isnan(v) for v in logged.values())
    # Per-completion values: trace/<key> / trace/rows is the exact mean over the trace rows of both processes.
    expected = [reference(r, i) for r, i in batches[0] if i is not None]
    assert logged[ROWS_METRIC] == pytest.approx(0.5)
    for key in CHARTED_KEYS:
        assert logged[f"trace/{key}"] / logged[ROWS_METRIC] == pytest.approx(sum(e[key] for e in expected) / len(expected))
    assert list(extra) == sorted(f"trace/{c}" for c in EXTRA_COLUMNS)
    assert extra["trace/overall"][:8] == [e["overall"] for e in expected] and extra["trace/overall"][8:] == [None] * 8


def test_two_processes_exact_in_trl_1_16() -> None:
    processes, batches = _mixed_processes([[make_reward_func()], [make_reward_func()]])
    logged = flush_1_16(processes)
    expected = [reference(r, i) for r, i in batches[0] if i is not None]
    for key in CHARTED_KEYS:
        assert logged[f"trace/{key}"] / logged[ROWS_METRIC] == pytest.approx(sum(e[key] for e in expected) / len(expected))


def test_logging_can_be_turned_off() -> None:
    process = Process()
    process.calculate_rewards([make_reward_func(log_metrics=False, log_extra=False)], pairs()[:4])
    assert not process.pending_metrics and not process.pending_extra
    process.calculate_rewards([make_reward_func(log_extra=False)], pairs()[:4])
    assert process.pending_metrics and not process.pending_extra


def test_component_functions_score_once_and_log_once() -> None:
    rows = pairs()
    funcs = make_component_reward_funcs(format_weight=0.1)
    assert [f.__name__ for f in funcs] == ["trace_answer", "trace_annotation", "trace_format"]
    process = Process()
    got = process.calculate_rewards(funcs, rows)
    expected = [reference(r, i, format_weight=0.1) for r, i in rows]
    for column, key in zip(got, ["answer_reward", "annotation_reward", "format"], strict=True):
        assert column == [e[key] for e in expected]
    # One value per metric and one value per completion per column: only the first function logs.
    assert {len(v) for v in process.pending_metrics.values()} == {1}
    assert {len(v) for v in process.pending_extra.values()} == {len(rows)}


def test_component_functions_reuse_one_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_tasks.integrations import trl

    calls: list[int] = []
    real = trl._score_batch

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(trl, "_score_batch", counting)
    process = Process()
    process.calculate_rewards(make_component_reward_funcs(), pairs()[:6])
    assert len(calls) == 1
    process.calculate_rewards(make_component_reward_funcs(), pairs()[6:12])  # a new batch is scored again
    assert len(calls) == 2


@pytest.mark.parametrize("asynchronous", [False, True])
def test_async_functions_run_on_trls_async_path(asynchronous: bool) -> None:
    rows = pairs()
    funcs = [*make_component_reward_funcs(asynchronous=asynchronous), make_async_reward_func(name="trace_async")]
    assert all(is_async_callable(f) == (asynchronous or f.__name__ == "trace_async") for f in funcs)
    assert inspect.iscoroutinefunction(funcs[-1])  # TRL 1.9.0 l.1654 detects it with inspect.iscoroutinefunction
    process = Process()
    got = process.calculate_rewards(funcs, rows)
    expected = [reference(r, i) for r, i in rows]
    assert got[0] == [e["answer_reward"] for e in expected]
    assert got[3] == [e["overall"] for e in expected]


def test_rows_without_an_instance_are_not_applicable() -> None:
    (response, inst) = pairs()[0]
    process = Process()
    (got,) = process.calculate_rewards([make_reward_func()], [(response, inst), (response, None)])
    assert got[0] == reference(response, inst)["overall"] and math.isnan(got[1])


def test_positional_call_and_no_log_callbacks() -> None:
    (response, inst) = pairs()[0]
    func = make_reward_func("annotation_reward", trace_reward_mode="answer")
    got = func(
        ["Q?"],
        [response],
        answer_gt=[inst["answer_gt"]],
        annotation_gt=[inst["annotation_gt"]],
        reward_contract=[inst["reward_contract"]],
    )
    assert got == [reference(response, inst, trace_reward_mode="answer")["annotation_reward"]]


def test_conversational_completions() -> None:
    (response, inst) = pairs()[1]
    func = make_reward_func()
    got = func(
        prompts=[[{"role": "user", "content": "Q?"}]],
        completions=[[{"role": "assistant", "content": response}]],
        answer_gt=[as_json(inst["answer_gt"])],
        annotation_gt=[as_json(inst["annotation_gt"])],
        reward_contract=[as_json(inst["reward_contract"])],
    )
    assert got == [reference(response, inst)["overall"]]


def test_conversation_text_extraction() -> None:
    assert completion_text([{"role": "user", "content": "x"}]) == ""
    parts = [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
    assert completion_text([{"role": "assistant", "content": parts}]) == "ab"
    assert completion_text([{"role": "assistant", "content": "first"}, {"role": "assistant", "content": "last"}]) == "last"
    assert completion_text([{"role": "assistant", "content": None}]) == ""


def test_caller_mistakes_raise() -> None:
    with pytest.raises(ValueError, match="unknown component"):
        make_reward_func("nonsense")
    with pytest.raises(ValueError, match="unknown scorer option"):
        make_reward_func(answer_wieght=1.0)
    with pytest.raises(ValueError, match="answer_weight"):
        make_reward_func(answer_weight=-1)
    with pytest.raises(ValueError, match="log_keys"):
        make_reward_func(log_keys="everything")
    with pytest.raises(ValueError, match="log_metrics"):
        make_async_reward_func(log_metrics="yes")  # type: ignore[arg-type]
    func = make_reward_func()
    with pytest.raises(ValueError, match="lacks the column"):
        func(prompts=["q"], completions=["a"], answer_gt=[INSTANCES[0]["answer_gt"]])
    inst = INSTANCES[0]
    with pytest.raises(ValueError, match="position 0 in this call"):
        func(
            prompts=["q"],
            completions=["a"],
            answer_gt=[inst["answer_gt"]],
            annotation_gt=[None],
            reward_contract=[inst["reward_contract"]],
        )
    with pytest.raises(ValueError, match="values for 2 completions"):
        func(
            prompts=["q", "q"],
            completions=["a", "b"],
            answer_gt=[inst["answer_gt"]],
            annotation_gt=[inst["annotation_gt"]],
            reward_contract=[inst["reward_contract"]],
        )


def test_a_batch_changed_in_place_is_scored_again() -> None:
    (right, inst), (wrong, _) = pairs()[0], pairs()[5]
    func = make_reward_func()
    completions = [right]
    columns = {k: [inst[k]] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    first = func(prompts=["q"], completions=completions, **columns)
    completions[0] = wrong  # the same list object, new content
    assert func(prompts=["q"], completions=completions, **columns) == [reference(wrong, inst)["overall"]] != first
