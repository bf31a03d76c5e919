"""lmms-eval 0.7.3 task utilities, driven by copies of lmms-eval's own task-loading and metric code.

lmms-eval is not installed (it pulls torch and the model zoo); the helpers copy
the released wheel (``pip download lmms-eval==0.7.3 --no-deps``):

* ``import_function`` / ``load_yaml``: ``lmms_eval/utils.py`` l.933-956 (``!function`` resolved in the
  YAML's directory) and l.1013-1023 (``yaml.add_constructor`` then ``yaml.full_load``);
* ``aggregation_list``: ``lmms_eval/api/task.py`` l.926-949 (a task with ``process_results``: a metric's
  ``aggregation`` callable is kept as it is);
* ``task_process_results``: ``lmms_eval/api/task.py`` l.1584-1595 (generations stripped, then the
  config's ``process_results(doc, results)``);
* ``collect`` and ``aggregate``: ``lmms_eval/evaluator.py`` l.1393-1394 (``sample_metrics[(metric,
  filter_key)].append(value)``) and ``lmms_eval/evaluator_utils.py`` l.115-123 (``agg_fn(items)`` for
  the metrics the task aggregates);
* ``report``: ``lmms_eval/evaluator_utils.py`` l.436-438 (every collected metric is reported, from a
  ``defaultdict(list)``: one the task does not aggregate shows up as ``[]``).

``tests/trainers/test_harnesses.py`` runs the real lmms-eval 0.7.3 on the sample task
(its CLI with the ``dummy`` model, and ``simple_evaluate``) in the opt-in layer.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from trace_tasks import InstanceError
from trace_tasks.errors import OptionError
from trace_tasks.integrations import lmms_eval
from trace_tasks.integrations._common import REFUSED_KEY
from trace_tasks.runs._metrics import METRICS_KEY, score_batch_with_metrics

from .helpers import INSTANCES, RESPONSES, reference

yaml = pytest.importorskip("yaml")

TASK_DIR = Path(__file__).resolve().parents[2] / "examples" / "lmms_eval" / "trace_bbox"


def import_function(loader: Any, node: Any) -> Any:
    # lmms-eval 0.7.3 lmms_eval/utils.py l.933-956 (the relative-file branch)
    function_name = loader.construct_scalar(node)
    yaml_path = os.path.dirname(loader.name)
    *module_name, function_name = function_name.split(".")
    if isinstance(module_name, list):
        module_name = ".".join(module_name)
    module_path = os.path.normpath(os.path.join(yaml_path, f"{module_name}.py"))
    spec = importlib.util.spec_from_file_location(module_name, module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function_name)


def load_yaml(yaml_path: Path) -> dict[str, Any]:
    # lmms-eval 0.7.3 lmms_eval/utils.py l.1013-1023 (mode="full")
    yaml.add_constructor("!function", import_function)
    with open(yaml_path, "rb") as file:
        return yaml.full_load(file)


def aggregation_list(config: dict[str, Any]) -> dict[str, Any]:
    # lmms-eval 0.7.3 lmms_eval/api/task.py l.926-949 (process_results given, aggregation callable)
    aggregations = {}
    for metric_config in config["metric_list"]:
        assert "metric" in metric_config
        metric_name = metric_config["metric"]
        agg_name = metric_config["aggregation"]
        assert callable(agg_name) and "higher_is_better" in metric_config
        aggregations[metric_name] = metric_config["aggregation"]
    return aggregations


def task_process_results(config: dict[str, Any], doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    # lmms-eval 0.7.3 lmms_eval/api/task.py l.1584-1595 (OUTPUT_TYPE generate_until)
    if isinstance(results, list) and isinstance(results[0], list):
        results = [res.strip() if res is not None else "" for res in results[0]]
    else:
        results = [res.strip() if res is not None else "" for res in results]
    return config["process_results"](doc, results)


def evaluate(config: dict[str, Any], docs: list[dict[str, Any]], generations: list[str]) -> tuple[list[dict], dict]:
    sample_metrics: dict[tuple[str, str], list[Any]] = defaultdict(list)
    per_doc = []
    for doc, generation in zip(docs, generations, strict=True):
        # evaluator.py l.312: task.process_results(doc, [req.filtered_resps[filter_key] for req in requests])
        metrics = task_process_results(config, doc, [generation])
        per_doc.append(metrics)
        for metric, value in metrics.items():  # evaluator.py l.1393-1394
            sample_metrics[(metric, "none")].append(value)
    aggregations = aggregation_list(config)
    agg_metrics: dict[str, Any] = defaultdict(list)  # evaluator_utils.py l.79
    for (metric, filter_key), items in sample_metrics.items():  # evaluator_utils.py l.115-123
        if metric in aggregations:
            agg_metrics[f"{metric},{filter_key}"] = aggregations[metric](items)
    results = {}
    for metric, filter_key in sample_metrics:  # evaluator_utils.py l.436-438
        results[f"{metric},{filter_key}"] = agg_metrics[f"{metric},{filter_key}"]
    return per_doc, results


def _docs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (TASK_DIR / "trace_bbox.jsonl").read_text().splitlines()]


def _item(doc: dict[str, Any], response: str) -> dict[str, Any]:
    fields = {k: json.loads(doc[k]) for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size")}
    return {"response": response, **fields}


GENERATIONS = [
    ' {"answer": "B", "annotation": [40, 30, 190, 180]}\n',
    '{"answer": 2, "annotation": [[10, 10, 60, 50]]}',
    "no idea",
]


def test_the_sample_task_loads_and_reports_rewards_and_field_metrics() -> None:
    config = load_yaml(TASK_DIR / "trace_bbox.yaml")
    docs = _docs()
    per_doc, agg = evaluate(config, docs, GENERATIONS)
    # the CLI's own path (score --summary-json): the same scores and metrics, read from the same trail
    want = score_batch_with_metrics([_item(d, g.strip()) for d, g in zip(docs, GENERATIONS, strict=True)])
    listed = [m["metric"] for m in config["metric_list"]]
    for got, expected in zip(per_doc, want, strict=True):
        assert list(got) == listed  # utils.METRICS: the YAML's metric_list, in its order
        assert {k: got[k] for k in lmms_eval.REWARD_METRICS} == {k: expected[k] for k in lmms_eval.REWARD_METRICS}
        field = {k: v for k, v in expected[METRICS_KEY].items() if k in listed}
        assert {k: v for k, v in got.items() if k in lmms_eval.FIELD_METRICS and v is not None} == field
        assert got[REFUSED_KEY] == 0.0
    assert per_doc[0]["acc@iou0.5"] == 1.0 and per_doc[0]["f1@iou0.5"] is None
    assert per_doc[1]["f1@iou0.5"] == pytest.approx(2 / 3) and per_doc[1]["size_mae"] == 1.0
    assert sorted(agg) == sorted(f"{m},none" for m in listed)  # every reported metric is aggregated
    assert not any(isinstance(v, list) for v in agg.values())
    assert agg["overall,none"] == pytest.approx(sum(d["overall"] for d in per_doc) / 3)
    assert agg["f1@iou0.5,none"] == pytest.approx(2 / 3)  # the one collection document
    assert agg["acc@iou0.5,none"] == pytest.approx(0.5)  # two single-box documents: a hit and a miss
    assert agg["size_mae,none"] == 1.0


def test_rewards_match_the_scorer_on_every_instance_and_response() -> None:
    process = lmms_eval.make_process_results(format_weight=0.1, instance_key="instance")
    for inst in INSTANCES:
        doc = {"id": 7, "instance": json.dumps(inst)}
        for response in RESPONSES:
            got = process(doc, [response])
            expected = reference(response, inst, format_weight=0.1)
            assert {k: got[k] for k in lmms_eval.REWARD_METRICS} == {k: expected[k] for k in lmms_eval.REWARD_METRICS}
            assert got["answer_accuracy"] == expected["accuracy"]


def test_a_broken_document_raises_naming_it_or_is_counted() -> None:
    doc = {**_docs()[0], "annotation_gt": json.dumps({"type": "bbox", "value": [5, 5, 5, 90]})}
    with pytest.raises(InstanceError, match=r"^doc id='q1': invalid instance"):
        lmms_eval.process_results(doc, ["x"])
    got = lmms_eval.make_process_results(on_invalid="zero")(doc, ["x"])
    assert got[REFUSED_KEY] == 1.0 and got["overall"] == 0.0 and list(got) == list(lmms_eval.METRICS)
    assert got["f1@iou0.5"] is None


def test_aggregations_skip_documents_without_the_metric() -> None:
    assert lmms_eval.mean([None, 1.0, 0.0]) == 0.5
    assert math.isnan(lmms_eval.mean([None, None]))
    assert lmms_eval.mean_lower_is_better([2.0, None]) == 2.0


def test_a_returned_metric_the_yaml_does_not_list_is_reported_as_an_empty_list() -> None:
    config = {**load_yaml(TASK_DIR / "trace_bbox.yaml"), "process_results": lmms_eval.make_process_results()}
    _, agg = evaluate(config, _docs(), GENERATIONS)
    assert agg["acc@sim0.5,none"] == [] and agg["f1@sim0.5,none"] == []  # what metrics= avoids
    assert isinstance(agg["overall,none"], float)  # the listed ones are aggregated as before


def test_metrics_picks_the_keys_in_the_order_given() -> None:
    process = lmms_eval.make_process_results(metrics=["f1@iou0.5", "overall"])
    doc = _docs()[1]
    assert list(process(doc, ['{"answer": 2, "annotation": [[10, 10, 60, 50]]}'])) == ["f1@iou0.5", "overall"]
    broken = {**doc, "annotation_gt": json.dumps({"type": "bbox", "value": [5, 5, 5, 90]})}
    refused = lmms_eval.make_process_results(on_invalid="zero", metrics=["overall", REFUSED_KEY])(broken, ["x"])
    assert refused == {"overall": 0.0, REFUSED_KEY: 1.0}
    assert "metrics=['f1@iou0.5', 'overall']" in repr(process)


@pytest.mark.parametrize("metrics", [["iou"], [], ["overall", "overall"], "overall", 3])
def test_metrics_are_checked_when_the_task_loads(metrics: Any) -> None:
    with pytest.raises(OptionError, match="metrics"):
        lmms_eval.make_process_results(metrics=metrics)
