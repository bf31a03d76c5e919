"""Issue 37, item 17: caller values that are subclasses of the built-in types score as the plain values they hold.

The compiled build reads a ``str``, ``float``, ``dict`` or ``list`` subclass at a
typed boundary as the plain value it holds; the pure build would call the
subclass's own methods. The public entry points normalise such values first, so
both builds give the plain values' result. Every subclass here overrides the
methods the scorer could call with ones that lie; the suite runs against both
builds (``.ci/compiled`` for the compiled one), so a build that called them fails.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest

from trace_tasks import evaluate_trace_response_format, extract_trace_prediction, score_trace_response
from trace_tasks.core.reward_scoring import check_response, plain
from trace_tasks.family import soft_similarity


class LyingStr(str):
    """Equal to everything, stripped to nonsense, hashed as the plain string (so it can be a key)."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def strip(self, chars: str | None = None) -> str:
        return "nonsense"

    def lower(self) -> str:
        return "nonsense"

    def __str__(self) -> str:
        return "nonsense"


class LyingFloat(float):
    """Arithmetic and comparisons that lie."""

    def __mul__(self, other: object) -> float:
        return 0.0

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> float:
        return 0.0

    def __rtruediv__(self, other: object) -> float:
        return 0.0

    def __add__(self, other: object) -> float:
        return -1.0

    __radd__ = __add__

    def __sub__(self, other: object) -> float:
        return 123.0

    def __rsub__(self, other: object) -> float:
        return 123.0

    def __lt__(self, other: object) -> bool:
        return True

    def __float__(self) -> float:
        return 99.0


class LyingInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__

    def __int__(self) -> int:
        return 99


class LyingDict(dict):  # type: ignore[type-arg]
    """Every lookup answers something else; iteration and items as stored."""

    def __getitem__(self, key: Any) -> Any:
        return "nonsense"

    def get(self, key: Any, default: Any = None) -> Any:
        return "nonsense"

    def __contains__(self, key: object) -> bool:
        return False

    def keys(self) -> Any:
        return ["nonsense"]

    def items(self) -> Any:
        return [("nonsense", None)]


class LyingList(list):  # type: ignore[type-arg]
    """Length, indexing and iteration that lie."""

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: Any) -> Any:
        return 0

    def __iter__(self) -> Any:
        return iter([0])


