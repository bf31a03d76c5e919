"""Score a handful of instances and print the main reward fields.

Run from a checkout: ``pip install uv && uv run python examples/score_examples.py``.
Contracts come from the builder (``resolve_reward_contract``), never by hand.
"""

from __future__ import annotations

from trace_tasks import resolve_reward_contract, score_trace_response

CASES = [
    (
        "integer + bbox, answer mode",
        "answer",
        {"type": "integer", "value": 7},
        {"type": "bbox", "value": [10, 20, 30, 40]},
        '{"answer":7}',
        {},
    ),
    (
        "integer + bbox, IoU 1/3",
        "answer_and_annotation",
        {"type": "integer", "value": 2},
        {"type": "bbox", "value": [0, 0, 10, 10]},
        '{"answer":2,"annotation":[5,0,15,10]}',
        {},
    ),
    (
        "count + bbox_set, one box missing",
        "answer_and_annotation",
        {"type": "integer", "value": 2},
        {"type": "bbox_set", "value": [[0, 0, 10, 10], [20, 20, 30, 30]]},
        'I see two squares.\n```json\n{"answer": 2, "annotation": [[0, 0, 10, 10]]}\n```',
        {},
    ),
    (
        "option + point_map on a 640x480 image",
        "answer_and_annotation",
        {"type": "option_letter", "value": "B"},
        {"type": "point_map", "value": {"source": [100, 200], "target": [320, 420]}},
        '<think>source is left</think>{"answer": "b", "annotation": {"source": [110, 200], "target": [320, 400]}}',
        {"image_size": [640, 480]},
    ),
    (
        "segment reversed endpoints",
        "answer_and_annotation",
        {"type": "string", "value": "diagonal"},
        {"type": "segment", "value": [[0, 0], [100, 100]]},
        '{"answer": "Diagonal", "annotation": [[100, 100], [0, 0]]}',
        {},
    ),
    (
        "wrong answer gates the annotation",
        "answer_and_annotation",
        {"type": "integer", "value": 3},
        {"type": "point_set", "value": [[10, 10], [50, 50], [90, 90]]},
        '{"answer": 2, "annotation": [[10, 10], [50, 50]]}',
        {},
    ),
    (
        "unparseable output",
        "answer_and_annotation",
        {"type": "integer", "value": 3},
        {"type": "bbox", "value": [0, 0, 10, 10]},
        "The answer is probably {three",
        {},
    ),
]

FIELDS = ("overall", "answer_reward", "annotation_reward", "format", "json_found", "annotation_parse_ok")


def main() -> None:
    print(f"{'case':42} " + " ".join(f"{f:>19}" for f in FIELDS))
    for name, mode, answer_gt, annotation_gt, response, extra in CASES:
        contract = resolve_reward_contract(answer_type=answer_gt["type"], annotation_type=annotation_gt["type"])
        result = score_trace_response(
            response=response,
            answer_gt=answer_gt,
            annotation_gt=annotation_gt,
            reward_contract=contract.to_dict(),
            trace_reward_mode=mode,
            **extra,
        )
        print(f"{name:42} " + " ".join(f"{result[f]:19.4f}" for f in FIELDS))


if __name__ == "__main__":
    main()
