"""ms-swift 4.6.0 and lmms-eval 0.7.3 themselves calling the trace utilities (opt-in, CPU, nothing downloaded).

``HARNESSES=1 tests/trainers/run.sh`` builds ``.venv-trainers-harnesses/`` (ms-swift 4.6.0
pins ``trl<1.0`` and ``transformers<5.20``, so it cannot share TRL 1.16.0's
``.venv-trainers/``) and runs this module there; elsewhere it is skipped.
``tests/integrations/test_swift.py`` and ``test_lmms_eval.py`` replay the same
code, copied with file and line, in the default environment. Lines below are
those of the installed releases.

ms-swift:

* ``swift rlhf --rlhf_type grpo`` for 2 steps on CPU with a tiny Llama saved
  locally: ``--external_plugins`` (``swift/arguments/base_args/base_args.py``
  l.170-183, then ``swift/utils/utils.py`` l.409-429), ``--reward_funcs`` looked up
  in ``orms`` (``swift/rlhf_trainers/grpo_trainer.py`` l.2215-2228), the call
  (``swift/rl_core/grpo_algorithm.py`` l.46-67) and the per-function metric
  ``rewards/<name>/mean`` (``grpo_trainer.py`` l.2232-2237 and l.429,
  ``swift/rl_core/advantage.py`` l.466-474). The plugin file is the documented
  two lines after a recorder of what swift passed and got back;
* in process: ``import_external_file``, ``resolve_reward_funcs``
  (``swift/rlhf_trainers/utils.py`` l.2289-2294, the Megatron trainers' lookup)
  and ``compute_rewards_per_func`` on samples that need only ``messages`` and
  ``to_reward_row()``.

lmms-eval:

* the ``lmms-eval`` command (``lmms_eval.cli.dispatch:main``) on
  ``examples/lmms_eval/trace_bbox`` through ``--include_path``, with lmms-eval's own
  ``dummy`` model (``lmms_eval/models/simple/dummy.py``: one fixed response), and
  the results and samples files it writes;
* ``TaskManager(include_path=...)`` and ``lmms_eval.evaluator.simple_evaluate``
  with a model answering each document differently and loading its image through
  the task's ``doc_to_visual``, as lmms-eval's models do: ``Task.process_results``
  (``lmms_eval/api/task.py`` l.1583-1595: 5 attempts, generations stripped) and
  the aggregation (``lmms_eval/evaluator_utils.py`` l.115-123, reported at
  l.436-438);
* a broken instance: ``RetryError`` after 5 attempts, caused by ``InstanceError``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from trace_tasks import InstanceError, score_trace_response
from trace_tasks.runs._metrics import METRICS_KEY, score_batch_with_metrics

pytestmark = [pytest.mark.trainers, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TASK_DIR = ROOT / "examples" / "lmms_eval" / "trace_bbox"
FIELDS = ("answer_gt", "annotation_gt", "reward_contract")
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_DISABLED": "true",
    "WANDB_MODE": "disabled",
    "TOKENIZERS_PARALLELISM": "false",
    "CUDA_VISIBLE_DEVICES": "",
}


def _swift() -> None:
    pytest.importorskip("swift.rewards", reason="ms-swift 4.6.0: HARNESSES=1 tests/trainers/run.sh")


def _lmms_eval() -> None:
    pytest.importorskip("lmms_eval", reason="lmms-eval 0.7.3: HARNESSES=1 tests/trainers/run.sh")


def _run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        argv, cwd=cwd, env={**os.environ, **OFFLINE, **env}, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, f"{argv[0]} exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    return proc


# ---------------------------------------------------------------------------------------------- ms-swift

#: Before the documented two lines: keep every call swift makes (completions, instance columns, rewards).
RECORDER = """\
import json, os
import trace_tasks.integrations.swift as _trace_swift
_score = _trace_swift.score_completions
def _recorded(completions, columns, options, component="overall"):
    out = _score(completions, columns, options, component)
    keep = {k: list(columns[k]) for k in ("answer_gt", "annotation_gt", "reward_contract") if k in columns}
    with open(os.environ["TRACE_SWIFT_RECORD"], "a") as f:
        f.write(json.dumps({"component": component, "completions": list(completions), "columns": keep, "rewards": out}) + "\\n")
    return out
