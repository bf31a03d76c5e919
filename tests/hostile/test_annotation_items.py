"""Issue 24 (B): the items parsed per response are bounded over every key, and long decodes pause the collector.

``MAX_COLLECTION_ITEMS`` bounds each key of a set-map, so 10,000 keys of 15
points (0.95 MiB) parsed 150,000 points; ``MAX_ANNOTATION_ITEMS`` now bounds
them all. And a megabyte of small nested lists made the cyclic garbage
collector run dozens of times during the decode (2.7-5x the worst shape): long
texts are decoded with it paused. Costs are measured in
``benchmarks/hostile_scaling.py``; these tests count items and collections.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from trace_tasks import ScoringContext, resolve_reward_contract
from trace_tasks.data import instance_problems
from trace_tasks.family import AnnotationParseError, Primitive, coordinates, is_flat, make_parser, pairwise
from trace_tasks.limits import MAX_ANNOTATION_ITEMS, MAX_COLLECTION_ITEMS
from trace_tasks.reading import _literals

from .helpers import flags, score


def _response(annotation: Any) -> str:
    return json.dumps({"answer": 7, "annotation": annotation}, separators=(",", ":"))


def _keys(count: int, per_key: int) -> dict[str, list[list[int]]]:
    return {str(i): [[k, 1] for k in range(per_key)] for i in range(count)}


def test_the_limit_is_shared_by_every_key_and_leaves_one_full_collection() -> None:
    assert MAX_COLLECTION_ITEMS < MAX_ANNOTATION_ITEMS < 10_000 * 15


@pytest.mark.parametrize("annotation_type", ["point_set_map", "bbox_set_map"])
def test_a_set_map_at_the_item_limit_parses_and_one_more_item_fails(annotation_type: str) -> None:
    per_key = 10
    item = [0, 0] if annotation_type == "point_set_map" else [0, 0, 10, 10]
    at_limit = {f"k{i}": [item] * per_key for i in range(MAX_ANNOTATION_ITEMS // per_key)}
    target = {"k0": [item]}
    ok = score(_response(at_limit), annotation_type=annotation_type, annotation=target)
    assert ok["annotation_parse_ok"] == 1.0
    past = dict(at_limit, extra=[item])
    failed = score(_response(past), annotation_type=annotation_type, annotation=target)
    assert failed["annotation_parse_ok"] == 0.0
    assert failed["annotation_reward"] == 0.0
    assert failed["answer_reward"] == 1.0
    assert flags(failed)["format_json_ok"] == 1.0  # the response is well formed: only the annotation fails


def test_the_issue_shape_ten_thousand_keys_of_fifteen_points_fails() -> None:
    response = _response(_keys(10_000, 15))
    assert len(response) < 1024 * 1024  # inside the window: the whole object is read
    result = score(response, annotation_type="point_set_map", annotation={"0": [[0, 1]]})
    assert result["annotation_parse_ok"] == 0.0
    assert result["answer_reward"] == 1.0


def test_no_more_items_are_parsed_than_the_limit() -> None:
    parsed = 0

    def parse_item(value: Any) -> tuple[float, float]:
        nonlocal parsed
        parsed += 1
        x, y = coordinates(value, 2)
        return (x, y)

    def closeness(a: Any, b: Any, ctx: ScoringContext) -> float:
        return 1.0 if a == b else 0.0

    prim = Primitive(
        name="tick",
        similarity=closeness,
        matrix=pairwise(closeness),
        metric="similarity",
        parse_item=parse_item,
        is_item=lambda value: is_flat(value, 2),
    )
    parse = make_parser("set_map", prim)
    with pytest.raises(AnnotationParseError, match="MAX_ANNOTATION_ITEMS"):
        parse(_keys(10_000, 15))
    assert MAX_ANNOTATION_ITEMS - 15 <= parsed <= MAX_ANNOTATION_ITEMS  # not 150,000
    # A key given as one flat item, or as a JSON string, counts the same.
    parsed = 0
    flat = {f"k{i}": [1, 2] for i in range(MAX_COLLECTION_ITEMS)}
    assert len(parse(flat)) == MAX_COLLECTION_ITEMS
    strings = {f"k{i}": json.dumps([[1, 2]] * 3) for i in range(MAX_ANNOTATION_ITEMS // 3 + 1)}
    with pytest.raises(AnnotationParseError, match="MAX_ANNOTATION_ITEMS"):
        parse(strings)


def test_a_target_past_the_item_limit_is_refused_by_validation() -> None:
    target = {f"k{i}": [[0, 0]] * 10 for i in range(MAX_ANNOTATION_ITEMS // 10 + 1)}
    instance = {
        "answer_gt": {"type": "integer", "value": 7},
        "annotation_gt": {"type": "point_set_map", "value": target},
        "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type="point_set_map").to_dict(),
    }
    problems = instance_problems(instance)
    assert len(problems) == 1
    assert "MAX_ANNOTATION_ITEMS" in problems[0].message


# The garbage collector during long decodes.

NESTED = "[" + ",".join(["[[1, 2]]"] * 116_000) + "]"  # ~1 MiB of small nested lists


@pytest.fixture
def collections_in_decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The generations the cyclic collector ran on while a JSON decoder was running (it is enabled)."""
    counted: list[int] = []
    decoding = False
    real = _literals._json_loads

    def decode(text: str) -> Any:
        nonlocal decoding
        decoding = True
        try:
            return real(text)
        finally:
            decoding = False

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and decoding:
            counted.append(info["generation"])

    monkeypatch.setattr(_literals, "_json_loads", decode)
    was = gc.isenabled()
    gc.enable()
    gc.callbacks.append(callback)
    try:
        yield counted
    finally:
        gc.callbacks.remove(callback)
        if not was:
            gc.disable()


