"""The lean common path inside the one pipeline gives exactly the general steps' results (issue 28).

``scoring._pipeline._LEAN = False`` forces the general steps everywhere (the
extraction under the literal budget, the answer through the matcher); every
result dict must be equal, key for key and in order, on the benchmark
workloads, the conformance replay and the hostile corpus, under every opt-in
response policy. The validation memos (a contract's rules and a built-in
answer type's checks, remembered by exact content) must give the same problems
and the same compiled instance as checking afresh.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import trace_tasks
from trace_tasks import InstanceError, compile_instance, score_trace_response
from trace_tasks.data import _validation
from trace_tasks.limits import MAX_RESPONSE_CHARS
from trace_tasks.scoring import _pipeline

from ..conformance.records import load
from ..hostile.helpers import contract
from ..hostile.test_corpus import CASES
from ..support.benchmarks import import_benchmark

POLICIES: list[dict[str, Any]] = [
    {},
    {"trace_recovery": "outside_think"},
    {"trace_recovery": "final_only"},
    {"format_accept_answer_tag": True},
]


@contextmanager
def general_path() -> Iterator[None]:
    _pipeline._LEAN = False
    try:
        yield
    finally:
        _pipeline._LEAN = True


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:  # a caller mistake: the same class either way
        return type(exc)


def _same_results(a: Any, b: Any) -> bool:
    """``==`` on result dicts, key order included (NaN in a recorded input never reaches a result)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(
            x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
            for x, y in zip(a.values(), b.values(), strict=True)
        )
    return bool(a == b)


def _both(call: Callable[[], Any]) -> tuple[Any, Any]:
    lean = _outcome(call)
    with general_path():
        general = _outcome(call)
    return lean, general


def test_the_switch_is_on_by_default() -> None:
    assert _pipeline._LEAN is True


@pytest.mark.parametrize("shape", ["bare", "fenced", "tagged", "grpo", "grpo-compiled", "mix"])
def test_lean_equals_general_on_the_benchmark_shapes(shape: str) -> None:
    bench = import_benchmark("bench_shapes")
    workload = bench.make_workloads(240, 20261130)[shape]
    runner = bench._runner(shape, workload)
    lean, general = _both(runner)
    assert isinstance(lean, list) and len(lean) == bench.responses_of(shape, workload)
    assert len(lean) == len(general)
    for i, (a, b) in enumerate(zip(lean, general, strict=True)):
        assert _same_results(a, b), (shape, i)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults")
def test_lean_equals_general_on_the_conformance_replay(policy: dict[str, Any]) -> None:
    compared = 0
    for record in load("original-scorer.jsonl"):
        kwargs = {
            k: v
            for k, v in record["kwargs"].items()
            if k not in ("trace_answer_scoring", "legacy_strict_scorer", "bbox_iou_threshold")
        }
        kwargs.update(policy)
        lean, general = _both(lambda kwargs=kwargs: score_trace_response(**kwargs))
        assert _same_results(lean, general), record["id"]
        compared += 1
    assert compared >= 300


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults")
def test_lean_equals_general_on_the_hostile_corpus(policy: dict[str, Any]) -> None:
    for case in CASES:
        instance = {"answer": 7, "answer_type": "integer", "annotation_type": "bbox", "annotation": [0, 0, 10, 10]}
        instance.update(case.instance)
        kwargs = {
            "response": case.response,
            "answer_gt": {"type": instance["answer_type"], "value": instance["answer"]},
            "annotation_gt": {"type": instance["annotation_type"], "value": instance["annotation"]},
            "reward_contract": contract(instance["annotation_type"], instance["answer_type"]),
            **{k: v for k, v in instance.items() if k not in ("answer", "answer_type", "annotation_type", "annotation")},
            **policy,
        }
        lean, general = _both(lambda kwargs=kwargs: score_trace_response(**kwargs))
        assert _same_results(lean, general), case.name


ANSWERS: list[tuple[str, Any, str]] = [
    # (answer type, target, the predicted answer as written in the final object)
    ("integer", 7, "7"),
    ("integer", 7, "7.0"),
    ("integer", 7, '"7"'),
    ("integer", 7, "true"),
    ("integer", 1, "true"),
    ("integer", 10**30, str(10**30)),
    ("option_letter", "B", '"B"'),
    ("option_letter", "B", '" b "'),
    ("option_letter", "B", '"\\"B\\""'),
    ("option_letter", "B", '"[1]"'),
    ("string", "7", '"7"'),
    ("string", " Red ", '"red"'),
    ("string", '"x"', '"\\"x\\""'),
    ("number", 0.5, "0.5"),
    ("boolean", True, "true"),
    ("boolean", True, "1"),
]


