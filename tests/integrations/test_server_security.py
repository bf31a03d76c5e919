"""What a web page in the user's browser cannot make the reward server do (issue 37, items 11-13).

Loopback is no boundary against the browser on the same machine: a page can send
a "simple" cross-site POST (``text/plain`` body, no preflight) to
``http://127.0.0.1:5000/get_reward``, or rebind its own host name's DNS to
127.0.0.1 and call the server as ``Host: attacker.example``. Trainers' clients
send JSON, no ``Origin``, and the ``Host`` of the URL they were given:

* OpenRLHF 0.11.2 ``openrlhf/utils/agent.py`` l.350-351:
  ``aiohttp.ClientSession(...)`` then ``session.post(url, json=data)``
  (``Content-Type: application/json``, no ``Origin``);
* OpenRLHF 0.9.0 ``openrlhf/utils/remote_rm_utils.py`` l.12-17:
  ``requests.post(url=url, json=data, headers={"Content-Type": "application/json"}, timeout=180)``.

Both are replayed against a real uvicorn below (the token tests replay them with a token).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests

from tests.support.live_server import serving
from trace_tasks.integrations import server as server_module
from trace_tasks.integrations.server import ALLOWED_HOSTS_ENV, BodyLimit, RequestHeadTimeout, create_app, strip_token

from .helpers import pairs, reference

TOKEN = "s3cret-token_0123456789.~"


def _payload() -> dict[str, Any]:
    (response, inst) = pairs()[0]
    return {"query": [response], "prompts": [""], "labels": [inst]}


def _expected() -> list[float]:
    (response, inst) = pairs()[0]
    return [reference(response, inst)["overall"]]


def _request(app: Any, method: str, path: str, base_url: str = "http://127.0.0.1:5000", **kwargs: Any) -> httpx.Response:
    """A request to the ASGI app in this process; ``scope["server"]`` is ``base_url``'s host and port, as uvicorn's is."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url, timeout=30) as http:
            return await http.request(method, path, **kwargs)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def open_app() -> BodyLimit:
    app: BodyLimit = create_app()
    return app


# -- 11: the token never reaches the access log ------------------------------------------------------


@pytest.mark.parametrize("name", ["token", "TOKEN", "Token", "%74oken", "%54OKEN", "%2574oken", "tok%65n", "token "])
def test_every_spelling_of_the_token_parameter_is_taken_out(name: str) -> None:
    kept, found = strip_token(f"a=1&{name}={TOKEN}&b=%20x".encode())
    assert kept == b"a=1&b=%20x" and found == [TOKEN.encode()]


def test_other_parameters_keep_their_bytes() -> None:
    assert strip_token(b"a=1&tokens=2&my_token=3&x") == (b"a=1&tokens=2&my_token=3&x", [])


@pytest.mark.slow  # a real uvicorn on a loopback port, its access log captured
@pytest.mark.parametrize("name", ["token", "TOKEN", "Token", "%74oken"])
def test_the_token_never_reaches_the_access_log(name: str) -> None:
    records: list[logging.LogRecord] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    access = logging.getLogger("uvicorn.access")
    capture = Capture(logging.INFO)
    with serving(create_app(token=TOKEN), http=RequestHeadTimeout) as (url, _):
        level = access.level
        access.setLevel(logging.INFO)  # serving() configures uvicorn at WARNING
        access.addHandler(capture)
        try:
            got = httpx.post(f"{url}/get_reward?a=1&{name}={TOKEN}", json=_payload(), timeout=30)
            wrong = httpx.post(f"{url}/get_reward?{name}=x{TOKEN}", json=_payload(), timeout=30)
        finally:
            access.removeHandler(capture)
            access.setLevel(level)
    assert got.status_code == 200 and wrong.status_code == 401
    lines = [record.getMessage() for record in records]
    assert len(lines) == 2 and all("/get_reward" in line for line in lines), lines
    assert not any(TOKEN in line or "oken=" in line.lower() for line in lines), lines


