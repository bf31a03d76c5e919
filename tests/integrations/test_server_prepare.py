"""The reward server prepares each label once (issue 41, item 3).

Validation compiles every label of a request (strictly, through the adapters'
cache) and hands the compiled entries to scoring: no label is loaded, keyed,
compiled or linted a second time, on ``/get_reward`` as on ``/verify``. The cost
per row is counted by ``benchmarks/bench_server.py`` (benchmarks/README.md).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest

from trace_tasks.data import WARNING_RULES
from trace_tasks.integrations import _common, server
from trace_tasks.integrations.server import create_app, validate_labels

from .helpers import INSTANCES, RESPONSES, as_json, reference


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every label the general way: the native build's lane (``data.quick_compile``) turned off."""
    monkeypatch.setattr(server, "quick_compile", lambda label, skip: None)
    monkeypatch.setattr(_common, "quick_compile", lambda label, skip: None)  # labels sent as JSON text


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, general: None) -> Counter[str]:
    """How often a label is loaded, compiled through the cache, and linted (the general path)."""
    counts: Counter[str] = Counter()
    load, lint = _common.load_instance, _common.instance_warnings
    compile_cached = _common.INSTANCE_CACHE.compile

    def counted(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(_common, "load_instance", counted("load", load))
    monkeypatch.setattr(_common, "instance_warnings", counted("lint", lint))
    monkeypatch.setattr(_common.INSTANCE_CACHE, "compile", counted("compile", compile_cached))
    _common.clear_instance_caches()
    return counts


def _post(app: Any, path: str, payload: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:5000", timeout=30) as http:
            return await http.post(path, json=payload)

    return asyncio.run(go())


@pytest.mark.parametrize("as_text", [False, True])
def test_get_reward_compiles_and_lints_each_label_once(calls: Counter[str], as_text: bool) -> None:
    labels = [as_json(inst) if as_text else inst for inst in INSTANCES]
    responses = RESPONSES[: len(INSTANCES)]
    got = _post(create_app(), "/get_reward", {"query": responses, "prompts": [""] * len(labels), "labels": labels})
    assert got.status_code == 200
    assert got.json()["rewards"] == [
        min(max(reference(r, i)["overall"], 0.0), 1.0) for r, i in zip(responses, INSTANCES, strict=True)
    ]
    n = len(INSTANCES)
    assert calls == Counter(load=n, compile=n, lint=n)  # before: load and compile twice per label


def test_a_label_repeated_as_an_object_is_linted_once(calls: Counter[str]) -> None:
    """A GRPO group's rows carry one label each (equal objects): the cache compiles it once, and it is linted once."""
    labels = [dict(INSTANCES[0]) for _ in range(4)]
    responses = RESPONSES[:1] * 4
    got = _post(create_app(), "/get_reward", {"query": responses, "prompts": [""] * 4, "labels": labels})
    assert got.status_code == 200
    assert got.json()["rewards"] == [min(max(reference(RESPONSES[0], INSTANCES[0])["overall"], 0.0), 1.0)] * 4
    assert calls == Counter(load=4, compile=4, lint=1)  # loaded and looked up per row (compiled by the cache once), linted once


def test_verify_compiles_and_lints_its_instance_once(calls: Counter[str]) -> None:
    inst = INSTANCES[0]
    payload = {
        "responses_create_params": {"input": []},
        "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": RESPONSES[0]}]}]},
        **inst,
    }
    assert _post(create_app(), "/verify", payload).status_code == 200
    assert calls == Counter(load=1, compile=1, lint=1)


def test_validation_hands_scoring_the_entries_it_compiled(general: None) -> None:
    entries = validate_labels(INSTANCES)
    again = validate_labels(INSTANCES)  # the cache's entries: the same compiled objects
    assert [entry[0] for entry in entries] == [entry[0] for entry in again]
    assert all(a[0] is b[0] for a, b in zip(entries, again, strict=True))


def test_a_decoded_label_is_not_copied_and_a_trainer_row_still_is() -> None:
    import numpy as np

    inst = INSTANCES[0]
    decoded = _common.load_instance(inst, decoded=True)
    assert decoded["annotation_gt"] is inst["annotation_gt"]  # straight from the request body's json.loads
    row = dict(inst, annotation_gt={"type": "bbox_set", "value": np.array([[10, 10, 20, 20]])})
    plain = _common.load_instance(row)
    assert plain["annotation_gt"]["value"] == [[10, 10, 20, 20]] and type(plain["annotation_gt"]["value"]) is list


@pytest.mark.parametrize("as_text", [False, True])
def test_the_lane_takes_each_label_once_and_the_general_path_the_others(monkeypatch: pytest.MonkeyPatch, as_text: bool) -> None:
    """In the native build the common label is validated, compiled and linted in one call (data.quick_compile),
    sent as an object or as JSON text; a label it declines goes the general way, once. In the pure build every
    label goes the general way."""
    from trace_tasks.scoring import native_label_lane

    seen: Counter[str] = Counter()
    lane, compile_cached = server.quick_compile, _common.INSTANCE_CACHE.compile

    def quick(label: Any, skip: Any) -> Any:
        found = lane(label, skip)
        seen["lane" if found is not None else "declined"] += 1
        return found

    def compiled(*args: Any, **kwargs: Any) -> Any:
        seen["compile"] += 1
        return compile_cached(*args, **kwargs)

    monkeypatch.setattr(server, "quick_compile", quick)
    monkeypatch.setattr(_common, "quick_compile", quick)
    monkeypatch.setattr(_common.INSTANCE_CACHE, "compile", compiled)
    monkeypatch.setattr(_common, "_logged_rules", set(WARNING_RULES))  # every rule logged: nothing left to log
    _common.clear_instance_caches()
    labels = [as_json(inst) if as_text else dict(inst) for inst in INSTANCES]
    responses = RESPONSES[: len(INSTANCES)]
    for _ in range(2):  # the second time, a label sent as text is found by its text (the lane's entries too)
        got = _post(create_app(), "/get_reward", {"query": responses, "prompts": [""] * len(labels), "labels": labels})
        assert got.status_code == 200
        assert got.json()["rewards"] == [
            min(max(reference(r, i)["overall"], 0.0), 1.0) for r, i in zip(responses, INSTANCES, strict=True)
        ]
    n = len(labels) * (1 if as_text else 2)
    assert seen["lane"] + seen["declined"] == n and seen["compile"] == seen["declined"]
    assert (seen["lane"] > 0) is (native_label_lane() is not None)