_trace_swift.score_completions = _recorded
"""


def _swift_reference(call: dict[str, Any], i: int, **options: Any) -> Optional[dict[str, Any]]:
    fields = {name: call["columns"][name][i] for name in FIELDS}
    if all(v is None for v in fields.values()):
        return None
    decoded = {name: json.loads(v) for name, v in fields.items()}
    return score_trace_response(response=call["completions"][i], **decoded, **options)


def _swift_grpo(tmp_path: Path, plugin: str, reward_args: list[str], rows: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """``swift rlhf --rlhf_type grpo`` for 2 steps; (the recorded calls, the logged steps)."""
    from . import tiny

    model_dir = tmp_path / "tiny"
    tok = tiny.tokenizer()
    tiny.model(len(tok)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = tmp_path / "data.jsonl"
    with data.open("w") as f:
        for row in rows * 4:
            question = {"messages": [{"role": "user", "content": row["question"]}]}
            f.write(json.dumps({**question, **{k: row[k] for k in FIELDS}}) + "\n")
    (tmp_path / "trace_plugin.py").write_text(RECORDER + plugin)
    record = tmp_path / "calls.jsonl"
    swift = shutil.which("swift", path=str(Path(sys.executable).parent))
    assert swift is not None
    # The documented command, shrunk: a local tiny model, 2 steps, 2 completions per prompt.
    argv = [swift, "rlhf", "--rlhf_type", "grpo", "--model", str(model_dir), "--model_type", "llama", "--template", "default"]
    argv += ["--dataset", str(data), "--external_plugins", "trace_plugin.py", *reward_args]
    argv += ["--num_generations", "2", "--per_device_train_batch_size", "2", "--max_completion_length", "4"]
    argv += ["--max_steps", "2", "--logging_steps", "1", "--save_strategy", "no", "--report_to", "none"]
    argv += ["--output_dir", str(tmp_path / "out"), "--torch_dtype", "float32", "--tuner_type", "full"]
    argv += ["--dataloader_num_workers", "0", "--dataset_num_proc", "1", "--seed", "0"]
    _run(argv, cwd=tmp_path, TRACE_SWIFT_RECORD=str(record))
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    (log,) = (tmp_path / "out").glob("*/logging.jsonl")
    steps = [entry for entry in map(json.loads, log.read_text().splitlines()) if "loss" in entry]
    return calls, steps


def _nanmean(values: list[Optional[float]]) -> float:
    kept = [v for v in values if v is not None]
    return math.fsum(kept) / len(kept) if kept else math.nan


def test_swift_rlhf_grpo_loads_the_plugin_and_logs_its_rewards(tmp_path: Path) -> None:
    _swift()
    from . import tiny

    plugin = 'from trace_tasks.integrations.swift import register\nregister("trace", format_weight=0.1)\n'
    calls, steps = _swift_grpo(tmp_path, plugin, ["--reward_funcs", "trace"], tiny.TRACE_ROWS)
    assert len(calls) == len(steps) == 2  # one call per step, 2 prompts x 2 completions each
    for call, step in zip(calls, steps, strict=True):
        assert len(call["completions"]) == 2 and all(isinstance(c, str) for c in call["completions"])
        want = [_swift_reference(call, i, format_weight=0.1) for i in range(2)]
        assert call["rewards"] == [w["overall"] for w in want if w is not None]
        # swift's own metric, under the registered name (float32 in swift)
        assert step["rewards/trace/mean"] == pytest.approx(_nanmean(call["rewards"]), abs=1e-6)
        assert step["reward"] == pytest.approx(_nanmean(call["rewards"]), abs=1e-6)
        assert math.isfinite(step["loss"])


def test_swift_rlhf_grpo_components_and_a_mixed_dataset(tmp_path: Path) -> None:
    _swift()
    from . import tiny

    plugin = "from trace_tasks.integrations.swift import register\n" + "".join(
        f'register("trace_{short}", component="{component}")\n'
        for short, component in (("answer", "answer_reward"), ("annotation", "annotation_reward"), ("format", "format"))
    )
    names = ["trace_answer", "trace_annotation", "trace_format"]
    rewards = ["--reward_funcs", *names, "--reward_weights", "0.5", "0.4", "0.1"]
    calls, steps = _swift_grpo(tmp_path, plugin, rewards, [tiny.TRACE_ROWS[0], tiny.OTHER_ROW])
    assert [c["component"] for c in calls] == ["answer_reward", "annotation_reward", "format"] * 2
    seen_other = False
    for step_index, step in enumerate(steps):
        for name, call in zip(names, calls[3 * step_index : 3 * step_index + 3], strict=True):
            want = [_swift_reference(call, i) for i in range(len(call["completions"]))]
            assert call["rewards"] == [None if w is None else w[call["component"]] for w in want]
            seen_other |= None in call["rewards"]
            if all(r is None for r in call["rewards"]):
                assert f"rewards/{name}/mean" not in step or math.isnan(step[f"rewards/{name}/mean"])
            else:  # swift averages the rows that have a value (NaN is its "not applicable")
                assert step[f"rewards/{name}/mean"] == pytest.approx(_nanmean(call["rewards"]), abs=1e-6)
        assert math.isfinite(step["loss"])
    assert seen_other  # the other task's row reached the reward functions and got None


def test_swift_in_process_lookup_and_reward_call(tmp_path: Path) -> None:
    _swift()
    import torch
    from swift.rewards import ORM, orms
    from swift.rl_core.grpo_algorithm import compute_rewards_per_func
    from swift.rlhf_trainers.utils import resolve_reward_funcs
    from swift.utils import import_external_file

    class Sample:
        def __init__(self, response: str, columns: dict[str, Any]) -> None:
            self.messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": response}]
            self.columns = columns

        def to_reward_row(self) -> dict[str, Any]:
            return {"messages": self.messages, **self.columns}

    plugin = tmp_path / "trace_plugin.py"
    plugin.write_text('from trace_tasks.integrations.swift import register\nregister("trace_opt_in", format_weight=0.1)\n')
    import_external_file(str(plugin))
    assert issubclass(orms["trace_opt_in"], ORM) and orms["trace_opt_in"].__name__ == "trace_opt_in"
    funcs, names = resolve_reward_funcs(["trace_opt_in"])
    assert names == ["trace_opt_in"]
    docs = [json.loads(line) for line in (TASK_DIR / "trace_bbox.jsonl").read_text().splitlines()]
    fields = (*FIELDS, "image_size")
    response = '{"answer": "B", "annotation": [40, 30, 190, 180]}'
    samples = [Sample(response, {k: doc[k] for k in fields}) for doc in docs]
    samples.append(Sample(response, {"solution": "42"}))  # a row without the instance columns
    got = compute_rewards_per_func(samples, funcs, [None], device=torch.device("cpu"))
    items = [{"response": response, **{k: json.loads(doc[k]) for k in fields}} for doc in docs]
    want = [row["overall"] for row in score_batch_with_metrics(items, format_weight=0.1)]
    assert got[:3, 0].tolist() == pytest.approx(want) and math.isnan(got[3, 0].item())


# ---------------------------------------------------------------------------------------------- lmms-eval


def _docs(task_dir: Path = TASK_DIR) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (task_dir / "trace_bbox.jsonl").read_text().splitlines()]


def _listed_metrics() -> list[str]:
    from lmms_eval.utils import load_yaml_config

    return [m["metric"] for m in load_yaml_config(str(TASK_DIR / "trace_bbox.yaml"))["metric_list"]]


def _expected(docs: list[dict[str, Any]], generations: list[str]) -> list[dict[str, Optional[float]]]:
    """Per document, the sample task's metrics as ``trace-tasks score --summary-json`` computes them."""
    from trace_tasks.integrations.lmms_eval import FIELD_METRICS, REWARD_METRICS

    items = [
        {"response": g.strip(), **{k: json.loads(d[k]) for k in (*FIELDS, "image_size")}}
        for d, g in zip(docs, generations, strict=True)
    ]
    rows = score_batch_with_metrics(items, format_weight=0.0)  # utils.py's options
    out = []
    for row in rows:
        values: dict[str, Optional[float]] = {k: row[k] for k in REWARD_METRICS}
        values.update({k: row[METRICS_KEY].get(k) for k in FIELD_METRICS})
        values["trace_refused"] = 0.0
        out.append(values)
    return out


