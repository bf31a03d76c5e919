"""lmms-eval task utilities for trace instances (the ``!function utils.NAME`` of trace_bbox.yaml)."""

from __future__ import annotations

import os
from typing import Any

from trace_tasks.integrations.lmms_eval import make_process_results, mean, mean_lower_is_better  # noqa: F401

#: The metrics trace_bbox.yaml's metric_list names: process_results returns these keys only
#: (lmms-eval 0.7.3 reports a returned key the YAML does not list as [] in its results).
METRICS = (
    "overall",
    "answer_reward",
    "annotation_reward",
    "format",
    "answer_accuracy",
    "acc@iou0.5",
    "acc@iou0.75",
    "f1@iou0.5",
    "f1@iou0.75",
    "size_mae",
    "trace_refused",
)
#: The scorer options of the run (the same as a training run's, for comparable numbers).
process_results = make_process_results(format_weight=0.0, metrics=METRICS)

_HERE = os.path.dirname(os.path.abspath(__file__))


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    from PIL import Image  # lmms-eval installs Pillow

    return [Image.open(os.path.join(_HERE, doc["image"])).convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}{kwargs.get('post_prompt', '')}"
