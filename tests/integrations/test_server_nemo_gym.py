"""``POST /verify``: NeMo Gym's resources-server protocol, checked against copies of ``nemo-gym`` 0.7.0.

NeMo Gym 0.7.0 (PyPI ``nemo-gym``) needs Python >= 3.13.14 and ``openai``; it cannot
be installed or run here, so the models and calls below are copied from its
wheel (``nemo_gym-0.7.0-py3-none-any.whl``), each with file and line:

* ``nemo_gym/base_resources_server.py`` l.92-100 ``BaseRunRequest``
  (``responses_create_params``, ``capture_rollout_id`` alias ``_ng_rollout_id``,
  ``exclude=True``), l.103-104 ``BaseVerifyRequest`` (``response``), l.107-137
  ``BaseVerifyResponse`` (``reward``, ``mask_sample``, ``failure_kind``,
  ``failure_reason``; its warning-only validator l.139-148 left out), l.151-164
  ``BaseMultiRewardVerifyResponse`` (``reward_components: dict[str, float]``);
  ``SimpleResourcesServer.setup_webserver`` serves ``verify`` at ``POST /verify`` (l.253-258);
* ``responses_api_agents/simple_agent/app.py`` l.94-99 (the agent's request and
  response models, ``extra="allow"``: the row's own fields travel with them) and
  l.484-492 + l.500 (the call: ``verify_payload = body.model_dump() | {"response":
  model_response_json}``, ``server_client.post(..., url_path="/verify",
  json=verify_payload)``, ``raise_for_status``, ``get_response_json``, then
  ``SimpleAgentVerifyResponse.model_validate(result)``), replayed here with
  httpx for aiohttp (``nemo_gym/server_utils.py`` l.655-684);
* the response object is a real one's envelope from
  ``resources_servers/mcqa/data/example_rollouts.jsonl`` row 1 (its text
  replaced); its ``response`` and ``responses_create_params`` models
  (``NeMoGymResponse``, ``nemo_gym/openai_utils.py`` l.969-971, an ``openai``
  ``Response``; ``NeMoGymResponseCreateParamsNonStreaming`` l.776) need
  ``openai`` and are kept as plain mappings;
* ground truth is the row's own fields, as NeMo Gym's servers read theirs
  (``resources_servers/circle_click/app.py`` l.44-46: ``circles``,
  ``target_color`` declared on the verify request).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from typing import Any, Optional

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from tests.support.live_server import serving
from trace_tasks.integrations._common import CHARTED_KEYS
from trace_tasks.integrations.server import NEMO_GYM_RELEASE, create_app, output_text

from .helpers import INSTANCES, pairs, reference

TOKEN = "gym-token_0123456789abcdef"


# -- copies of nemo-gym 0.7.0's models ---------------------------------------------------------------


class BaseRunRequest(BaseModel):  # nemo_gym/base_resources_server.py l.92-100
    model_config = ConfigDict(populate_by_name=True)

    responses_create_params: dict[str, Any]  # NeMoGymResponseCreateParamsNonStreaming (needs openai here)
    capture_rollout_id: Optional[str] = Field(default=None, alias="_ng_rollout_id", exclude=True)


class BaseVerifyRequest(BaseRunRequest):  # l.103-104
    response: dict[str, Any]  # NeMoGymResponse (openai_utils.py l.969-971)


class BaseVerifyResponse(BaseVerifyRequest):  # l.107-137
    reward: float
    mask_sample: bool = False
    failure_kind: Optional[str] = None
    failure_reason: Optional[str] = None


class BaseMultiRewardVerifyResponse(BaseVerifyResponse):  # l.151-164
    reward_components: dict[str, float]


class SimpleAgentRunRequest(BaseRunRequest):  # responses_api_agents/simple_agent/app.py l.90-91
    model_config = ConfigDict(extra="allow")


class SimpleAgentVerifyResponse(BaseMultiRewardVerifyResponse):  # l.98-99 (on BaseVerifyResponse there)
    model_config = ConfigDict(extra="allow")


# -- a NeMo Gym row and the model's response ----------------------------------------------------------

#: The envelope of resources_servers/mcqa/data/example_rollouts.jsonl row 1's ``response`` at 0.7.0.
RESPONSE_ENVELOPE: dict[str, Any] = {
    "id": "resp_68abdbe771b081a3ab65ccfa318ed7cd06eb0e241a597af4",
    "created_at": 1756093415.0,
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "metadata": {},
    "model": "gpt-4.1-2025-04-14",
    "object": "response",
    "output": [
        {
            "id": "msg_68abdbe7c31c81a38d936b972382b08906eb0e241a597af4",
            "content": [{"annotations": [], "text": "TEXT", "type": "output_text", "logprobs": []}],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        }
    ],
    "parallel_tool_calls": True,
    "temperature": 1.0,
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "status": "completed",
    "usage": {"input_tokens": 254, "output_tokens": 475, "total_tokens": 729},
}


def model_response(text: str) -> dict[str, Any]:
    response = copy.deepcopy(RESPONSE_ENVELOPE)
    response["output"][0]["content"][0]["text"] = text
    return response


def row(inst: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A NeMo Gym dataset row (one JSONL line): the prompt, and the trace instance's fields beside it."""
    prompt = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "How many cats? Box them."}]}]}
    return {"responses_create_params": prompt, **inst, **extra}


