"""inspect-ai 0.3.285 itself running the trace scorer (opt-in: ``tests/frameworks/run.sh``; CPU, nothing downloaded).

Each test builds an inspect ``Task`` whose samples carry trace instances in
their ``metadata``, answers them with inspect's own scripted model
(``mockllm/model`` with ``custom_outputs``: a callable of the conversation,
``inspect_ai/model/_providers/mockllm.py`` l.15-24, 51-53), runs ``eval()``
and reads the ``EvalLog`` it returns. What inspect does with the scorer, at
0.3.285:

* it awaits ``scorer(state, target) -> Score`` (``inspect_ai/scorer/_scorer.py``
  l.35-40), which ``@scorer`` requires to be a coroutine function (l.173-179),
  once per sample;
* a dict-valued ``Score`` with a dict of metrics: each key's metrics run over
  that key's values, a NaN value counted in ``unscored_samples`` and left out
  (``inspect_ai/_eval/task/results.py`` l.510-537), one ``EvalScore`` per key
  named after it (l.583-596);
* the scripted output carries a token usage, or mockllm counts tokens with
  tiktoken, which downloads its encoding (``mockllm.py`` l.109-122).

Values are compared exactly with ``score_trace_response`` called directly.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="the opt-in framework layer (inspect-ai 0.3.285): run tests/frameworks/run.sh")

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate

from tests.integrations.helpers import INSTANCES, RESPONSES, instance, reference
from trace_tasks.integrations._common import CHARTED_KEYS
from trace_tasks.integrations.inspect_ai import SCORER_NAME, make_scorer, score_keys
from trace_tasks.integrations.lmms_eval import FIELD_METRICS, REWARD_METRICS, make_process_results

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]


def _run(samples: list[tuple[str, dict[str, Any], str]], scorer: Any, tmp_path: Path, **eval_args: Any) -> Any:
    """``eval()`` of a task of ``(id, metadata, reply)`` samples answered by inspect's scripted model."""
    replies = {f"question {sample_id}": reply for sample_id, _, reply in samples}

    def output(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        out = ModelOutput.from_content(model="mockllm", content=replies[messages[-1].text])
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    dataset = MemoryDataset([Sample(id=sid, input=f"question {sid}", metadata=meta) for sid, meta, _ in samples])
    model = get_model("mockllm/model", custom_outputs=output)
    task = Task(dataset=dataset, solver=generate(), scorer=scorer)
    (log,) = eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", **eval_args)
    return log


def _every_pair() -> list[tuple[str, dict[str, Any], str]]:
    return [(f"i{i}r{j}", inst, reply) for i, inst in enumerate(INSTANCES) for j, reply in enumerate(RESPONSES)]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_every_sample_scored_exactly_and_the_means_reported(tmp_path: Path) -> None:
    samples = _every_pair()
    log = _run(samples, make_scorer(format_weight=0.1), tmp_path)
    assert log.status == "success", log.error
    by_id = {s.id: s for s in log.samples}
    assert len(by_id) == len(samples)
    fields = make_process_results(format_weight=0.1)
    keys = score_keys()
    for sample_id, inst, reply in samples:
        score = by_id[sample_id].scores[SCORER_NAME]
        assert by_id[sample_id].output.completion == reply
        expected = reference(reply, inst, format_weight=0.1)
        assert score.metadata["scores"] == expected  # the scorer's whole result, diagnostics included
        assert list(score.value) == list(keys)
        for key in (*REWARD_METRICS, *CHARTED_KEYS):
            assert score.value[key] == expected[key], (sample_id, key)
        field = fields({"id": sample_id, **inst}, [reply])  # the field metrics, as lmms-eval reports them
        for key in FIELD_METRICS:
            want = math.nan if field[key] is None else field[key]
            assert _same(score.value[key], want), (sample_id, key)
        assert score.value["trace_refused"] == 0.0
    # inspect's means: one EvalScore per key, NaN (type without that metric) left out and counted
    results = {s.name: s for s in log.results.scores}
    assert set(results) == set(keys)
    for key in keys:
        values = [by_id[sid].scores[SCORER_NAME].value[key] for sid, _, _ in samples]
        scored = [v for v in values if not math.isnan(v)]
        assert results[key].scored_samples == len(scored)
        assert results[key].unscored_samples == len(values) - len(scored)
        mean = results[key].metrics["mean"].value
        assert mean == pytest.approx(sum(scored) / len(scored)) if scored else math.isnan(mean)
    assert "stderr" in results["overall"].metrics
    assert results["f1@iou0.5"].scored_samples < len(samples)  # collections only


def test_options_instance_key_and_extra_info(tmp_path: Path) -> None:
    # a mode and weights through the factory; one row switching itself to answer mode; the instance as one JSON field
    options = {"trace_reward_mode": "annotation", "answer_weight": 0.3, "annotation_weight": 0.7, "format_weight": 0.2}
    samples = []
    for i, inst in enumerate(INSTANCES):
        meta: dict[str, Any] = {"instance": json.dumps(inst)}
        if i == 1:
            meta["extra_info"] = {"trace_reward_mode": "answer"}
        samples.append((f"s{i}", meta, RESPONSES[i]))
    log = _run(samples, make_scorer(instance_key="instance", log_keys="all", **options), tmp_path)
    assert log.status == "success", log.error
    by_id = {s.id: s for s in log.samples}
    for i, inst in enumerate(INSTANCES):
        row_options = {**options, "trace_reward_mode": "answer"} if i == 1 else options
        expected = reference(RESPONSES[i], inst, **row_options)
        value = by_id[f"s{i}"].scores[SCORER_NAME].value
        for key, want in expected.items():
            if key in value:
                assert value[key] == want, (i, key)
        assert "answer_parse_ok" in value  # log_keys="all"


def test_metrics_keeps_only_the_keys_named(tmp_path: Path) -> None:
    samples = [("a", INSTANCES[0], RESPONSES[0]), ("b", INSTANCES[1], RESPONSES[1])]
    log = _run(samples, make_scorer(metrics=["overall", "f1@iou0.5"]), tmp_path)
    assert log.status == "success", log.error
    assert [s.name for s in log.results.scores] == ["overall", "f1@iou0.5"]
    assert log.results.scores[1].scored_samples == 1  # the bbox_set sample; the bbox sample has no F1


def _broken() -> dict[str, Any]:
    return instance({"type": "integer", "value": 2}, {"type": "bbox", "value": [10, 10, 10, 40]})  # zero-area target


def test_a_broken_instance_errors_its_sample_with_the_message(tmp_path: Path) -> None:
    samples = [("good", INSTANCES[1], RESPONSES[1]), ("bad-row", _broken(), RESPONSES[1])]
    log = _run(samples, make_scorer(), tmp_path)
    assert log.status == "error"
    # inspect shows the exception's ``message`` attribute (the problems) and its traceback ends with str(exc): the row named
    assert "zero-area box" in log.error.message
    assert "InstanceError: sample id='bad-row' (epoch 1): invalid instance:" in log.error.traceback


def test_on_invalid_zero_finishes_and_counts_the_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    samples = [("good", INSTANCES[1], RESPONSES[1]), ("bad-row", _broken(), RESPONSES[1]), ("no-instance", {}, "")]
    with caplog.at_level(logging.ERROR, logger="trace_tasks.integrations.inspect_ai"):
        log = _run(samples, make_scorer(on_invalid="zero"), tmp_path)
    assert log.status == "success", log.error
    by_id = {s.id: s.scores[SCORER_NAME].value for s in log.samples}
    assert by_id["bad-row"]["overall"] == 0.0 and by_id["bad-row"]["trace_refused"] == 1.0
    assert by_id["no-instance"]["trace_refused"] == 1.0
    assert by_id["good"]["overall"] == reference(RESPONSES[1], INSTANCES[1])["overall"]
    refused = {s.name: s for s in log.results.scores}["trace_refused"]
    assert refused.metrics["mean"].value == pytest.approx(2 / 3)
    assert any("sample id='bad-row'" in r.getMessage() for r in caplog.records)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inspect_ai" / "trace_bbox.py"
#: Scripted replies to the example's three questions (right, partly right, unparseable).
EXAMPLE_REPLIES = {
    "Which option shows the cat": '{"answer": "B", "annotation": [40, 30, 190, 180]}',
    "How many cars": '<think>two</think>{"answer": 2, "annotation": [[10, 10, 60, 50]]}',
    "Is there a dog": "yes, top left",
}


def test_the_worked_example_task_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("trace_bbox_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    def output(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        prompt = messages[-1].text
        reply = next(text for key, text in EXAMPLE_REPLIES.items() if key in prompt)
        out = ModelOutput.from_content(model="mockllm", content=reply)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    (log,) = eval(
        example.trace_bbox(), model=get_model("mockllm/model", custom_outputs=output), log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success", log.error
    assert len(log.samples) == len(EXAMPLE_REPLIES)
    for sample in log.samples:
        meta = sample.metadata
        inst = {k: json.loads(meta[k]) for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size")}
        expected = reference(sample.output.completion, inst, format_weight=0.1)
        assert sample.scores[SCORER_NAME].metadata["scores"] == expected
    assert {s.name: s for s in log.results.scores}["overall"].metrics["mean"].value > 0.0
