"""A realistic, seeded RL batch of trace responses for the benchmarks.

Every annotation type of the resolver table (docs/contracts.md §10) in both output modes; about 1.5 KB of
reasoning prose before the final object (sometimes with stray braces, brackets,
quotes and a fenced code block); the final object bare or fenced; sets of 0 to
20 items whose predictions are jittered, shuffled, with items dropped and extra
items added; the real contracts from ``trace_tasks.resolve_reward_contract``.
The same seed always gives the same batch.
"""

from __future__ import annotations

import json
import random
from typing import Any

from trace_tasks import resolve_reward_contract

ANNOTATION_TYPES = (
    "bbox",
    "bbox_set",
    "bbox_sequence",
    "bbox_map",
    "bbox_set_map",
    "point",
    "point_set",
    "point_sequence",
    "segment",
    "segment_set",
    "point_map",
    "point_set_map",
)
MODES = ("answer", "answer_and_annotation")
ROLE_KEYS = ("source", "target", "input", "output", "outer", "shaded", "left", "right", "start", "end")
WORDS = [
    "the",
    "chart",
    "shows",
    "a",
    "bar",
    "for",
    "each",
    "month",
    "and",
    "the",
    "tallest",
    "one",
    "is",
    "March",
    "so",
    "I",
    "compare",
    "it",
    "with",
    "the",
    "legend",
    "then",
    "count",
    "the",
    "marked",
    "cells",
    "in",
    "the",
    "second",
    "row",
    "while",
    "the",
    "arrow",
    "points",
    "toward",
    "the",
    "larger",
    "circle",
    "because",
    "the",
    "label",
    "near",
    "the",
    "axis",
    "reads",
    "twelve",
    "I",
    "check",
    "the",
    "grid",
    "again",
    "and",
    "the",
    "panel",
    "on",
    "the",
    "left",
    "matches",
    "option",
    "B",
    "although",
    "the",
    "shaded",
    "region",
    "overlaps",
    "the",
    "dotted",
    "line",
    "near",
    "the",
    "top",
    "corner",
]
STRAY = ("{", "}", "[", "]", '"', "{x}", "[1, 2]", "f(x) = {a, b}", '{"note": 1}', "}}")
IMAGE_W, IMAGE_H = 1280.0, 960.0

Item = dict[str, Any]


def _coord(rng: random.Random, hi: float) -> float | int:
    # Models write integers most of the time, sometimes one decimal.
    value = rng.uniform(0.0, hi)
    return round(value) if rng.random() < 0.7 else round(value, 1)


def _box(rng: random.Random) -> list[float]:
    x0, y0 = _coord(rng, IMAGE_W - 60), _coord(rng, IMAGE_H - 60)
    return [x0, y0, x0 + rng.randint(8, 200), y0 + rng.randint(8, 200)]


def _point(rng: random.Random) -> list[float]:
    return [_coord(rng, IMAGE_W), _coord(rng, IMAGE_H)]


def _segment(rng: random.Random) -> list[list[float]]:
    return [_point(rng), _point(rng)]


def _jitter(rng: random.Random, item: Any, px: float) -> Any:
    if isinstance(item[0], list):  # a segment: jitter both ends, sometimes reversed
        ends = [_jitter(rng, end, px) for end in item]
        return ends[::-1] if rng.random() < 0.3 else ends
    out = [round(v + rng.uniform(-px, px), 1) for v in item]
    if len(out) == 4:  # keep boxes non-degenerate
        out[2] = max(out[2], out[0] + 1)
        out[3] = max(out[3], out[1] + 1)
    return out


MAKERS = {"bbox": _box, "point": _point, "segment": _segment}


def _family(annotation_type: str) -> str:
    return annotation_type.split("_")[0]


def _predicted_set(rng: random.Random, items: list[Any], make: Any, shuffle: bool) -> list[Any]:
    pred = [_jitter(rng, it, rng.choice((2.0, 8.0, 30.0))) for it in items if rng.random() > 0.15]
    for _ in range(rng.choice((0, 0, 0, 1, 2))):
        pred.insert(rng.randint(0, len(pred)), make(rng))
    if shuffle:
        rng.shuffle(pred)
    return pred


def _annotation(rng: random.Random, annotation_type: str) -> tuple[Any, Any]:
    """(target, prediction) values for one annotation type."""
    make = MAKERS[_family(annotation_type)]
    shape = annotation_type[len(_family(annotation_type)) :].lstrip("_") or "scalar"
    if shape == "scalar":
        gt = make(rng)
        return gt, _jitter(rng, gt, rng.choice((2.0, 8.0, 30.0)))
    if shape in ("set", "sequence"):
        gt = [make(rng) for _ in range(rng.randint(0, 20))]
        return gt, _predicted_set(rng, gt, make, shuffle=shape == "set")
    keys = rng.sample(ROLE_KEYS, rng.randint(1, 6 if shape == "map" else 4))
    if shape == "map":
        gt = {k: make(rng) for k in keys}
        pred = {k: _jitter(rng, v, 8.0) for k, v in gt.items() if rng.random() > 0.1}
    else:
        gt = {k: [make(rng) for _ in range(rng.randint(0, 8))] for k in keys}
        pred = {k: _predicted_set(rng, v, make, shuffle=True) for k, v in gt.items() if rng.random() > 0.1}
    if rng.random() < 0.1:
        pred[rng.choice([k for k in ROLE_KEYS if k not in gt])] = make(rng) if shape == "map" else [make(rng)]
    return gt, pred


