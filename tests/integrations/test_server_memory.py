"""The reward server bounds the request bytes it holds at once (in-process: httpx against the ASGI app).

Eight concurrent 15 MB bodies once took ``trace-tasks serve`` to 537 MB: every
body is read, then parsed into Python objects several times its size, while
the others wait for the scoring thread. ``max_inflight_bytes`` caps the bytes
of the bodies held (read, parsed or being scored), reserved chunk by chunk as
they arrive; a chunk that would pass it waits up to ``max_wait_seconds`` for
room (the rest of its body still in the client's socket), then gets 503 with
``Retry-After`` and a JSON ``detail``; the bytes are released when a response
is sent. Idle, slow and deadlocked uploads: ``test_server_uploads.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from trace_tasks.integrations.server import DEFAULT_MAX_INFLIGHT_BYTES, RETRY_AFTER_SECONDS, BodyLimit, create_app

from .helpers import pairs, reference


def _body(n: int = 1) -> bytes:
    (response, inst) = pairs()[0]
    return json.dumps({"query": [response] * n, "prompts": [""] * n, "labels": [inst] * n}).encode()


async def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver", timeout=30)


def test_a_request_over_the_bound_gets_503_while_another_is_held() -> None:
    body = _body(3)
    app = create_app(max_request_bytes=len(body), max_inflight_bytes=len(body) + 100, max_wait_seconds=0)
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:  # chunked: reserved as it arrives, held until released
        yield body[:200]
        await release.wait()
        yield body[200:]

    async def go() -> tuple[httpx.Response, httpx.Response, httpx.Response, httpx.Response]:
        async with await _client(app) as http:
            held = asyncio.create_task(http.post("/get_reward", content=slow_body()))
            await asyncio.sleep(0.05)  # the first 200 bytes are in
            busy = await http.post("/get_reward", content=body, headers={"content-type": "application/json"})
            health = await http.get("/health")  # no body: never refused
            release.set()
            first = await held
            after = await http.post("/get_reward", content=body, headers={"content-type": "application/json"})
            return busy, health, first, after

    busy, health, first, after = asyncio.run(go())
    assert busy.status_code == 503
    assert busy.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert "max_inflight_bytes" in busy.json()["detail"] and "retry" in busy.json()["detail"]
    assert health.status_code == 200
    (response, inst) = pairs()[0]
    assert first.status_code == 200 and first.json()["rewards"] == [reference(response, inst)["overall"]] * 3
    assert after.status_code == 200  # the held bytes were released with the response


def test_a_request_waits_for_room_then_is_served() -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        order.append(message["body"][:1].decode())
        entered.set()
        if message["body"][:1] == b"a":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = BodyLimit(inner, max_bytes=100, max_inflight_bytes=100, max_wait_seconds=30)
    quick = BodyLimit(inner, max_bytes=100, max_inflight_bytes=100, max_wait_seconds=0.05)

    async def go() -> tuple[int, int, int]:
        async with await _client(guard) as http, await _client(quick) as other:
            held = asyncio.create_task(http.post("/", content=b"a" * 100))
            await entered.wait()
            waiting = asyncio.create_task(http.post("/", content=b"b" * 100))  # no room: waits, body unread
            await asyncio.sleep(0.05)
            assert not waiting.done() and order == ["a"]
            release.set()
            statuses = ((await held).status_code, (await waiting).status_code)
            # The other guard has its own budget; holding it full, a request gives up after its short wait.
            release.clear()
            entered.clear()
            blocker = asyncio.create_task(other.post("/", content=b"a" * 100))
            await entered.wait()
            refused = await other.post("/", content=b"c" * 10)
            release.set()
            await blocker
            return (*statuses, refused.status_code)

    assert asyncio.run(go()) == (200, 200, 503)
    assert order == ["a", "b", "a"] and guard.inflight == quick.inflight == 0


def test_bytes_are_released_after_errors_and_refusals() -> None:
    body = _body()
    guard: BodyLimit = create_app(max_request_bytes=4096, max_inflight_bytes=4096)

    async def go() -> list[int]:
        async with await _client(guard) as http:
            codes = []
            for content in (b"{not json", b'{"query": ["a"], "prompts": [""], "labels": []}', body, b"x" * 5000):
                got = await http.post("/get_reward", content=content, headers={"content-type": "application/json"})
                codes.append(got.status_code)
            return codes

    assert asyncio.run(go()) == [400, 422, 200, 413]
    assert guard.inflight == 0


def test_concurrent_small_requests_all_pass_under_the_default() -> None:
    # OpenRLHF 0.11.2 sends one query per request (openrlhf/utils/agent.py l.286-293): many small bodies at once.
    guard: BodyLimit = create_app()
    assert guard.max_inflight_bytes == DEFAULT_MAX_INFLIGHT_BYTES
    body = _body()

    async def go() -> list[httpx.Response]:
        async with await _client(guard) as http:
            posts = [http.post("/get_reward", content=body, headers={"content-type": "application/json"}) for _ in range(32)]
            return await asyncio.gather(*posts)

    assert {r.status_code for r in asyncio.run(go())} == {200}
    assert guard.inflight == 0


def test_inner_app_holding_bytes_blocks_declared_bodies() -> None:
    # The middleware alone: a slow inner app (scoring) keeps its request's bytes reserved.
    entered, release = asyncio.Event(), asyncio.Event()

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        entered.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = BodyLimit(inner, max_bytes=100, max_inflight_bytes=150)

    async def go() -> tuple[int, int, int]:
        async with await _client(guard) as http:
            held = asyncio.create_task(http.post("/", content=b"a" * 100))
            await entered.wait()
            small = asyncio.create_task(http.post("/", content=b"b" * 50))  # fits next to the held 100
            refused = await http.post("/", content=b"c" * 60)  # 100 + 50 + 60 > 150
            release.set()
            return (await held).status_code, (await small).status_code, refused.status_code

    assert asyncio.run(go()) == (200, 200, 503)
    assert guard.inflight == 0


def test_bound_options_are_checked() -> None:
    with pytest.raises(ValueError, match="max_inflight_bytes"):
        create_app(max_inflight_bytes=0)
    with pytest.raises(ValueError, match="at least max_request_bytes"):
        create_app(max_request_bytes=2048, max_inflight_bytes=1024)
    with pytest.raises(ValueError, match="max_wait_seconds"):
        create_app(max_wait_seconds=-1)
    with pytest.raises(ValueError, match="log_keys"):
        create_app(log_keys="some")
    assert create_app(max_request_bytes=DEFAULT_MAX_INFLIGHT_BYTES * 2).max_inflight_bytes == DEFAULT_MAX_INFLIGHT_BYTES * 2
