"""``score_trace_batch``: order kept, equal to serial scoring, failures isolated, pooled path."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from trace_tasks import resolve_reward_contract, score_trace_batch, score_trace_response
from trace_tasks.data import _batch as batch_module

TYPES = ("bbox", "bbox_set", "point_set", "segment_set", "point_map", "bbox_set_map")


def _annotation(kind: str, i: int) -> Any:
    box = [i % 50, 3, i % 50 + 10 + i % 7, 20]
    point = [i % 90, 5 + i % 11]
    return {
        "bbox": box,
        "bbox_set": [box, [100, 100, 130, 140]][: 1 + i % 2],
        "point_set": [point, [200, 5]][: i % 3],
        "segment_set": [[point, [50, 60]]],
        "point_map": {"source": point, "target": [7, 8]},
        "bbox_set_map": {"left": [box], "right": []},
    }[kind]


def make_items(count: int) -> list[dict[str, Any]]:
    """Distinct items of several types and both modes; answers right and wrong."""
    items = []
    for i in range(count):
        kind = TYPES[i % len(TYPES)]
        mode = "answer" if i % 4 == 0 else "answer_and_annotation"
        pred = _annotation(kind, i + (i % 5))  # every fifth item shifted: imperfect rewards
        payload = {"answer": i % 3} if mode == "answer" else {"answer": i % 3, "annotation": pred}
        items.append(
            {
                "response": f"Step {i}.\n{json.dumps(payload)}",
                "answer_gt": {"type": "integer", "value": i % 3 if i % 7 else 99},
                "annotation_gt": {"type": kind, "value": _annotation(kind, i)},
                "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type=kind).to_dict(),
                "trace_reward_mode": mode,
            }
        )
    return items


def serial(items: list[dict[str, Any]], **options: Any) -> list[dict[str, Any]]:
    return [score_trace_response(**{**options, **item}) for item in items]


def test_results_follow_input_order_and_equal_serial_scoring() -> None:
    items = make_items(60)
    results = score_trace_batch(items)
    assert results == serial(items)
    # The items differ, so a reordering would show: rewards are not all equal.
    assert len({r["overall"] for r in results}) > 2


def test_accepts_any_iterable_and_empty_batches() -> None:
    items = make_items(12)
    assert score_trace_batch(iter(items)) == serial(items)
    assert score_trace_batch([]) == []


def test_batch_options_are_defaults_that_items_override() -> None:
    items = [{k: v for k, v in item.items() if k != "trace_reward_mode"} for item in make_items(8)]
    items[3]["trace_reward_mode"] = "answer"
    results = score_trace_batch(items, trace_reward_mode="answer_and_annotation", format_weight=0.2)
    expected = [
        score_trace_response(**{"trace_reward_mode": "answer_and_annotation", "format_weight": 0.2, **item}) for item in items
    ]
    assert results == expected
    assert results[3]["trace_reward_mode_answer"] == 1.0
    assert results[4]["trace_reward_mode_answer"] == 0.0
    assert results[4]["format_weight"] == 0.2


def test_a_failing_item_is_isolated() -> None:
    items = make_items(10)
    broken = [dict(item) for item in items]
    broken[2]["response"] = 12345  # not a str: a caller mistake (ResponseTypeError, a TypeError)
    broken[5]["trace_reward_mode"] = "nonsense"  # invalid option (OptionError, a ValueError)
    broken[7]["unknown_keyword"] = 1  # not an argument of score_trace_response
    results = score_trace_batch(broken)
    assert len(results) == len(items)
    assert results[2] == {"error": results[2]["error"]} and results[2]["error"].startswith("ResponseTypeError")
    assert results[5]["error"].startswith("OptionError")
    assert results[7]["error"].startswith("OptionError: unknown item key(s) ['unknown_keyword']")
    good = [i for i in range(len(items)) if i not in (2, 5, 7)]
    expected = serial(items)
    assert [results[i] for i in good] == [expected[i] for i in good]


def test_scoring_is_deterministic() -> None:
    items = make_items(30)
    assert score_trace_batch(items) == score_trace_batch(items)


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2", True, None])
def test_invalid_workers_raise(workers: Any) -> None:
    with pytest.raises(ValueError, match="workers"):
        score_trace_batch(make_items(2), workers=workers)


@pytest.mark.parametrize("chunksize", [0, -3, 2.0, True])
def test_invalid_chunksize_raises(chunksize: Any) -> None:
    with pytest.raises(ValueError, match="chunksize"):
        score_trace_batch(make_items(2), workers=2, chunksize=chunksize)


def test_shares_are_contiguous_and_cover_the_batch() -> None:
    rows = list(range(5000))
    own, chunks = batch_module._shares(rows, 3, None)  # type: ignore[arg-type]
    assert own + [x for chunk in chunks for x in chunk] == rows
    assert len(own) == math.ceil(5000 / 3)
    assert all(len(chunk) >= batch_module.MIN_ITEMS_PER_WORKER for chunk in chunks[:-1])
    own, chunks = batch_module._shares(rows, 2, 700)  # type: ignore[arg-type]
    assert [len(c) for c in chunks] == [700, 700, 700, 400]


@pytest.mark.slow  # spawns a pool of worker interpreters
def test_two_workers_above_the_pool_threshold_match_serial_scoring() -> None:
    """Small items, just above the threshold: the child process is really used."""
    count = 2 * batch_module.MIN_ITEMS_PER_WORKER + 40
    items = make_items(count)
    items[count - 3] = {**items[count - 3], "response": None}  # fails in the child, isolated there
    # A lambda cannot be pickled: its chunk is scored in-process instead (extra_info is only read for a size;
    # metadata, an instance field, must be a mapping since instances are validated).
    items[count - 10] = {**items[count - 10], "extra_info": lambda: None}
    try:
        results = score_trace_batch(items, workers=2)
        assert 1 in batch_module._pools, "the pooled path was not taken"
    finally:
        batch_module.shutdown_batch_pools()
    assert not batch_module._pools
    assert len(results) == count
    assert results[count - 3]["error"].startswith("ResponseTypeError")
    expected = [*serial(items[: count - 3]), results[count - 3], *serial(items[count - 2 :])]
    assert results == expected
