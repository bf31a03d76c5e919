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

from trace_tasks.integrations import _common
from trace_tasks.integrations.server import create_app, validate_labels

from .helpers import INSTANCES, RESPONSES, as_json, reference


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often a label is loaded, compiled through the cache, and linted."""
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


def test_validation_hands_scoring_the_entries_it_compiled() -> None:
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
