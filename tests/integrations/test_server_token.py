"""The reward server's shared-secret token, and ``trace-tasks serve``'s refusal to expose a server without one.

What OpenRLHF's remote reward clients send (read from the released wheels,
``pip download openrlhf==0.11.2 --no-deps``, and 0.9.0 likewise):

* OpenRLHF 0.11.2 ``openrlhf/utils/agent.py`` l.347-362 (``_post_request``):
  ``aiohttp.ClientSession(timeout=timeout)`` (l.350, ``ClientTimeout(total=180)``
  l.331) and ``session.post(url, json=data)`` (l.351): no header of the caller's,
  only aiohttp's own (``Content-Type: application/json`` for ``json=``);
  ``raise_for_status()`` (l.352), so a 401 is an ``aiohttp.ClientError``, logged at
  INFO (l.354-355) and retried 5 times, 1 s apart (l.348, l.358). The URL is the
  ``--reward.remote_url`` value (``cli/train_ppo_ray.py`` l.558) split at commas
  (l.673-674), used as given.
* OpenRLHF 0.9.0 ``openrlhf/utils/remote_rm_utils.py`` l.10-27
  (``request_api_wrapper``): ``headers = {"Content-Type": "application/json"}``
  (l.12-14), ``requests.post(url=url, json=data, headers=headers, timeout=180)``
  (l.17), ``raise_for_status()`` (l.18). The URL is ``--remote_rm_url`` split at
  commas (``cli/train_ppo_ray.py`` l.491-492).

Neither can send an ``Authorization`` header, so the token also travels in the
URL: ``--reward.remote_url 'http://host:5000/get_reward?token=TOKEN'``. Other
clients send ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import requests
import uvicorn

from tests.support.live_server import serving
from trace_tasks.cli import main
from trace_tasks.cli.serve import is_loopback
from trace_tasks.integrations import server as server_module
from trace_tasks.integrations.server import CONFIG_ENV, TOKEN_ENV, BodyLimit, RequestHeadTimeout, create_app

from .helpers import pairs, reference

TOKEN = "s3cret-token_0123456789.~"


def _payload() -> dict[str, Any]:
    (response, inst) = pairs()[0]
    return {"query": [response], "prompts": [""], "labels": [inst]}


def _expected() -> list[float]:
    (response, inst) = pairs()[0]
    return [reference(response, inst)["overall"]]


def _request(app: Any, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", timeout=30) as http:
            return await http.request(method, path, **kwargs)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def guarded() -> BodyLimit:
    app: BodyLimit = create_app(token=TOKEN)
    return app


@pytest.mark.parametrize(
    "path,headers",
    [
        ("/get_reward", {}),
        ("/get_reward", {"authorization": "Bearer wrong-token-0123456789"}),
        ("/get_reward", {"authorization": f"Bearer {TOKEN}x"}),
        ("/get_reward", {"authorization": f"Basic {TOKEN}"}),
        ("/get_reward", {"x-token": TOKEN}),
        ("/get_reward?token=wrong-token-0123456789", {}),
        (f"/get_reward?token={TOKEN[:-1]}", {}),
        (f"/get_reward?tok={TOKEN}", {}),
        ("/get_reward?token=", {}),
    ],
)
def test_a_missing_or_wrong_token_gets_401(guarded: BodyLimit, path: str, headers: dict[str, str]) -> None:
    got = _request(guarded, "POST", path, json=_payload(), headers=headers)
    assert got.status_code == 401
    assert got.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer TOKEN" in got.json()["detail"] and "?token=TOKEN" in got.json()["detail"]


@pytest.mark.parametrize(
    "path,headers",
    [
        ("/get_reward", {"authorization": f"Bearer {TOKEN}"}),
        ("/get_reward", {"authorization": f"bearer {TOKEN}"}),
        (f"/get_reward?token={TOKEN}", {}),
        (f"/get_reward?token=wrong-token-0123456789&token={TOKEN}", {}),
        ("/get_reward?token=wrong-token-0123456789", {"authorization": f"Bearer {TOKEN}"}),
    ],
)
def test_the_right_token_is_served(guarded: BodyLimit, path: str, headers: dict[str, str]) -> None:
    got = _request(guarded, "POST", path, json=_payload(), headers=headers)
    assert got.status_code == 200, got.text
    assert got.json()["rewards"] == _expected()


def test_health_needs_no_token_and_the_rest_does(guarded: BodyLimit) -> None:
    assert _request(guarded, "GET", "/health").status_code == 200
    assert _request(guarded, "GET", "/openapi.json").status_code == 401
    assert _request(guarded, "GET", "/docs").status_code == 401
    assert _request(guarded, "GET", "/openapi.json", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_token_is_checked_before_any_body_byte_is_read() -> None:
    guard = create_app(token=TOKEN)
    pulled: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        pulled.append(1)
        await asyncio.sleep(3600)  # never sends: a 401 must not wait for it
        yield b""

    got = _request(guard, "POST", "/get_reward", content=body(), headers={"content-length": "100"})
    assert got.status_code == 401 and got.headers["connection"] == "close"
    assert pulled == [] and guard.inflight == 0 and guard.uploads == {}


def test_the_token_is_taken_out_of_the_query_the_server_logs() -> None:
    # uvicorn's access log prints the path and query of the very scope the app received.
    seen: list[bytes] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["query_string"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = BodyLimit(inner, max_bytes=100, token=TOKEN)
    assert _request(guard, "POST", f"/get_reward?a=1&token={TOKEN}&b=2", content=b"{}").status_code == 200
    open_guard = BodyLimit(inner, max_bytes=100)  # no token configured: a client's token is not logged either
    assert _request(open_guard, "POST", f"/get_reward?token={TOKEN}", content=b"{}").status_code == 200
    assert seen == [b"a=1&b=2", b""]


@pytest.mark.parametrize("token", ["short", "has space in it 0123", "comma,0123456789abcdef", "ünïcode-0123456789", "", 12345])
def test_an_unusable_token_is_refused_at_start(token: Any) -> None:
    with pytest.raises(ValueError, match="token must be 16 or more characters"):
        create_app(token=token)


# -- OpenRLHF's clients against a real server ----------------------------------------------------------


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serving(create_app(token=TOKEN), http=RequestHeadTimeout) as (url, _):
        yield url


async def _post_request_0_11(url: str, data: dict[str, Any], try_max_times: int = 5) -> Any:
    """OpenRLHF 0.11.2 agent.py l.347-362, with httpx for aiohttp (not installed): json=, no header of ours."""
    for _ in range(try_max_times):
        try:
            async with httpx.AsyncClient(timeout=180) as session:  # l.331, l.350: ClientTimeout(total=180)
                response = await session.post(url, json=data)  # l.351
                response.raise_for_status()  # l.352
                return response.json()  # l.353
        except httpx.HTTPError:  # l.354-355: logged at INFO
            pass
        await asyncio.sleep(1)  # l.358
    raise RuntimeError(f"Request error for {try_max_times} times, returning None. Please check the API server.")


def _request_api_wrapper_0_9(url: str, data: dict[str, Any]) -> Any:
    """OpenRLHF 0.9.0 remote_rm_utils.py l.12-19 (one try: l.15-25 retry the same call)."""
    headers = {
        "Content-Type": "application/json",
    }
    response = requests.post(url=url, json=data, headers=headers, timeout=180)  # l.17
    response.raise_for_status()  # l.18
    return response.json()  # l.19


@pytest.mark.slow  # a real uvicorn on a loopback port
def test_openrlhf_0_11_2_sends_the_token_in_its_remote_url(base_url: str) -> None:
    # --reward.remote_url 'http://127.0.0.1:5000/get_reward?token=TOKEN': split at commas (train_ppo_ray.py l.673-674).
    (url,) = f"{base_url}/get_reward?token={TOKEN}".split(",")
    got = asyncio.run(_post_request_0_11(url, _payload()))
    assert got["rewards"] == _expected()
    with pytest.raises(RuntimeError, match="Request error for 1 times"):  # without it: 401, which it retries, then gives up
        asyncio.run(_post_request_0_11(f"{base_url}/get_reward", _payload(), try_max_times=1))


@pytest.mark.slow  # a real uvicorn on a loopback port
def test_openrlhf_0_9_0_sends_the_token_in_its_remote_rm_url(base_url: str) -> None:
    (url,) = f"{base_url}/get_reward?token={TOKEN}".split(",")  # train_ppo_ray.py l.491-492
    assert _request_api_wrapper_0_9(url, _payload())["rewards"] == _expected()
    with pytest.raises(requests.HTTPError, match="401"):
        _request_api_wrapper_0_9(f"{base_url}/get_reward", _payload())


@pytest.mark.slow  # a real uvicorn on a loopback port
def test_other_clients_send_a_bearer_header(base_url: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    got = httpx.post(f"{base_url}/get_reward", json=_payload(), headers=headers, timeout=30)
    assert got.status_code == 200 and got.json()["rewards"] == _expected()
    assert httpx.post(f"{base_url}/get_reward", json=_payload(), timeout=30).status_code == 401
    assert httpx.get(f"{base_url}/health", timeout=30).status_code == 200


@pytest.mark.slow  # a real `trace-tasks serve` process
def test_cli_serve_reads_the_token_from_the_environment() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # uvicorn binds it again; a race with another process here is unlikely
    command = [sys.executable, "-m", "trace_tasks.cli", "serve", "--port", str(port), "--log-level", "warning"]
    env = {**os.environ, TOKEN_ENV: TOKEN}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "exited"
            assert time.monotonic() < deadline, "serve did not come up"
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        assert _request_api_wrapper_0_9(f"{url}/get_reward?token={TOKEN}", _payload())["rewards"] == _expected()
        assert httpx.post(f"{url}/get_reward", json=_payload(), timeout=30).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- trace-tasks serve: who may start a server without a token -----------------------------------------


@pytest.fixture
def fake_uvicorn(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``uvicorn.run`` recorded instead of run; the environment ``serve`` writes is restored afterwards."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append({"app": app, **kwargs}))
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    return calls


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    return err.strip()


def test_a_network_host_without_a_token_refuses_to_start(
    fake_uvicorn: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("trace-tasks serve: error: --host 0.0.0.0 can be reached from other machines: set a token")
    assert "--token TOKEN" in line and TOKEN_ENV in line and "--insecure-no-token" in line
    assert fake_uvicorn == []


@pytest.mark.parametrize(
    "extra,env,token",
    [
        (["--insecure-no-token"], None, None),
        (["--token", TOKEN], None, TOKEN),
        ([], TOKEN, TOKEN),
        (["--token", TOKEN], "other-token-0123456789", TOKEN),  # the flag wins
    ],
)
def test_a_network_host_starts_with_a_token_or_the_explicit_override(
    fake_uvicorn: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, extra: list[str], env: str | None, token: str | None
) -> None:
    if env is not None:
        monkeypatch.setenv(TOKEN_ENV, env)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0", *extra]) == 0
    (call,) = fake_uvicorn
    assert call["host"] == "0.0.0.0" and call["http"] is RequestHeadTimeout
    assert call["timeout_keep_alive"] == server_module.DEFAULT_HEADER_TIMEOUT_SECONDS
    config = json.loads(os.environ[CONFIG_ENV])
    assert config["token"] == token
    assert config["body_timeout_seconds"] == server_module.DEFAULT_BODY_TIMEOUT_SECONDS
    assert config["max_client_uploads"] == server_module.DEFAULT_MAX_CLIENT_UPLOADS


def test_loopback_needs_no_token_and_the_limits_reach_the_workers(fake_uvicorn: list[dict[str, Any]]) -> None:
    argv = ["serve", "--port", "0", "--body-timeout", "2.5", "--header-timeout", "3", "--max-client-uploads", "0"]
    assert main(argv) == 0
    (call,) = fake_uvicorn
    assert call["host"] == "127.0.0.1" and call["timeout_keep_alive"] == 3
    config = json.loads(os.environ[CONFIG_ENV])
    assert config["token"] is None and config["body_timeout_seconds"] == 2.5 and config["max_client_uploads"] is None
    guard = server_module.app_from_env()  # what each worker builds
    assert guard.body_timeout_seconds == 2.5 and guard.max_client_uploads is None


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--token", "short"], "token must be 16 or more characters"),
        (["--body-timeout", "0"], "body_timeout_seconds"),
        (["--header-timeout", "0"], "--header-timeout"),
        (["--max-client-uploads", "-1"], "--max-client-uploads"),
    ],
)
def test_bad_limits_and_tokens_are_one_line_and_exit_2(
    fake_uvicorn: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["serve", "--port", "0", *argv]) == 2
    assert message in _one_line(capsys.readouterr().err)
    assert fake_uvicorn == []


@pytest.mark.parametrize(
    "host,loopback",
    [("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("example.org", False)],
)  # fmt: skip
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_allowed_host_flags_reach_the_workers(fake_uvicorn: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    # A tokenless server on the network called as http://rm-node:PORT gets 403 until the name is allowed.
    argv = ["serve", "--host", "0.0.0.0", "--port", "0", "--insecure-no-token"]
    assert main([*argv, "--allowed-host", "rm-node", "--allowed-host", "rm-node.cluster"]) == 0
    config = json.loads(os.environ[CONFIG_ENV])
    assert config["allowed_hosts"] == ["rm-node", "rm-node.cluster"]
    app = server_module.app_from_env()  # what each uvicorn worker builds
    for host, status in [("rm-node:5000", 200), ("rm-node.cluster", 200), ("other-node:5000", 403)]:
        assert _health_status(app, host) == status, host
    monkeypatch.setenv(server_module.ALLOWED_HOSTS_ENV, "gpu-7")
    assert main(argv) == 0  # without the flag the workers read the environment variable
    assert "allowed_hosts" not in json.loads(os.environ[CONFIG_ENV])
    assert _health_status(server_module.app_from_env(), "gpu-7:5000") == 200
    assert main([*argv, "--allowed-host", ""]) == 2  # an empty name is a mistake, said before starting


def _health_status(app: Any, host: str) -> int:
    async def go() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://10.0.0.5:5000") as http:
            return (await http.get("/health", headers={"host": host})).status_code

    return asyncio.run(go())