@pytest.mark.parametrize(("answer_type", "target", "written"), ANSWERS)
def test_lean_answers_equal_the_matcher(answer_type: str, target: Any, written: str) -> None:
    """The direct integer and string comparisons agree with ``answer_exact_match_v0`` on their edge cases."""
    for tail in ("", "\n\nDone."):  # the compact ending (lean), and trailing prose (the general extraction)
        for mode, ending in (("answer_and_annotation", ', "annotation": [0, 0, 10, 10]}'), ("answer_only", "}")):
            kwargs = {
                "response": 'Thinking.\n{"answer": ' + written + ending + tail,
                "answer_gt": {"type": answer_type, "value": target},
                "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
                "reward_contract": contract("bbox", answer_type),
                "trace_reward_mode": mode,
            }
            lean, general = _both(lambda kwargs=kwargs: score_trace_response(**kwargs))
            assert _same_results(lean, general), (answer_type, target, written, tail, mode)


def test_a_response_past_the_scanned_length_takes_the_general_path() -> None:
    final = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
    for prose in (MAX_RESPONSE_CHARS - len(final), MAX_RESPONSE_CHARS - len(final) + 1, MAX_RESPONSE_CHARS):
        kwargs = {
            "response": "x" * prose + final,
            "answer_gt": {"type": "integer", "value": 7},
            "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
            "reward_contract": contract("bbox"),
        }
        lean, general = _both(lambda kwargs=kwargs: score_trace_response(**kwargs))
        assert _same_results(lean, general)
        assert lean["overall"] == 1.0


def _instance(answer_type: str, answer: Any, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
        "reward_contract": contract("bbox", answer_type),
    }
    data.update(changes)
    return data


def _problems(data: dict[str, Any]) -> Any:
    try:
        compiled = compile_instance(data)
    except InstanceError as exc:
        return exc.problems
    return compiled.score('{"answer": 7, "annotation": [0, 0, 10, 10]}'), compiled._prepared.answer


INSTANCES: list[dict[str, Any]] = [
    _instance("integer", 7),
    _instance("integer", True),
    _instance("integer", 1),
    _instance("number", 1),
    _instance("boolean", True),
    _instance("boolean", 1),
    _instance("option_letter", "B"),
    _instance("option_letter", ""),
    _instance("option_letter", '""'),
    _instance("string", '"B"'),
    _instance("option_letter", '"B"'),
    _instance("integer", 7, reward_contract={**contract("bbox"), "reward_contract_version": "v9"}),
    _instance("integer", 7, reward_contract={**contract("bbox"), "extra": 1}),
    _instance("integer", 7, reward_contract={**contract("bbox"), "reward_contract_version": 0}),
    _instance("integer", 7, reward_contract={**contract("bbox"), "reward_contract_version": False}),
    _instance("integer", 7, reward_contract={**contract("point"), "answer": contract("bbox")["answer"]}),
    _instance("integer", 7, reward_contract={"answer": {"id": 1, "type": "integer"}}),
    _instance("integer", 7, reward_contract={"answer": {"id": True, "type": "integer"}}),
    _instance("integer", 7, annotation_gt={"type": "polygon", "value": []}),
]


def test_the_validation_memos_give_the_problems_of_a_fresh_check() -> None:
    fresh = []
    for data in INSTANCES:
        _validation._contract_checks.clear()
        _validation._answer_checks.clear()
        fresh.append(_problems(data))
    assert any(isinstance(f, tuple) and f and hasattr(f[0], "path") for f in fresh)  # broken ground truth refused
    for _ in range(2):  # remembered now, in either order
        for data, expected in zip(INSTANCES, fresh, strict=True):
            assert _problems(data) == expected, data
        for data, expected in reversed(list(zip(INSTANCES, fresh, strict=True))):
            assert _problems(data) == expected, data


def test_broken_ground_truth_is_refused_loudly_every_time() -> None:
    data = _instance("option_letter", "")
    for _ in range(3):
        with pytest.raises(InstanceError, match="empty"):
            compile_instance(data)
    bad_contract = _instance("integer", 7, reward_contract={**contract("bbox"), "reward_contract_version": "v9"})
    for _ in range(3):
        with pytest.raises(InstanceError, match="reward_contract"):
            compile_instance(bad_contract)


