"""Validation's shortcut for the plain record (``_validation._plain_record``) against the checks it stands for.

When the shortcut vouches for a record, the type, contract and structure
checks must find nothing and fill the parts as it does; so ``check`` must give
the same problems and parts with the shortcut and without it, on every record:
the benchmark's, and records aimed at each of its conditions (exact types,
the fields a record class allows, the contract the pair is written with, the
sizes and the metadata keys).
"""

from __future__ import annotations

import copy
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.core.reward_contracts import resolve_reward_contract
from trace_tasks.data import TraceInstance, TrainInstance
from trace_tasks.data import _validation as validation
from trace_tasks.plugins import get_registry

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workload import ANNOTATION_TYPES, make_item  # type: ignore[import-not-found]


class Text(str):
    """A str subclass that says it equals anything (the shortcut must not take its word)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def base() -> dict[str, Any]:
    return {
        "answer_gt": {"type": "integer", "value": 3},
        "annotation_gt": {"type": "bbox", "value": [1, 2, 30, 40]},
        "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict(),
    }


def records() -> list[Any]:
    found: list[Any] = [base(), {**base(), "id": "a", "prompt": "p", "image": "x.png"}, {**base(), "image_size": [640, 480]}]
    changes = [
        lambda r: r.update(id=5),
        lambda r: r.update(prompt=None),
        lambda r: r.update(image=["x"]),
        lambda r: r.update(unknown=1),
        lambda r: r.update(image_size=[640, 480.5]),
        lambda r: r.update(image_size=(640, 480)),
        lambda r: r.update(image_size=[True, 480]),
        lambda r: r.update(image_size=[640]),
        lambda r: r.update(image_size="640x480"),
        lambda r: r.update(image_size=[0, 480]),
        lambda r: r.update(model_image_size=[448, 336]),
        lambda r: r.update(model_image_size=[448, "336"]),
        lambda r: r.update(metadata={"width": 10, "height": 20}),
        lambda r: r.update(metadata={1: 2}),
        lambda r: r.update(metadata={"width": 0, "height": 5}),
        lambda r: r.update(metadata=[1]),
        lambda r: r.pop("answer_gt"),
        lambda r: r.update(answer_gt=None),
        lambda r: r["answer_gt"].update(extra=1),
        lambda r: r["answer_gt"].update(type=" integer"),
        lambda r: r["answer_gt"].update(type="Integer"),
        lambda r: r["answer_gt"].update(type=Text("integer")),
        lambda r: r["annotation_gt"].update(type="boxes"),
        lambda r: r["annotation_gt"].pop("value"),
        lambda r: r["reward_contract"].update(reward_contract_version="v1"),
        lambda r: r["reward_contract"].update(reward_contract_version=Text("v9")),
        lambda r: r["reward_contract"]["annotation"].update(id="bbox_giou_v1"),
        lambda r: r["reward_contract"]["annotation"].update(type=Text("point")),
        lambda r: r["reward_contract"]["annotation"].pop("type"),
        lambda r: r["reward_contract"]["answer"].update(type="number"),
        lambda r: r["reward_contract"].update(extra={}),
        lambda r: r.update(reward_contract={k: r["reward_contract"][k] for k in reversed(list(r["reward_contract"]))}),
        lambda r: r.pop("reward_contract"),
    ]
    for change in changes:
        record = copy.deepcopy(base())
        change(record)
        found.append(record)
    rng = random.Random(3)
    for i in range(120):
        row = make_item(rng, ANNOTATION_TYPES[i % len(ANNOTATION_TYPES)], "answer_and_annotation")
        found.append({k: v for k, v in row.items() if k not in ("response", "trace_reward_mode")})
    return [*found, "not a record", None, 5]


def parts_of(parts: validation.Parts) -> dict[str, Any]:
    return {name: getattr(parts, name) for name in validation.Parts.__slots__}


@pytest.mark.parametrize("cls", [TrainInstance, TraceInstance])
@pytest.mark.parametrize("mode", [None, "answer_and_annotation", "annotation_only"])
def test_check_is_the_same_with_the_shortcut_and_without(cls: type, mode: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = get_registry()
    every = records()
    with_shortcut = [validation.check(record, cls, registry, mode=mode) for record in every]
    vouched = [validation._plain_record(record, cls, registry, validation.Parts()) for record in every]
    monkeypatch.setattr(validation, "_plain_record", lambda *args: False)
    without = [validation.check(record, cls, registry, mode=mode) for record in every]
    for record, (problems, parts), (expected, expected_parts) in zip(every, with_shortcut, without, strict=True):
        assert problems == expected, record
        assert parts_of(parts) == parts_of(expected_parts), record
    # The shortcut is not vacuous: the benchmark's records and the plain variants go through it.
    assert sum(vouched) >= 120 and vouched[0] and vouched[1] is (cls is TrainInstance)
