"""An inspect-ai task scoring a vision-language model's answers and boxes against trace instances.

    pip install inspect-ai trace-core trace-plugins-bbox       # inspect-ai 0.3.285, Python >= 3.11
    inspect eval examples/inspect_ai/trace_bbox.py --model openai/gpt-4o-mini
    inspect eval examples/inspect_ai/trace_bbox.py --model mockllm/model    # a smoke run, no model (scores 0)

Each line of trace_bbox.jsonl is a document: the question, the image path (images/)
and the instance fields ``answer_gt``, ``annotation_gt``, ``reward_contract`` and
``image_size`` (JSON strings), kept whole in the sample's metadata, where the
scorer reads them. ``inspect view`` then shows, per key, the mean over the
samples: the rewards, the charted flags and the field metrics (``acc@iou0.5``
over the single boxes, ``f1@iou0.5`` over the sets, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample, json_dataset
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
from inspect_ai.solver import generate, system_message

from trace_tasks.integrations.inspect_ai import make_scorer

HERE = Path(__file__).resolve().parent

SYSTEM = (
    "Answer the question about the image, then locate what it asks about. Reply with one JSON object, "
    'nothing after it: {"answer": ..., "annotation": ...}; boxes are [x1, y1, x2, y2] in pixels.'
)


def record_to_sample(record: dict[str, Any]) -> Sample:
    image = str(HERE / record["image"])
    return Sample(
        id=record["id"],
        input=[ChatMessageUser(content=[ContentImage(image=image), ContentText(text=record["question"])])],
        target=record["answer_gt"],
        metadata=record,  # the instance fields travel whole; the scorer reads them here
    )


@task
def trace_bbox(format_weight: float = 0.1) -> Task:
    return Task(
        dataset=json_dataset(str(HERE / "trace_bbox.jsonl"), sample_fields=record_to_sample),
        solver=[system_message(SYSTEM), generate()],
        scorer=make_scorer(format_weight=format_weight),
    )