# -- 12: a web page cannot drive it ----------------------------------------------------------------


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:5000", "127.0.0.1.attacker.example:5000", "[::2]:5000"])
def test_a_foreign_host_is_refused(open_app: BodyLimit, host: str) -> None:
    got = _request(open_app, "POST", "/get_reward", json=_payload(), headers={"host": host})
    assert got.status_code == 403 and "is not an address this server answers to" in got.json()["detail"]
    assert _request(open_app, "GET", "/health", headers={"host": host}).status_code == 403  # DNS rebinding reads too


@pytest.mark.parametrize("host", ["127.0.0.1:5000", "127.0.0.1", "localhost:5000", "LOCALHOST"])
def test_the_served_address_and_localhost_are_answered(open_app: BodyLimit, host: str) -> None:
    got = _request(open_app, "POST", "/get_reward", json=_payload(), headers={"host": host})
    assert got.status_code == 200 and got.json()["rewards"] == _expected()


def test_localhost_only_when_the_server_is_on_loopback(open_app: BodyLimit) -> None:
    # Served on 10.0.0.5 (scope["server"]), a Host of 10.0.0.5 is answered, "localhost" is not.
    base = "http://10.0.0.5:5000"
    assert _request(open_app, "GET", "/health", base_url=base).status_code == 200
    assert _request(open_app, "GET", "/health", base_url=base, headers={"host": "localhost:5000"}).status_code == 403


def test_allowed_hosts_admit_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    named = create_app(allowed_hosts=["rm-node", "RM.example"])
    for host in ("rm-node:5000", "rm.example", "127.0.0.1:5000"):
        assert _request(named, "POST", "/get_reward", json=_payload(), headers={"host": host}).status_code == 200
    assert _request(named, "GET", "/health", headers={"host": "other:5000"}).status_code == 403
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "rm-node, gpu-7")  # what `trace-tasks serve`'s workers read
    from_env = create_app()
    assert _request(from_env, "GET", "/health", headers={"host": "gpu-7:5000"}).status_code == 200
    assert _request(create_app(allowed_hosts=["*"]), "GET", "/health", headers={"host": "any.example"}).status_code == 200


@pytest.mark.parametrize("bad", ["rm-node", [""], [3]])
def test_allowed_hosts_must_be_a_list_of_names(bad: Any) -> None:
    with pytest.raises(ValueError, match="allowed_hosts must be a list of non-empty names"):
        create_app(allowed_hosts=bad)


def test_with_a_token_the_token_is_the_boundary() -> None:
    # A page does not know the token; a cluster calls the server by its host name.
    guarded = create_app(token=TOKEN)
    got = _request(guarded, "POST", f"/get_reward?token={TOKEN}", json=_payload(), headers={"host": "rm-node:5000"})
    assert got.status_code == 200
    pinned = create_app(token=TOKEN, allowed_hosts=["rm-node"])  # allowed_hosts given: checked as well
    assert _request(pinned, "POST", f"/get_reward?token={TOKEN}", json=_payload(), headers={"host": "x:5000"}).status_code == 403


@pytest.mark.parametrize("origin", ["https://attacker.example", "null", "http://127.0.0.1:5000"])
def test_a_cross_origin_request_is_refused(open_app: BodyLimit, origin: str) -> None:
    got = _request(open_app, "POST", "/get_reward", json=_payload(), headers={"origin": origin})
    assert got.status_code == 403 and "cross-origin requests are refused" in got.json()["detail"]
    guarded = create_app(token=TOKEN)  # a token in the page's URL does not help it either
    assert _request(guarded, "POST", f"/get_reward?token={TOKEN}", json=_payload(), headers={"origin": origin}).status_code == 403