def verify_payload(data: dict[str, Any], text: str) -> dict[str, Any]:
    """What the simple agent posts (simple_agent/app.py l.484): its run request dumped, the response added."""
    body = SimpleAgentRunRequest.model_validate(data)
    return body.model_dump() | {"response": model_response(text)}


def post(app: Any, path: str, payload: Any, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:5000", timeout=30) as http:
            return await http.post(path, json=payload, **kwargs)

    return asyncio.run(go())


def expected(
    text: str, inst: dict[str, Any], keys: tuple[str, ...] = CHARTED_KEYS, **options: Any
) -> tuple[float, dict[str, float]]:
    result = reference(text, inst, **options)
    return min(max(result["overall"], 0.0), 1.0), {key: float(result.get(key, 0.0)) for key in keys}


@pytest.fixture(scope="module")
def app() -> Any:
    return create_app()


def test_the_release_is_named() -> None:
    assert NEMO_GYM_RELEASE == "0.7.0"


# -- values -------------------------------------------------------------------------------------------


def test_every_pair_scores_as_the_scorer(app: Any) -> None:
    for text, inst in pairs():
        got = post(app, "/verify", verify_payload(row(inst), text))
        assert got.status_code == 200, got.text
        answer = SimpleAgentVerifyResponse.model_validate(got.json())
        reward, components = expected(text, inst)
        assert answer.reward == reward and answer.reward_components == components
        assert list(answer.reward_components) == list(CHARTED_KEYS)
        assert answer.mask_sample is False and answer.failure_kind is None and answer.failure_reason is None
        # NeMo Gym's metrics read top-level numbers only (base_resources_server.py l.158-160).
        assert all(got.json()[key] == value for key, value in components.items())


def test_the_answer_echoes_the_request_as_nemo_gyms_model_dump_does(app: Any) -> None:
    text, inst = pairs()[0]
    data = row(inst, _ng_rollout_id="rollout-7", task_id="t-1", hashid=12)
    payload = verify_payload(data, text)
    assert "_ng_rollout_id" not in payload  # exclude=True: the agent never sends it...
    got = post(app, "/verify", payload | {"_ng_rollout_id": "rollout-7"}).json()  # ...and when sent, it is not echoed
    assert "_ng_rollout_id" not in got
    assert got["task_id"] == "t-1" and got["hashid"] == 12 and got["annotation_gt"] == inst["annotation_gt"]
    assert got["response"] == payload["response"] and got["responses_create_params"] == payload["responses_create_params"]
    dumped = BaseMultiRewardVerifyResponse.model_validate(got).model_dump()
    assert set(dumped) == {
        "responses_create_params",
        "response",
        "reward",
        "mask_sample",
        "failure_kind",
        "failure_reason",
        "reward_components",
    }


def test_a_row_field_named_like_a_component_is_kept(app: Any) -> None:
    text, inst = pairs()[0]
    got = post(app, "/verify", verify_payload(row(inst, format="jsonl"), text)).json()
    assert got["format"] == "jsonl" and got["reward_components"]["format"] == expected(text, inst)[1]["format"]


def test_options_and_log_keys_are_the_servers() -> None:
    app = create_app(trace_reward_mode="answer", log_keys="all")
    text, inst = pairs()[0]
    got = SimpleAgentVerifyResponse.model_validate(post(app, "/verify", verify_payload(row(inst), text)).json())
    full = reference(text, inst, trace_reward_mode="answer")
    assert got.reward == expected(text, inst, trace_reward_mode="answer")[0]
    assert got.reward_components["overall"] == full["overall"] and "answer_parse_ok" in got.reward_components


def test_image_size_in_the_row_is_read(app: Any) -> None:
    inst = INSTANCES[2]  # a point_set with image_size
    text = '{"answer": "cat", "annotation": [[121, 42], [290, 300]]}'
    got = post(app, "/verify", verify_payload(row(inst), text)).json()
    assert got["reward"] == expected(text, inst)[0]
    assert got["reward"] != expected(text, {k: v for k, v in inst.items() if k != "image_size"})[0]


# -- what the model wrote -----------------------------------------------------------------------------


def test_output_text_joins_the_message_parts_only() -> None:
    response = model_response("A")
    response["output"] = [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "IGNORED"}]},
        {"type": "message", "content": [{"type": "output_text", "text": "A"}, {"type": "refusal", "refusal": "no"}]},
        {"type": "function_call", "name": "click", "arguments": '{"x": 1}', "call_id": "c"},
        {"type": "message", "content": [{"type": "output_text", "text": "B"}]},
    ]
    assert output_text(response) == "AB"