def _generation(sample: dict[str, Any]) -> Any:
    """A logged sample's (filtered) generation: a string in the samples file, a one-item list in memory."""
    resps = sample["filtered_resps"]
    return resps[0] if isinstance(resps, list) and len(resps) == 1 else resps


def _check_results(results: dict[str, Any], samples: list[dict[str, Any]], want: list[dict[str, Optional[float]]]) -> None:
    listed = _listed_metrics()
    reported = {key.split(",")[0] for key in results if "," in key and "_stderr" not in key}
    assert reported == set(listed)  # every returned key is listed: no [] in the results
    assert all(not isinstance(results[f"{m},none"], list) for m in listed)
    for metric in listed:
        assert results[f"{metric},none"] == pytest.approx(_nanmean([w[metric] for w in want]), nan_ok=True), metric
    by_doc = sorted(samples, key=lambda s: s["doc_id"])
    assert [{m: s[m] for m in listed} for s in by_doc] == [{m: w[m] for m in listed} for w in want]


def test_lmms_eval_cli_runs_the_sample_task_with_its_dummy_model(tmp_path: Path) -> None:
    _lmms_eval()
    response = '{"answer": "B", "annotation": [40, 30, 190, 180]}'
    lmms_eval_bin = shutil.which("lmms-eval", path=str(Path(sys.executable).parent))
    assert lmms_eval_bin is not None
    # The command of trace_bbox.yaml's header, from another directory (data_files resolve next to the YAML).
    argv = [lmms_eval_bin, "--model", "dummy", "--model_args", f"response={response}", "--tasks", "trace_bbox"]
    argv += ["--include_path", str(TASK_DIR), "--output_path", str(tmp_path / "out"), "--log_samples"]
    proc = _run(argv, cwd=tmp_path)
    assert "|trace_bbox|" in proc.stdout and "f1@iou0.5" in proc.stdout  # lmms-eval's table
    (results_file,) = (tmp_path / "out").rglob("*_results.json")
    (samples_file,) = (tmp_path / "out").rglob("*_samples_trace_bbox.jsonl")
    results = json.loads(results_file.read_text())
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    docs = _docs()
    assert [_generation(s) for s in sorted(samples, key=lambda s: s["doc_id"])] == [response] * len(docs)
    _check_results(results["results"]["trace_bbox"], samples, _expected(docs, [response] * len(docs)))
    assert results["results"]["trace_bbox"]["overall,none"] > 0