def test_the_memos_stay_bounded_and_skip_what_is_not_plain() -> None:
    class Text(str):
        pass

    _validation._answer_checks.clear()
    compile_instance(_instance("option_letter", Text("B")))
    compile_instance(_instance("string", "x" * 10_000))
    assert _validation._answer_checks == {}
    assert _validation._contract_key({"a": [1]}) == _validation._contract_key({"a": [1]})
    assert _validation._contract_key({"a": {"b": Text("x")}}) != _validation._contract_key({"a": {"b": "x"}})
    assert _validation._contract_key({"a": "x" * 5000}) is None  # too long to remember
    assert _validation._contract_key({"a": threading.Lock()}) is None  # no pickle, no key
    assert _validation._contract_key({"a": 1}) != _validation._contract_key({"a": True})
    assert _validation._contract_key({"a": 1}) != _validation._contract_key({"a": 1.0})
    for i in range(5000):
        compile_instance(_instance("integer", i))
    assert len(_validation._answer_checks) <= 4096
    assert trace_tasks.score_instance(_instance("integer", 7), '{"answer": 7, "annotation": [0, 0, 10, 10]}')["overall"] == 1.0


def _bbox_call(value: Any, response: str = '{"answer": 7, "annotation": [[0, 0, 10, 10], [20, 20, 30, 30]]}') -> Any:
    return score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "bbox_set", "value": value},
        reward_contract=contract("bbox_set"),
    )


def test_a_remembered_target_follows_every_change_of_its_content() -> None:
    """The same ground-truth object scored again and again, changed in place between calls: never a stale parse."""
    np = pytest.importorskip("numpy")
    _pipeline._parsed_targets.clear()
    _pipeline._seen_values.clear()
    value: list[Any] = [[0, 0, 10, 10], [20, 20, 30, 30]]
    changes: list[Callable[[], None]] = [
        lambda: None,
        lambda: None,
        lambda: value[0].__setitem__(2, 11),
        lambda: value[0].__setitem__(2, 10.0),
        lambda: value[0].__setitem__(0, False),  # a boolean is no coordinate: equal to 0, not the same
        lambda: value[0].__setitem__(0, 0),
        lambda: value.__setitem__(1, (20, 20, 30, 30)),
        lambda: value.__setitem__(1, np.array([20.0, 20.0, 30.0, 30.0])),
        lambda: value.__setitem__(1, np.array([[20.0, 20.0], [30.0, 30.0]])),  # the same bytes, another shape
        lambda: value.__setitem__(1, [20, 20, 30, 30]),
        lambda: value.append([5, 5, 5, 9]),  # zero-width: the target no longer parses
        lambda: value.pop(),
        lambda: value.__setitem__(1, [20, 20, 30, float("nan")]),
        lambda: value.__setitem__(1, [20, 20, 30, -0.0]),
        lambda: value.__setitem__(1, [20, 20, 30, 30]),
    ]
    for change in changes:
        change()
        for _ in range(3):  # first sighting, second (remembered), third (looked up)
            lean, general = _both(lambda: _bbox_call(value))
            assert _same_results(lean, general), value
    assert _pipeline._parsed_targets  # the plain contents were remembered


def test_what_is_not_plain_is_parsed_every_time() -> None:
    np = pytest.importorskip("numpy")

    class Row(list):  # type: ignore[type-arg]
        pass

    _pipeline._parsed_targets.clear()
    _pipeline._seen_values.clear()
    # A subclass such as Row reaches the pipeline as the plain value it holds (score_trace_response
    # normalises it first: tests/core/test_subclass_inputs.py), so only _exact_json sees one below.
    for value in ([np.array([0, 0, 10, 10])], np.array([[0, 0, 10, 10]]), "[[0, 0, 10, 10]]"):
        for _ in range(3):
            lean, general = _both(lambda value=value: _bbox_call(value))
            assert _same_results(lean, general)
    import marshal

    # Only the string (immutable, exact) was remembered; numpy values and subclasses never are.
    assert [key[1] for key in _pipeline._parsed_targets] == [marshal.dumps("[[0, 0, 10, 10]]", 2)]
    assert not any(_pipeline._exact_json(v) for v in ([np.array([0.0])], [Row()], {1: 2}, {"a": {1, 2}}))
    assert _pipeline._exact_json({"a": [[0, 1.5, True, None, "x"]], "b": ()})


def test_the_memo_follows_the_declared_pure_parse_never_a_name() -> None:
    from trace_tasks.plugins import get_registry

    registry = get_registry()
    entry = registry.annotation_types["bbox"]
    assert entry.spec is not None and entry.spec.pure_parse
    assert _pipeline._trusted(entry)
    import attrs

    # Who the plugin is does not matter; what its type declares does.
    assert _pipeline._trusted(attrs.evolve(entry, plugin="someone_else"))
    assert not _pipeline._trusted(attrs.evolve(entry, spec=attrs.evolve(entry.spec, pure_parse=False)))
    assert not _pipeline._trusted(attrs.evolve(entry, spec=None))