def test_allowed_origins_admit_one() -> None:
    app = create_app(allowed_origins=["https://dashboard.example"])
    headers = {"origin": "https://dashboard.example"}
    assert _request(app, "POST", "/get_reward", json=_payload(), headers=headers).status_code == 200
    assert _request(app, "POST", "/get_reward", json=_payload(), headers={"origin": "https://x.example"}).status_code == 403


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_simple_request_body_needs_the_token(open_app: BodyLimit, content_type: str) -> None:
    body = json.dumps(_payload())
    got = _request(open_app, "POST", "/get_reward", content=body, headers={"content-type": content_type})
    assert got.status_code == 415 and "must be JSON" in got.json()["detail"]
    guarded = create_app(token=TOKEN)
    headers = {"content-type": content_type, "authorization": f"Bearer {TOKEN}"}
    assert _request(guarded, "POST", "/get_reward", content=body, headers=headers).json()["rewards"] == _expected()
    assert _request(guarded, "POST", "/get_reward", content=body, headers={"content-type": content_type}).status_code in (
        401,
        415,
    )


def test_json_content_types_are_served(open_app: BodyLimit) -> None:
    body = json.dumps(_payload())
    for kind in ("application/json", "application/json; charset=utf-8", "application/vnd.api+json"):
        assert _request(open_app, "POST", "/get_reward", content=body, headers={"content-type": kind}).status_code == 200


@pytest.fixture(scope="module")
def open_url() -> Iterator[str]:
    with serving(create_app(), http=RequestHeadTimeout) as (url, _):
        yield url


@pytest.mark.slow  # a real uvicorn on a loopback port
def test_openrlhf_clients_still_work_without_a_token(open_url: str) -> None:
    async def post_0_11(url: str, data: dict[str, Any]) -> Any:  # agent.py l.350-353 (httpx for aiohttp)
        async with httpx.AsyncClient(timeout=180) as session:
            response = await session.post(url, json=data)
            response.raise_for_status()
            return response.json()

    assert asyncio.run(post_0_11(f"{open_url}/get_reward", _payload()))["rewards"] == _expected()
    headers = {"Content-Type": "application/json"}  # remote_rm_utils.py l.12-17
    got = requests.post(url=f"{open_url}/get_reward", json=_payload(), headers=headers, timeout=180)
    got.raise_for_status()
    assert got.json()["rewards"] == _expected()


@pytest.mark.slow  # a real uvicorn on a loopback port
def test_a_browser_style_request_to_the_live_server_is_refused(open_url: str) -> None:
    body = json.dumps(_payload())
    rebound = httpx.post(f"{open_url}/get_reward", content=body, headers={"host": "attacker.example:5000"}, timeout=30)
    simple = httpx.post(f"{open_url}/get_reward", content=body, headers={"content-type": "text/plain"}, timeout=30)
    cross = httpx.post(f"{open_url}/get_reward", json=_payload(), headers={"origin": "https://attacker.example"}, timeout=30)
    assert (rebound.status_code, simple.status_code, cross.status_code) == (403, 415, 403)


# -- 13: a trailing slash is served, never redirected without the token ----------------------------


def test_a_trailing_slash_is_served_not_redirected() -> None:
    guarded = create_app(token=TOKEN)
    got = _request(guarded, "POST", f"/get_reward/?token={TOKEN}", json=_payload(), follow_redirects=False)
    assert got.status_code == 200 and got.json()["rewards"] == _expected()
    assert _request(guarded, "GET", "/health/", follow_redirects=False).status_code == 200
    assert _request(guarded, "POST", "/get_reward/", json=_payload(), follow_redirects=False).status_code == 401
    other = _request(guarded, "GET", f"/docs/?token={TOKEN}", follow_redirects=False)
    assert other.status_code == 404  # no redirect anywhere: it would drop the token


# -- 40: a refusal's printed line carries its level ------------------------------------------------


def test_a_refused_label_prints_an_error_line_on_an_unconfigured_server(
    open_app: BodyLimit, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = server_module.log
    monkeypatch.setattr(log, "propagate", False)  # no handler on the chain: uvicorn configures none for us
    monkeypatch.setattr(log, "handlers", [])
    (response, inst) = pairs()[0]
    broken = {**inst, "reward_contract": {**inst["reward_contract"], "reward_contract_version": "v9"}}
    payload = {"query": [response], "prompts": [""], "labels": [broken]}
    got = _request(open_app, "POST", "/get_reward", json=payload)
    assert got.status_code == 422
    assert capsys.readouterr().err.startswith("ERROR trace_tasks.integrations.server: trace_tasks serve: 422")