class _Model:
    """Builds an lmms-eval model (``lmms`` subclass) answering by question, loading images as models do."""

    @staticmethod
    def make(answers: dict[str, str]) -> Any:
        from lmms_eval.api.model import lmms

        class Scripted(lmms):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                self.images: list[Any] = []

            def generate_until(self, requests: list[Any]) -> list[str]:
                out = []
                for context, _gen_kwargs, doc_to_visual, doc_id, task, split in [r.args for r in requests]:
                    doc = self.task_dict[task][split][doc_id]  # as lmms_eval/models/simple/*.py do
                    self.images.extend(doc_to_visual(doc))
                    (question,) = [q for q in answers if q in context]
                    out.append(answers[question])
                return out

            def loglikelihood(self, requests: list[Any]) -> list[Any]:
                raise NotImplementedError

            def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
                raise NotImplementedError

        return Scripted()


def _simple_evaluate(task_dir: Path, model: Any) -> dict[str, Any]:
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(task_dir), include_defaults=False)
    assert manager.all_tasks == ["trace_bbox"]
    result: dict[str, Any] = simple_evaluate(model=model, tasks=["trace_bbox"], task_manager=manager, log_samples=True)
    return result


GENERATIONS = {
    "Which option shows the cat": ' {"answer": "B", "annotation": [40, 30, 190, 180]}\n',
    "How many cars": '{"answer": 2, "annotation": [[10, 10, 60, 50], [100, 20, 150, 80]]}',
    "Is there a dog": "no idea",
}


def test_lmms_eval_evaluator_scores_each_document() -> None:
    _lmms_eval()
    model = _Model.make(GENERATIONS)
    out = _simple_evaluate(TASK_DIR, model)
    docs = _docs()
    assert [im.size for im in model.images] == [tuple(json.loads(d["image_size"])) for d in docs]  # doc_to_visual
    generations = [next(g for q, g in GENERATIONS.items() if d["question"].startswith(q)) for d in docs]
    want = _expected(docs, generations)
    samples = out["samples"]["trace_bbox"]
    assert [_generation(s) for s in sorted(samples, key=lambda s: s["doc_id"])] == generations  # as the model said it
    _check_results(out["results"]["trace_bbox"], samples, want)
    results = out["results"]["trace_bbox"]
    assert results["acc@iou0.5,none"] == 0.5  # the two single-box documents: a hit and a miss
    assert results["f1@iou0.5,none"] == 1.0 and results["size_mae,none"] == 0.0  # the collection document
    assert out["higher_is_better"]["trace_bbox"]["size_mae"] is False


def test_lmms_eval_stops_on_a_broken_instance_after_its_retries(tmp_path: Path) -> None:
    _lmms_eval()
    import tenacity

    task_dir = tmp_path / "trace_bbox"
    shutil.copytree(TASK_DIR, task_dir)
    docs = _docs()
    docs[0]["annotation_gt"] = json.dumps({"type": "bbox", "value": [5, 5, 5, 90]})  # zero width
    (task_dir / "trace_bbox.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    with pytest.raises(tenacity.RetryError) as info:  # Task.process_results: 5 attempts, 2 s apart
        _simple_evaluate(task_dir, _Model.make(GENERATIONS))
    cause = info.value.last_attempt.exception()
    assert isinstance(cause, InstanceError) and str(cause).startswith("doc id='q1': invalid instance")
