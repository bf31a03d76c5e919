"""Instances and responses shared by the integration tests, and the reference scorer."""

from __future__ import annotations

import json
from typing import Any

from trace_tasks import resolve_reward_contract, score_trace_response


def instance(answer: dict[str, Any], annotation: dict[str, Any], **extra: Any) -> dict[str, Any]:
    contract = resolve_reward_contract(answer_type=answer["type"], annotation_type=annotation["type"]).to_dict()
    return {"answer_gt": answer, "annotation_gt": annotation, "reward_contract": contract, **extra}


INSTANCES: list[dict[str, Any]] = [
    instance({"type": "integer", "value": 2}, {"type": "bbox_set", "value": [[10, 10, 20, 20], [30, 30, 50, 60]]}),
    instance({"type": "option_letter", "value": "B"}, {"type": "bbox", "value": [0, 0, 100, 50]}),
    instance(
        {"type": "string", "value": "cat"},
        {"type": "point_set", "value": [[120, 40], [300, 310]]},
        image_size=[640, 480],
    ),
    instance({"type": "number", "value": 3.5}, {"type": "bbox_map", "value": {"left": [0, 0, 10, 10], "right": [20, 0, 30, 10]}}),
    instance({"type": "integer", "value": 1}, {"type": "segment", "value": [[0, 0], [100, 100]]}, image_size=[200, 200]),
]

#: Model outputs: right, partly right, wrong, unparseable, hostile.
RESPONSES: list[str] = [
    '<think>two boxes</think>{"answer": 2, "annotation": [[10, 10, 20, 20], [30, 30, 50, 61]]}',
    '```json\n{"answer": "B", "annotation": [0, 0, 100, 50]}\n```',
    '{"answer": "cat", "annotation": [[121, 42], [290, 300]]}',
    '{"answer": 3.5, "annotation": {"left": [0, 0, 10, 10]}}',
    '{"answer": 1, "annotation": [[100, 100], [1, 2]]}',
    "I think the answer is 2",
    "",
    '{"answer": ',
    "{" * 5000,
    '{"answer": 2, "annotation": [[1e400, 0, 1, 1]]}',
    "<answer>B</answer>",
]


def reference(response: str, inst: dict[str, Any], **options: Any) -> dict[str, float]:
    """What every adapter must agree with: the scorer called directly."""
    fields = {k: inst[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    return score_trace_response(response=response, image_size=inst.get("image_size"), **fields, **options)


def pairs() -> list[tuple[str, dict[str, Any]]]:
    """Every response against every instance."""
    return [(r, i) for i in INSTANCES for r in RESPONSES]


def as_json(inst: dict[str, Any]) -> str:
    return json.dumps(inst)
