"""The reward server refuses broken labels with 422 and every problem (httpx against the ASGI app, in-process).

The cases are the table of ``tests/core/test_instances.py``. A batch holding one
broken label is refused as a whole, before anything is scored: scoring the rest
would hand the trainer rewards for a batch it cannot use.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import httpx
import pytest

import trace_plugins_bbox.plugin
from trace_tasks import plugins
from trace_tasks.integrations import server
from trace_tasks.integrations.server import create_app
from trace_tasks.plugins import _registry as registry_module

from ..core.test_instances import BROKEN, GOOD_RESPONSE, Case, good_instance
from .helpers import reference


class Client:
    """Requests to the app in this process (no socket, no server thread)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
                return await http.request(method, path, **kwargs)

        return asyncio.run(go())

    def get(self, path: str) -> httpx.Response:
        return self.request("GET", path)


@pytest.fixture(scope="module")
def client() -> Client:
    return Client(create_app(format_weight=0.1))


def _post(client: Client, labels: list[Any], responses: list[str] | None = None) -> httpx.Response:
    responses = responses if responses is not None else [GOOD_RESPONSE] * len(labels)
    body = json.dumps({"query": responses, "prompts": [""] * len(labels), "labels": labels})  # Infinity allowed
    return client.request("POST", "/get_reward", content=body, headers={"content-type": "application/json"})


def _label(instance: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in instance.items() if k != "id"}


#: Labels are read as the trainers' rows are (``integrations._common.load_instance``): other
#: dataset columns are not the instance's and are ignored, and a row without a required
#: field is no instance at all (422 with the reader's own message).
LABEL_RULES = {"unknown-field", "missing-field"}
LABEL_CASES = [case for case in BROKEN if case.name not in LABEL_RULES]


def test_labels_are_read_like_trainer_rows(client: Client) -> None:
    extra = _label(BROKEN_BY_NAME["unknown-field"].instance())
    assert _post(client, [extra]).status_code == 200
    got = _post(client, [_label(good_instance()), _label(BROKEN_BY_NAME["missing-field"].instance())])
    said = (
        "labels[1] lacks ['annotation_gt']; a trace instance needs ['answer_gt', 'annotation_gt', 'reward_contract'] "
        "(answer_gt may be null only for the annotation_only mode)"
    )
    assert got.status_code == 422 and got.json()["detail"] == f"invalid instance: $: {said}"
    assert got.json()["problems"] == [{"label": 1, "path": "$", "message": said}]


def test_labels_that_are_no_instance_are_listed_with_the_others_and_logged(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    # The first label that was no instance at all was the whole answer: the others' problems were hidden,
    # and nothing was logged at ERROR (OpenRLHF never shows the answer's detail).
    zero_area = good_instance()
    zero_area["annotation_gt"] = {"type": "bbox", "value": [0, 0, 0, 10]}
    missing = _label(good_instance())
    del missing["reward_contract"]
    with caplog.at_level(logging.ERROR):
        got = _post(client, [_label(zero_area), "{nope", missing, 7])
    assert got.status_code == 422
    labels = [problem["label"] for problem in got.json()["problems"]]
    assert sorted(set(labels)) == [0, 1, 2, 3]
    assert any("labels[1] is a string but not JSON" in problem["message"] for problem in got.json()["problems"])
    assert [r for r in caplog.records if r.levelno == logging.ERROR and "broken trace instances" in r.getMessage()]


BROKEN_BY_NAME = {case.name: case for case in BROKEN}


@pytest.mark.parametrize("case", LABEL_CASES, ids=lambda case: case.name)
def test_a_broken_label_gets_422_with_its_problems(client: Client, case: Case) -> None:
    got = _post(client, [_label(good_instance()), _label(case.instance()), _label(good_instance())])
    assert got.status_code == 422, got.text
    body = got.json()
    assert body["detail"].startswith("labels[1]: invalid instance: ")
    assert f"{case.path}: " in body["detail"] and case.message in body["detail"]
    assert {p["label"] for p in body["problems"]} == {1}
    assert any(p["path"] == case.path and case.message in p["message"] for p in body["problems"])


@pytest.mark.parametrize("case", LABEL_CASES[:4], ids=lambda case: case.name)
def test_a_label_given_as_a_json_string_is_validated_too(client: Client, case: Case) -> None:
    got = _post(client, [json.dumps(_label(case.instance()))])
    assert got.status_code == 422 and case.message in got.json()["detail"]


def test_every_broken_label_is_listed(client: Client) -> None:
    labels = [_label(case.instance()) for case in LABEL_CASES] + [_label(good_instance())]
    got = _post(client, labels)
    assert got.status_code == 422
    body = got.json()
    assert {p["label"] for p in body["problems"]} == set(range(len(LABEL_CASES)))
    named = min(len(LABEL_CASES), server.MAX_LABELS_IN_DETAIL)
    for i in range(len(LABEL_CASES)):
        assert (f"labels[{i}]: invalid instance: " in body["detail"]) == (i < named)
    if len(LABEL_CASES) > named:
        assert body["detail"].endswith(f"; and {len(LABEL_CASES) - named} more broken labels")


def test_a_request_of_many_broken_labels_gets_a_bounded_answer(client: Client) -> None:
    # 77,669 broken labels in 16 MB were answered with 143 MB (every problem, each label in the detail).
    labels = [_label(BROKEN_BY_NAME["zero-area-box"].instance())] * 3000
    got = _post(client, labels)
    body = got.json()
    assert got.status_code == 422 and len(body["problems"]) == server.MAX_PROBLEMS_LISTED
    assert body["problems_omitted"] == 3000 - server.MAX_PROBLEMS_LISTED
    assert len(got.content) < 400_000


def test_good_labels_still_score_exactly_as_before(client: Client) -> None:
    good = _label(good_instance())
    responses = [GOOD_RESPONSE, "2", '{"answer": 2, "annotation": [0, 0, 5, 10]}', ""]
    got = _post(client, [good, json.dumps(good), {**good, "dataset_column": 1}, good], responses)
    assert got.status_code == 200, got.text
    assert got.json()["rewards"] == [reference(r, good, format_weight=0.1)["overall"] for r in responses]
    assert client.get("/health").status_code == 200


def test_a_missing_family_is_a_deployment_error(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = plugins.build_registry([("bbox", trace_plugins_bbox.plugin.family)], load_entry_points=False)
    monkeypatch.setattr(registry_module, "_current", registry)
    label = _label(good_instance())
    label["annotation_gt"] = {"type": "point", "value": [1, 2]}
    label["reward_contract"]["annotation"] = {"id": "point_soft_distance_v0", "type": "point"}
    got = _post(client, [label])
    assert got.status_code == 500
    assert "pip install trace-plugins-point" in got.json()["detail"]