def _answer(rng: random.Random) -> tuple[str, Any, Any]:
    """(answer type, target value, predicted value); about 70% of predictions are right."""
    kind = rng.choice(("integer", "integer", "option_letter", "number", "string", "boolean", "index_list", "matrix"))
    if kind == "integer":
        gt: Any = rng.randint(0, 40)
        wrong: Any = gt + 1
    elif kind == "option_letter":
        gt, wrong = rng.choice("ABCDE"), "Z"
    elif kind == "number":
        gt, wrong = round(rng.uniform(0, 100), 2), -1.5
    elif kind == "string":
        gt, wrong = rng.choice(("red", "Circle", "north east")), "blue"
    elif kind == "boolean":
        gt = rng.random() < 0.5
        wrong = not gt
    elif kind == "index_list":
        gt = rng.sample(range(9), rng.randint(1, 5))
        wrong = [*gt[::-1], 9]
    else:
        gt = [[rng.randint(0, 9) for _ in range(3)] for _ in range(3)]
        wrong = [[0]]
    pred = gt if rng.random() < 0.7 else wrong
    if kind == "integer" and rng.random() < 0.2:
        pred = str(pred)  # '{"answer": "7"}' still matches integer 7
    if kind == "string" and rng.random() < 0.3:
        pred = f"  {str(pred).upper()} "
    return kind, gt, pred


def reasoning_prose(rng: random.Random, target_chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < target_chars:
        word = rng.choice(WORDS)
        if rng.random() < 0.02:
            word = rng.choice(STRAY)
        parts.append(word)
        size += len(word) + 1
    if rng.random() < 0.3:  # a fenced snippet inside the reasoning
        at = rng.randint(0, len(parts))
        parts.insert(at, '\n```python\nboxes = {"a": [1, 2]}\nprint(boxes)\n```\n')
    return " ".join(parts)


def _final(rng: random.Random, payload: dict[str, Any]) -> str:
    """The final object, as models write it: bare, fenced, tagged or occasionally broken."""
    compact = rng.random() < 0.5
    body = json.dumps(payload, separators=(",", ":") if compact else (", ", ": "))
    roll = rng.random()
    if roll < 0.55:
        return body
    if roll < 0.85:
        return f"```json\n{body}\n```"
    if roll < 0.92:
        return f"<answer>{body}</answer>"
    if roll < 0.97:
        return body[: max(1, len(body) - 3)]  # truncated generation
    return body + "\nHope this helps."


def make_item(rng: random.Random, annotation_type: str, mode: str, prose_chars: int = 1500, final: Any = None) -> Item:
    """One scorer call (the keyword arguments of ``score_trace_response``).

    ``final(rng, payload)`` writes the final object (default: the mixed endings of :func:`_final`).
    """
    answer_type, answer_gt, answer_pred = _answer(rng)
    ann_gt, ann_pred = _annotation(rng, annotation_type)
    payload: dict[str, Any] = {"answer": answer_pred}
    if mode != "answer":
        payload["annotation"] = ann_pred
    think = reasoning_prose(rng, prose_chars)
    tagged_think = rng.random() < 0.5  # drawn before the ending: the same seed gives the same batch as ever
    ending = (final or _final)(rng, payload)
    response = f"<think>{think}</think>\n{ending}\n" if tagged_think else f"{think}\n\n{ending}"
    item: Item = {
        "response": response,
        "answer_gt": {"type": answer_type, "value": answer_gt},
        "annotation_gt": {"type": annotation_type, "value": ann_gt},
        "reward_contract": resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict(),
        "trace_reward_mode": mode,
    }
    roll = rng.random()
    if roll < 0.4:
        item["image_size"] = [IMAGE_W, IMAGE_H]
    elif roll < 0.7:
        item["metadata"] = {"source_image_size": {"width": IMAGE_W, "height": IMAGE_H}}
    return item


def make_batch(count: int, seed: int = 20260501) -> list[Item]:
    """``count`` items cycling through every annotation type and both modes."""
    rng = random.Random(seed)
    combos = [(t, m) for t in ANNOTATION_TYPES for m in MODES]
    return [make_item(rng, *combos[i % len(combos)]) for i in range(count)]
