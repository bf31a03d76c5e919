"""ms-swift 4.6 and lmms-eval 0.7.3 themselves calling the trace utilities (opt-in, CPU).

``HARNESSES=1 tests/trainers/run.sh -k harnesses`` installs ``ms-swift==4.6.0`` and
``lmms-eval==0.7.3`` into the trainer environment; without them this module is
skipped. ``tests/integrations/test_swift.py`` and ``test_lmms_eval.py`` replay the
same code, copied with file and line, in the default environment.

* ms-swift: the plugin file through ``swift.utils.import_external_file``, the name
  through ``swift.rlhf_trainers.utils.resolve_reward_funcs`` and the call through
  ``swift.rl_core.grpo_algorithm.compute_rewards_per_func`` (samples need only
  ``messages`` and ``to_reward_row()`` there);
* lmms-eval: the sample task's YAML through ``lmms_eval.utils.load_yaml_config``
  (``!function`` resolved next to the YAML), its ``process_results`` and
  aggregations called the way ``Task.process_results`` and ``TaskOutput`` call them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.cli._metrics import METRICS_KEY, score_batch_with_metrics

pytestmark = [pytest.mark.trainers, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TASK_DIR = ROOT / "examples" / "lmms_eval" / "trace_bbox"


class _Sample:
    def __init__(self, response: str, columns: dict[str, Any]) -> None:
        self.messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": response}]
        self.columns = columns

    def to_reward_row(self) -> dict[str, Any]:
        return {"messages": self.messages, **self.columns}


def test_swift_loads_and_calls_the_plugin(tmp_path: Path) -> None:
    pytest.importorskip("swift.rewards", reason="ms-swift 4.6: HARNESSES=1 tests/trainers/run.sh")
    import torch
    from swift.rewards import ORM, orms
    from swift.rl_core.grpo_algorithm import compute_rewards_per_func
    from swift.rlhf_trainers.utils import resolve_reward_funcs
    from swift.utils import import_external_file

    plugin = tmp_path / "trace_plugin.py"
    plugin.write_text('from trace_tasks.integrations.swift import register\nregister("trace_opt_in", format_weight=0.1)\n')
    import_external_file(str(plugin))
    assert issubclass(orms["trace_opt_in"], ORM)
    funcs, _names = resolve_reward_funcs(["trace_opt_in"])
    docs = [json.loads(line) for line in (TASK_DIR / "trace_bbox.jsonl").read_text().splitlines()]
    fields = ("answer_gt", "annotation_gt", "reward_contract", "image_size")
    response = '{"answer": "B", "annotation": [40, 30, 190, 180]}'
    samples = [_Sample(response, {k: doc[k] for k in fields}) for doc in docs]
    rewards = compute_rewards_per_func(samples, funcs, [None], device=torch.device("cpu"))
    items = [{"response": response, **{k: json.loads(doc[k]) for k in fields}} for doc in docs]
    want = [row["overall"] for row in score_batch_with_metrics(items, format_weight=0.1)]
    assert rewards[:, 0].tolist() == pytest.approx(want)


def test_lmms_eval_loads_the_sample_task_and_aggregates() -> None:
    pytest.importorskip("lmms_eval", reason="lmms-eval 0.7.3: HARNESSES=1 tests/trainers/run.sh")
    from lmms_eval.utils import load_yaml_config

    config = load_yaml_config(str(TASK_DIR / "trace_bbox.yaml"))
    docs = [json.loads(line) for line in (TASK_DIR / "trace_bbox.jsonl").read_text().splitlines()]
    generation = '{"answer": 2, "annotation": [[10, 10, 60, 50]]}'
    per_doc = [config["process_results"](doc, [generation]) for doc in docs]
    fields = ("answer_gt", "annotation_gt", "reward_contract", "image_size")
    want = score_batch_with_metrics([{"response": generation, **{k: json.loads(d[k]) for k in fields}} for d in docs])
    for got, expected in zip(per_doc, want, strict=True):
        assert got["overall"] == expected["overall"]
        assert {k: v for k, v in got.items() if k in expected[METRICS_KEY]} == expected[METRICS_KEY]
    for metric in config["metric_list"]:
        value = metric["aggregation"]([doc[metric["metric"]] for doc in per_doc])
        assert isinstance(value, float)