def lying(value: Any) -> Any:
    """``value`` with every str, float, int, dict and list replaced by a lying subclass holding the same."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return LyingStr(value)
    if isinstance(value, float):
        return LyingFloat(value)
    if isinstance(value, int):
        return LyingInt(value)
    if isinstance(value, dict):
        return LyingDict((lying(k), lying(v)) for k, v in value.items())
    if isinstance(value, list):
        return LyingList(lying(v) for v in value)
    return value


def _contract(answer_type: str, annotation_type: str, reward_id: str) -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": answer_type},
        "annotation": {"id": reward_id, "type": annotation_type},
    }


BOXES = [[10.5, 20.0, 110.0, 220.25], [300.0, 40.0, 360.0, 90.0]]
CASES = [
    pytest.param(
        {
            "response": "<think>look</think>\n" + json.dumps({"answer": 3, "annotation": [[12.0, 22.0, 100.0, 200.0]]}),
            "answer_gt": {"type": "integer", "value": 3},
            "annotation_gt": {"type": "bbox_set", "value": BOXES},
            "reward_contract": _contract("integer", "bbox_set", "bbox_set_soft_iou_v0"),
            "answer_weight": 0.3,
            "annotation_weight": 0.7,
            "format_weight": 0.1,
        },
        id="bbox_set",
    ),
    pytest.param(
        {
            "response": json.dumps({"answer": "Red ", "annotation": [[100.0, 100.0], [300.5, 40.0]]}),
            "answer_gt": {"type": "string", "value": "red"},
            "annotation_gt": {"type": "point_sequence", "value": [[101.0, 98.0], [290.0, 44.0], [5.0, 5.0]]},
            "reward_contract": _contract("string", "point_sequence", "point_sequence_soft_distance_v0"),
            "metadata": {"note": "x", "image": {"width": 640.0, "height": 480.0}},
            "trace_annotation_reward_formula": "additive",
        },
        id="point_sequence",
    ),
    pytest.param(
        {
            "response": json.dumps({"answer": 1, "annotation": [320.0, 240.0]}),
            "answer_gt": {"type": "integer", "value": 1},
            "annotation_gt": {"type": "point", "value": [310.0, 236.0]},
            "reward_contract": _contract("integer", "point", "point_soft_distance_v0"),
            "point_half_life_px": 12.5,
            "image_size": [640.0, 480.0],
            "extra_info": {"image_sizes": [[800, 600]], "index": 3},
        },
        id="point_half_life",
    ),
    pytest.param(
        {
            "response": "reasoning\n" + json.dumps({"answer": "B", "annotation": {"left": [0, 0, 50, 50]}}),
            "answer_gt": {"type": "option_letter", "value": "b"},
            "annotation_gt": {"type": "bbox_map", "value": {"left": [0, 0, 40, 50], "right": [60, 0, 100, 50]}},
            "reward_contract": _contract("option_letter", "bbox_map", "bbox_map_soft_iou_v0"),
            "trace_reward_mode": "answer_and_annotation",
            "trace_recovery": "outside_think",
        },
        id="bbox_map",
    ),
    pytest.param(
        {
            "response": "no object here, the answer is 4.0",
            "answer_gt": {"type": "number", "value": 4.0},
            "annotation_gt": None,
            "reward_contract": None,
            "trace_reward_mode": "answer",
        },
        id="answer_only",
    ),
]


@pytest.mark.parametrize("kwargs", CASES)
def test_subclasses_score_as_the_plain_values_they_hold(kwargs: dict[str, Any]) -> None:
    expected = score_trace_response(**kwargs)
    got = score_trace_response(**{name: lying(value) for name, value in kwargs.items()})
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert all(type(value) is float for value in got.values())


def test_the_format_and_prediction_helpers_read_a_str_subclass_as_its_text() -> None:
    text = "<think>a</think>\n" + json.dumps({"answer": 2, "annotation": [1, 2, 3, 4]})
    assert evaluate_trace_response_format(LyingStr(text), trace_reward_mode=LyingStr("answer")) == (
        evaluate_trace_response_format(text, trace_reward_mode="answer")
    )
    assert extract_trace_prediction(LyingStr(text), trace_recovery=LyingStr("final_only")) == (
        extract_trace_prediction(text, trace_recovery="final_only")
    )


def test_plain_copies_only_what_holds_a_subclass() -> None:
    shared = [1.0, 2.0]
    value = {"a": [shared, shared], "b": ("x", 3)}
    assert plain(value) is value  # nothing to replace: no copy
    mixed = {"a": [LyingFloat(1.5), shared], "b": LyingList([1, 2]), LyingStr("k"): (LyingInt(7), "y")}
    out = plain(mixed)
    assert out == {"a": [1.5, [1.0, 2.0]], "b": [1, 2], "k": (7, "y")}
    assert out["a"][1] is shared  # a plain part is kept, not copied
    assert [type(x) for x in (out["a"][0], out["b"], out["k"][0])] == [float, list, int]
    assert type(next(iter(out))) is str
    assert type(check_response(LyingStr("abc"))) is str and check_response(LyingStr("abc")) == "abc"


def test_plain_survives_cycles_sharing_and_depth() -> None:
    cycle: list[Any] = [LyingFloat(1.0)]
    cycle.append(cycle)
    cycle.append(cycle)  # exponential if each reference were walked again
    out = plain(cycle)
    assert type(out[0]) is float
    deep: Any = LyingFloat(2.0)
    for _ in range(5000):
        deep = [deep]
    plain(deep)  # no RecursionError: below a depth no answer or annotation is read, it is left as it is
    numpy = pytest.importorskip("numpy")
    arr = numpy.arange(3)
    assert plain({"v": arr})["v"] is arr


@pytest.mark.parametrize("distance", [0.0, 3.5, 10, 1e308, float("nan"), float("inf")])
@pytest.mark.parametrize("half_life", [7.25, 2, True])
def test_soft_similarity_reads_subclasses_as_plain_numbers(distance: float, half_life: float) -> None:
    expected = math.exp(-math.log(2.0) * (distance / half_life) ** 2) if distance / half_life < 40 else 0.0
    assert soft_similarity(distance, half_life) == expected
    wrapped_d = LyingFloat(distance) if isinstance(distance, float) else LyingInt(distance)
    wrapped_h = LyingFloat(half_life) if isinstance(half_life, float) else half_life if half_life is True else LyingInt(half_life)
    assert soft_similarity(wrapped_d, wrapped_h) == expected


@pytest.mark.parametrize("bad", [Fraction(1, 2), "1.0", None, [1.0]])
def test_soft_similarity_refuses_what_is_not_a_number_in_both_builds(bad: Any) -> None:
    with pytest.raises(TypeError, match="must be a number"):
        soft_similarity(bad, 2.0)
    with pytest.raises(TypeError, match="must be a number"):
        soft_similarity(2.0, bad)