@pytest.mark.parametrize(
    "output",
    [
        [],
        [None],
        ["text"],
        [{"type": "message"}],
        [{"type": "message", "content": "x"}],
        [{"type": "message", "content": [{"type": "output_text", "text": 5}]}],
    ],
)
def test_a_malformed_output_scores_as_the_empty_response(app: Any, output: list[Any]) -> None:
    text, inst = pairs()[0]
    payload = verify_payload(row(inst), text)
    payload["response"]["output"] = output
    got = post(app, "/verify", payload)
    assert got.status_code == 200 and got.json()["reward"] == expected("", inst)[0]


# -- refusals: the same as /get_reward ----------------------------------------------------------------


def test_a_broken_instance_is_refused_with_every_problem(app: Any, caplog: pytest.LogCaptureFixture) -> None:
    text = pairs()[0][0]
    broken = dict(INSTANCES[1], annotation_gt={"type": "bbox", "value": [10, 10, 10, 10]})  # zero area
    with caplog.at_level(logging.ERROR, logger="trace_tasks.integrations.server"):
        got = post(app, "/verify", verify_payload(row(broken), text))
    assert got.status_code == 422
    body = got.json()
    assert body["detail"].startswith("the row's trace instance") and body["problems"][0]["path"].startswith("$.annotation_gt")
    assert any(record.levelno == logging.ERROR and "broken trace instances" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    "change,detail",
    [
        ({"responses_create_params": None}, "responses_create_params"),
        ({"response": {"id": "r"}}, '"response" must be a Responses API response'),
        ({"response": "text"}, '"response" must be a Responses API response'),
        ({"answer_gt": None, "annotation_gt": None}, "lacks"),
    ],
)
def test_a_request_of_the_wrong_shape_gets_422(app: Any, change: dict[str, Any], detail: str) -> None:
    text, inst = pairs()[0]
    payload = {key: value for key, value in (verify_payload(row(inst), text) | change).items() if value is not None}
    got = post(app, "/verify", payload)
    assert got.status_code == 422 and detail in got.json()["detail"]


def test_not_json_and_not_an_object(app: Any) -> None:
    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:5000") as http:
            bad = await http.post("/verify", content=b"{", headers={"content-type": "application/json"})
            listed = await http.post("/verify", json=[1])
            return [bad, listed]

    bad, listed = asyncio.run(go())
    assert bad.status_code == 400 and listed.status_code == 422


def test_the_token_bounds_and_host_checks_cover_verify() -> None:
    text, inst = pairs()[0]
    payload = verify_payload(row(inst), text)
    guarded = create_app(token=TOKEN, max_request_bytes=64 * 1024)
    assert post(guarded, "/verify", payload).status_code == 401
    assert post(guarded, "/verify/", payload, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert post(guarded, "/verify", payload, params={"token": TOKEN}).status_code == 200
    big = payload | {"padding": "x" * (65 * 1024)}
    assert post(guarded, "/verify", big, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 413
    assert post(create_app(), "/verify", payload, headers={"host": "rm-node:5000"}).status_code == 403
    assert post(create_app(allowed_hosts=["rm-node"]), "/verify", payload, headers={"host": "rm-node:5000"}).status_code == 200


# -- the agent's call, replayed against a real server --------------------------------------------------


def test_the_simple_agents_call_against_a_live_server() -> None:
    """simple_agent/app.py l.484-492 and l.500, with httpx for aiohttp; the row as NeMo Gym's JSONL holds it."""
    cases = pairs()[:6]
    with serving(create_app()) as (url, _):

        async def run(data: dict[str, Any], text: str) -> SimpleAgentVerifyResponse:
            body = SimpleAgentRunRequest.model_validate(data)
            verify = body.model_dump() | {"response": model_response(text)}
            async with httpx.AsyncClient(timeout=30) as http:
                response = await http.post(f"{url}/verify", json=verify)
                response.raise_for_status()  # raise_for_status (server_utils.py l.655-664)
                result = json.loads(response.content)  # get_response_json (l.683-684, orjson there)
            return SimpleAgentVerifyResponse.model_validate(result)

        for text, inst in cases:
            data = json.loads(json.dumps(row(inst)))  # one JSONL line, read back
            answer = asyncio.run(run(data, text))
            assert (answer.reward, answer.reward_components) == expected(text, inst)


def test_the_answers_keys_come_in_a_fixed_order(app: Any) -> None:
    """The request's fields in its order (less the rollout id), the components it has no field for, then the
    verify fields, with a row field named like one of those replaced where it stands."""
    text, inst = pairs()[0]
    payload = verify_payload(row(inst, format="jsonl", task_id="t-1"), text)
    payload = {"reward": "row's", **payload, "_ng_rollout_id": "r"}
    got = post(app, "/verify", payload).json()
    request = [name for name in payload if name != "_ng_rollout_id"]
    components = [key for key in CHARTED_KEYS if key not in payload]
    tail = ["reward_components", "mask_sample", "failure_kind", "failure_reason"]
    assert list(got) == request + components + tail
    assert got["reward"] == expected(text, inst)[0] and got["format"] == "jsonl"
