"""How the reward server reads request bodies (in-process: httpx against the ASGI app).

Bytes are reserved chunk by chunk as they arrive, never by the declared
``Content-Length``; a body that sends nothing for ``body_timeout_seconds`` gets
408 and gives its bytes back; one client address may be sending at most
``max_client_uploads`` bodies (429 with ``Retry-After``); when the bodies waiting
for room hold so much that the oldest could never fit, the youngest is refused
at once instead of all of them waiting for nothing. The same over real sockets:
``test_server_slow_clients.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from trace_tasks.integrations.server import RETRY_AFTER_SECONDS, BodyLimit, create_app

from .helpers import pairs, reference


def _body() -> bytes:
    (response, inst) = pairs()[0]
    return json.dumps({"query": [response], "prompts": [""], "labels": [inst]}).encode()


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver", timeout=30)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(3000):  # 30 s at most: a correctness bound, the condition holds within milliseconds
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def _held(first: bytes, release: asyncio.Event, rest: bytes) -> Callable[[], AsyncIterator[bytes]]:
    async def body() -> AsyncIterator[bytes]:
        yield first
        await release.wait()
        yield rest

    return body


def test_the_declared_size_is_not_reserved_only_what_arrived() -> None:
    guard: BodyLimit = create_app()
    body = _body()
    release = asyncio.Event()

    async def go() -> httpx.Response:
        async with _client(guard) as http:
            # Declares 16 MiB, sends one byte: holds one byte, where it used to hold 16 MiB.
            headers = {"content-type": "application/json", "content-length": str(16 * 1024 * 1024)}
            held = asyncio.create_task(http.post("/get_reward", content=_held(body[:1], release, body[1:])(), headers=headers))
            await _until(lambda: guard.inflight == 1)
            assert guard.uploads == {"127.0.0.1": 1}
            release.set()
            return await held

    got = asyncio.run(go())
    (response, inst) = pairs()[0]
    assert got.status_code == 200 and got.json()["rewards"] == [reference(response, inst)["overall"]]
    assert guard.inflight == 0 and guard.uploads == {}


def test_a_body_that_sends_nothing_gets_408_and_gives_its_bytes_back() -> None:
    guard: BodyLimit = create_app(body_timeout_seconds=0.2)
    never = asyncio.Event()

    async def go() -> httpx.Response:
        async with _client(guard) as http:
            return await http.post("/get_reward", content=_held(b'{"query": ', never, b"")())

    got = asyncio.run(go())
    assert got.status_code == 408 and got.headers["connection"] == "close"
    assert got.json()["detail"] == (
        "no request body bytes for 0.2 s (body_timeout_seconds) after 10 bytes: the connection is closed"
    )
    assert guard.inflight == 0 and guard.uploads == {}


def test_one_client_sending_too_many_bodies_gets_429() -> None:
    guard: BodyLimit = create_app(max_client_uploads=2)
    body = _body()
    release = asyncio.Event()

    async def go() -> tuple[list[int], httpx.Response, int]:
        async with _client(guard) as http:
            held = [asyncio.create_task(http.post("/get_reward", content=_held(body[:5], release, body[5:])())) for _ in range(2)]
            await _until(lambda: guard.uploads.get("127.0.0.1") == 2)
            refused = await http.post("/get_reward", content=body)
            release.set()
            statuses = [(await task).status_code for task in held]
            after = await http.post("/get_reward", content=body)  # the slots are given back with the bodies
            return statuses, refused, after.status_code

    statuses, refused, after = asyncio.run(go())
    assert statuses == [200, 200] and after == 200
    assert refused.status_code == 429 and refused.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert refused.json()["detail"] == (
        "too many request bodies being sent at once from 127.0.0.1 (max_client_uploads=2); retry after 1 s"
    )
    assert guard.uploads == {}


def test_bodies_waiting_for_one_another_do_not_all_wait_for_nothing() -> None:
    # Two 120-byte bodies in two chunks each, 150 bytes of room: each holds its first 60 bytes
    # and waits for room for its second. Neither can ever fit while the other holds its 60, so
    # the younger gets 503 at once (not after max_wait_seconds) and the older completes.
    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = BodyLimit(inner, max_bytes=120, max_inflight_bytes=150, max_wait_seconds=600)
    go_a, go_b = asyncio.Event(), asyncio.Event()

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with _client(guard) as http:
            a = asyncio.create_task(http.post("/", content=_held(b"a" * 60, go_a, b"a" * 60)()))
            await _until(lambda: guard.inflight == 60)
            b = asyncio.create_task(http.post("/", content=_held(b"b" * 60, go_b, b"b" * 60)()))
            await _until(lambda: guard.inflight == 120)
            go_a.set()  # A waits: B, still reading, may yet finish and give room back
            await _until(lambda: len(guard._waiting) == 1)
            assert not a.done()
            go_b.set()  # B waits too: now they block each other
            return await asyncio.wait_for(a, 30), await asyncio.wait_for(b, 30)

    a, b = asyncio.run(go())
    assert a.status_code == 200
    assert b.status_code == 503 and b.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert "refused so that older requests waiting for room can complete" in b.json()["detail"]
    assert guard.inflight == 0 and guard._waiting == []


def test_a_waiting_chunk_gets_room_before_younger_requests() -> None:
    order: list[str] = []
    entered, release = asyncio.Event(), asyncio.Event()

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        body = (await receive())["body"]
        order.append(body[:1].decode())
        if body[:1] == b"x":
            entered.set()
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = BodyLimit(inner, max_bytes=100, max_inflight_bytes=100, max_wait_seconds=600)

    async def post(http: httpx.AsyncClient, content: bytes) -> asyncio.Task[httpx.Response]:
        task = asyncio.create_task(http.post("/", content=content))
        await asyncio.sleep(0)
        return task

    async def go() -> list[int]:
        async with _client(guard) as http:
            blocker = await post(http, b"x" * 50)
            await entered.wait()
            old = await post(http, b"o" * 80)  # 50 + 80 > 100: waits
            await _until(lambda: len(guard._waiting) == 1)
            young = await post(http, b"y" * 10)  # 50 + 10 would fit, but it comes after the old one
            await _until(lambda: len(guard._waiting) == 2)
            release.set()
            return [(await task).status_code for task in (blocker, old, young)]

    assert asyncio.run(go()) == [200, 200, 200]
    assert order == ["x", "o", "y"] and guard.inflight == 0


def test_the_new_options_are_checked() -> None:
    for name, value, message in [
        ("body_timeout_seconds", 0, "body_timeout_seconds must be a number of seconds in (0, 3600)"),
        ("body_timeout_seconds", float("nan"), "body_timeout_seconds"),
        ("body_timeout_seconds", True, "body_timeout_seconds"),
        ("max_client_uploads", 0, "max_client_uploads must be a positive integer"),
        ("max_client_uploads", 1.5, "max_client_uploads"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            create_app(**{name: value})
    assert create_app(max_client_uploads=None).max_client_uploads is None
