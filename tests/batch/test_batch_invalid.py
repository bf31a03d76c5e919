"""``score_trace_batch`` refuses broken instances item by item: ``{"error": ...}`` listing the problems.

Items come from data, so each item's instance is validated through the strict
path (``trace_tasks.data._instances``) and compiled once per content; a broken one
becomes an error entry the way any failing item does, while the items next to
it, the result order and the pooled path are unchanged. The lenient
``score_trace_response`` still scores the same broken instances (no refusal).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from trace_tasks import score_trace_batch, score_trace_response
from trace_tasks.data import _batch as batch_module
from trace_tasks.data import _cache as instances_module

from ..integrations.test_invalid_instances import BROKEN, GOOD, GOOD_RESPONSE
from .test_score_trace_batch import make_items, serial

KINDS = list(BROKEN)
FIELDS = ("answer_gt", "annotation_gt", "reward_contract")


def _item(inst: dict[str, Any], response: str, **options: Any) -> dict[str, Any]:
    return {"response": response, **{k: inst[k] for k in FIELDS}, "image_size": inst.get("image_size"), **options}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    batch_module.INSTANCE_CACHE.clear()
    yield
    batch_module.INSTANCE_CACHE.clear()


@pytest.fixture
def compile_spy(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = instances_module.compile_instance

    def spy(data: Any, *, record: str | None = None) -> Any:
        calls.append(data)
        return real(data, record=record)

    monkeypatch.setattr(instances_module, "compile_instance", spy)
    return calls


@pytest.mark.parametrize("kind", KINDS)
def test_a_broken_instance_is_an_error_entry_and_its_neighbours_score_as_before(kind: str) -> None:
    inst, path, word, response = BROKEN[kind]
    items = [_item(GOOD, GOOD_RESPONSE), _item(inst, response), _item(GOOD, "")]
    results = score_trace_batch(items, format_weight=0.1)
    assert len(results) == 3
    assert set(results[1]) == {"error"}
    error = results[1]["error"]
    assert isinstance(error, str) and error.startswith("InstanceError: invalid instance: ")
    assert path in error and word in error
    assert results[0] == score_trace_response(**items[0], format_weight=0.1)
    assert results[2] == score_trace_response(**items[2], format_weight=0.1)
    # The lenient scorer is unchanged: it still gives the broken instance a number.
    assert isinstance(score_trace_response(**items[1])["overall"], float)


def test_every_problem_is_listed() -> None:
    inst = json.loads(json.dumps(BROKEN["zero_area_target"][0]))
    inst["answer_gt"]["value"] = "abc"
    inst["reward_contract"]["reward_contract_version"] = "v9"
    (result,) = score_trace_batch([_item(inst, GOOD_RESPONSE)])
    for path in ("$.annotation_gt.value", "$.answer_gt.value", "$.reward_contract.reward_contract_version"):
        assert path in result["error"]


def test_missing_and_extra_instance_fields() -> None:
    good = _item(GOOD, GOOD_RESPONSE)
    no_contract = {k: v for k, v in good.items() if k != "reward_contract"}
    bad_metadata = {**good, "metadata": "640x480"}
    bad_size = {**good, "image_size": [0, 480]}
    results = score_trace_batch([no_contract, bad_metadata, bad_size, good])
    assert "$.reward_contract" in results[0]["error"] and results[0]["error"].startswith("InstanceError")
    assert "$.metadata" in results[1]["error"]
    assert "$.image_size" in results[2]["error"]
    assert results[3] == score_trace_response(**good)


def test_order_is_kept_with_broken_items_scattered() -> None:
    items = make_items(60)
    broken_at = {}
    for n, kind in enumerate(KINDS):
        position = 3 + 5 * n
        inst, path, _, response = BROKEN[kind]
        items[position] = _item(inst, response)
        broken_at[position] = path
    results = score_trace_batch(items)
    expected = serial(items)
    for i, result in enumerate(results):
        if i in broken_at:
            assert broken_at[i] in result["error"]
        else:
            assert result == expected[i]


def test_caller_mistakes_keep_their_own_errors() -> None:
    # Not instance problems: the response and the options are checked as score_trace_response checks them.
    good = _item(GOOD, GOOD_RESPONSE)
    results = score_trace_batch([{**good, "response": 7}, {**good, "answer_weight": -1}, {**good, "bogus": 1}])
    assert results[0]["error"].startswith("ResponseTypeError")
    assert results[1]["error"].startswith("OptionError") and "answer_weight" in results[1]["error"]
    # An unknown key is an option mistake named as such, never a TypeError about an internal signature.
    assert results[2]["error"].startswith("OptionError: unknown item key(s) ['bogus']; accepted: ['response', 'answer_gt'")
    assert "CompiledInstance" not in results[2]["error"]


def test_a_group_of_16_rollouts_compiles_its_instance_once(compile_spy: list[Any]) -> None:
    responses = [GOOD_RESPONSE, "", '{"answer": 2}', '{"answer": 3, "annotation": [[10, 10, 20, 20]]}'] * 4
    inst, *_ = BROKEN["reward_id_v9"]
    items = [_item(GOOD, r) for r in responses] + [_item(inst, r) for r in responses]
    results = score_trace_batch(items)
    assert len(compile_spy) == 2  # one good instance, one broken one: failures are cached too
    assert results[:16] == serial(items[:16])
    assert all("$.reward_contract.annotation.id" in r["error"] for r in results[16:])
    score_trace_batch(items[:16])  # the next call (the next step) reuses the compiled instance
    assert len(compile_spy) == 2


@pytest.mark.slow  # spawns a pool of worker interpreters
def test_pooled_path_refuses_broken_items_in_the_children() -> None:
    """Above the pool threshold with two workers: broken items in the child's share are errors there too."""
    count = 2 * batch_module.MIN_ITEMS_PER_WORKER + 40
    items = make_items(count)
    positions = {}
    for n, kind in enumerate(KINDS):
        position = 7 + n if n % 2 else count - 2 - n  # some in this process's share, some in the child's
        inst, path, _, response = BROKEN[kind]
        items[position] = _item(inst, response)
        positions[position] = path
    try:
        results = score_trace_batch(items, workers=2)
        assert 1 in batch_module._pools, "the pooled path was not taken"
    finally:
        batch_module.shutdown_batch_pools()
    assert len(results) == count
    expected = serial(items)
    for i, result in enumerate(results):
        if i in positions:
            assert result == {"error": result["error"]} and positions[i] in result["error"]
        else:
            assert result == expected[i]