def test_a_megabyte_of_small_lists_is_decoded_without_a_collection(collections_in_decodes: list[int]) -> None:
    value, ok = _literals.load_json(NESTED)
    assert ok and len(value) == 116_000
    assert collections_in_decodes == []  # with the collector running: dozens, most of the decode's time
    assert gc.isenabled()


def test_the_final_object_of_a_response_is_decoded_without_a_collection(collections_in_decodes: list[int]) -> None:
    response = '{"answer": ' + NESTED + ', "annotation": [[0, 0, 10, 10]]}'
    result = score(response)
    assert result["format_json_ok"] == 1.0 and result["answer_reward"] == 0.0
    assert collections_in_decodes == []


def test_the_collector_is_paused_only_while_decoding_and_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = _literals._json_loads

    def recording(text: str) -> Any:
        seen.append(gc.isenabled())
        return real(text)

    monkeypatch.setattr(_literals, "_json_loads", recording)
    assert gc.isenabled()
    assert _literals.load_json(NESTED)[1]
    assert _literals.load_json("[1, 2]")[1]  # short: not worth the pause
    assert seen == [False, True]
    assert gc.isenabled()


def test_a_failing_decode_restores_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(text: str) -> Any:
        assert not gc.isenabled()
        raise ValueError("broken")

    monkeypatch.setattr(_literals, "_json_loads", failing)
    assert _literals.load_json(NESTED) == (None, False)
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        assert _literals.load_json(NESTED)[1]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_long_literals_are_read_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    import ast

    seen: list[bool] = []
    real = ast.literal_eval

    def recording(text: str) -> Any:
        seen.append(gc.isenabled())
        return real(text)

    monkeypatch.setattr(ast, "literal_eval", recording)
    long_literal = "[" + "(0, 0, 10, 10), " * 300 + "]"
    assert len(long_literal) >= _literals.GC_PAUSE_CHARS
    assert _literals.load_literal(long_literal)[1]
    assert _literals.load_literal("(0, 0, 10, 10)")[1]
    assert seen == [False, True]
    assert gc.isenabled()


def test_decodes_in_threads_leave_the_collector_enabled() -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                assert _literals.load_json(NESTED)[1]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert gc.isenabled()
