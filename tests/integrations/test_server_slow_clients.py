"""Idle and slow clients beside real traffic: a real uvicorn on a free 127.0.0.1 port, raw sockets.

Issue 24: four connections that each sent ``POST /get_reward`` with
``Content-Length: 16777216`` and one body byte, then nothing, reserved the whole
64 MiB in-flight budget (the declared size was reserved before the body was
read) and had no read timeout, so every real request waited 60 s and got 503.
Now bytes are reserved as they arrive, a body that sends nothing for
``body_timeout_seconds`` gets 408, a connection that does not finish its request
head in time is closed (``RequestHeadTimeout``), and one client address may be
sending at most ``max_client_uploads`` bodies at once (429).

Every server here stops at the end of its test; every socket has a timeout.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support import live_server
from trace_tasks.integrations.server import DEFAULT_MAX_REQUEST_BYTES, BodyLimit, RequestHeadTimeout, create_app

from .helpers import pairs, reference

pytestmark = pytest.mark.slow  # real servers, and waits for their timeouts

#: Generous bounds on waits that end by themselves long before (correctness timeouts, not measurements).
PATIENCE = 30.0


def serving(app: Any, header_timeout: int = 30) -> Any:
    """Run ``app`` under uvicorn, as ``trace-tasks serve`` does (``RequestHeadTimeout``), on a free loopback port."""
    return live_server.serving(app, http=RequestHeadTimeout, timeout_keep_alive=header_timeout)


def wait_for(condition: Callable[[], bool], what: str, alive: Callable[[], bool] = lambda: True) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline and alive(), what
        time.sleep(0.02)


def upload(port: int, declared: int, first: bytes = b"{") -> socket.socket:
    """A raw connection that sends a request head declaring ``declared`` body bytes, then ``first``."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
    head = f"POST /get_reward HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    conn.sendall(head.encode() + first)
    return conn


def answer(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (within PATIENCE)."""
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def status_and_body(raw: bytes) -> tuple[int, dict[str, Any], str]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body), head.decode("latin-1").lower()


def real_request(url: str) -> None:
    (response, inst) = pairs()[0]
    got = httpx.post(f"{url}/get_reward", json={"query": [response], "prompts": [""], "labels": [inst]}, timeout=PATIENCE)
    assert got.status_code == 200, got.text
    assert got.json()["rewards"] == [reference(response, inst)["overall"]]


def test_idle_and_slow_uploads_do_not_hold_the_budget_and_are_cut_off() -> None:
    # The defaults of `trace-tasks serve` (16 MiB per request, 64 MiB in flight, 60 s wait), a 5 s body timeout.
    guard: BodyLimit = create_app(body_timeout_seconds=5)
    assert guard.max_inflight_bytes == 4 * DEFAULT_MAX_REQUEST_BYTES
    with serving(guard) as (url, port):
        real_request(url)  # warm: the registry and the label cache
        idle = [upload(port, DEFAULT_MAX_REQUEST_BYTES) for _ in range(6)]
        slow = [upload(port, DEFAULT_MAX_REQUEST_BYTES) for _ in range(2)]
        try:
            # 8 x 16 MiB declared, twice the budget; one byte each is held, not the declared size.
            wait_for(lambda: guard.inflight == 8, f"the uploads' first bytes did not arrive ({guard.inflight})")
            assert guard.uploads == {"127.0.0.1": 8}
            for _ in range(3):
                for conn in slow:
                    conn.sendall(b" ")  # slow, not idle: each byte starts its timeout again
                real_request(url)  # 200 at once: before the fix, 503 after a 60 s wait
            for conn in idle + slow:
                status, body, head = status_and_body(answer(conn))
                assert status == 408 and "connection: close" in head
                sent = 1 if conn in idle else 4
                assert f"(body_timeout_seconds) after {sent} bytes" in body["detail"]
        finally:
            for conn in idle + slow:
                conn.close()
        wait_for(lambda: guard.inflight == 0 and not guard.uploads, "the cut-off uploads' bytes were not released")
        real_request(url)


def test_a_declared_body_over_the_limit_gets_413_without_being_sent() -> None:
    guard: BodyLimit = create_app()
    with serving(guard) as (url, port):
        conn = upload(port, DEFAULT_MAX_REQUEST_BYTES + 1, first=b"")
        try:
            status, body, head = status_and_body(answer(conn))  # no body byte was sent: the head alone decides
        finally:
            conn.close()
        assert status == 413 and str(DEFAULT_MAX_REQUEST_BYTES) in body["detail"] and "connection: close" in head
        assert guard.inflight == 0
        real_request(url)


def test_one_client_sending_too_many_bodies_gets_429_with_retry_after() -> None:
    guard: BodyLimit = create_app(max_client_uploads=2, body_timeout_seconds=2)
    with serving(guard) as (url, port):
        held = [upload(port, 1000) for _ in range(2)]
        try:
            wait_for(lambda: guard.uploads.get("127.0.0.1") == 2, "the uploads did not start")
            # A body arriving whole is never counted, so never refused (a burst of small requests) ...
            real_request(url)
            # ... a third body still arriving is.
            third = upload(port, 1000)
            try:
                status, body, head = status_and_body(answer(third))
            finally:
                third.close()
            assert status == 429 and "retry-after: 1" in head and "connection: close" in head
            assert "max_client_uploads=2" in body["detail"]
            for conn in held:  # cut off after the body timeout, and their slots given back
                assert status_and_body(answer(conn))[0] == 408
        finally:
            for conn in held:
                conn.close()
        wait_for(lambda: not guard.uploads, "the upload slots were not released")
        real_request(url)


def test_a_connection_that_does_not_finish_its_request_head_is_closed() -> None:
    with serving(create_app(), header_timeout=1) as (url, port):
        silent = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
        partial = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
        try:
            partial.sendall(b"POST /get_reward HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            partial.sendall(b"X-Slow: ")  # trickling does not extend the deadline
            assert answer(silent) == b""  # closed without a word: there is no request to answer
            assert answer(partial) == b""
            readable, _, _ = select.select([silent, partial], [], [], 0)
            assert readable == [silent, partial]  # at EOF
        finally:
            silent.close()
            partial.close()
        real_request(url)  # a client that sends its request promptly is served as before


def _verify_body(text: str) -> bytes:
    """A NeMo Gym ``/verify`` request whose model output is ``text`` (echoed back in the answer)."""
    (_, inst) = pairs()[0]
    row = {
        "responses_create_params": {"input": []},
        "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}]},
        **inst,
    }
    return json.dumps(row).encode()


def test_an_answer_the_client_does_not_read_keeps_its_bytes_reserved_until_cut_off() -> None:
    # uvicorn took a whole answer into its write buffer at once, and the request's bytes were released
    # then: /verify echoing 16 MB to a client that never read stayed in memory, outside max_inflight_bytes.
    guard: BodyLimit = create_app(body_timeout_seconds=1)
    with serving(guard) as (url, port):
        body = _verify_body("x" * 4_000_000)
        conn = socket.socket()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        conn.settimeout(PATIENCE)
        conn.connect(("127.0.0.1", port))
        head = (
            f"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        try:
            conn.sendall(head.encode() + body)
            wait_for(lambda: guard.inflight >= len(body), "the request's bytes were not reserved")
            time.sleep(0.5)  # scored and answering: the client reads nothing, the answer waits
            assert guard.inflight >= len(body)
            wait_for(lambda: guard.inflight == 0, "the unread answer was not cut off")
        finally:
            conn.close()
        real_request(url)


def test_a_burst_of_small_requests_from_one_client_is_served() -> None:
    # Each whole small body was counted as an upload while the others were read: 132 of 200 got 429.
    import concurrent.futures

    guard: BodyLimit = create_app(max_client_uploads=2)
    with serving(guard) as (url, _):
        (response, inst) = pairs()[0]
        payload = {"query": [response], "prompts": [""], "labels": [inst]}
        limits = httpx.Limits(max_connections=64)
        with httpx.Client(timeout=PATIENCE, limits=limits) as http, concurrent.futures.ThreadPoolExecutor(32) as pool:
            codes = list(pool.map(lambda _: http.post(f"{url}/get_reward", json=payload).status_code, range(96)))
        assert codes == [200] * 96


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/verify", _verify_body("\ud800 a lone surrogate"), 200),
        (
            "/get_reward",
            json.dumps({"query": ["x"], "labels": [{**pairs()[0][1], "answer_gt": {"\ud800": "integer", "value": 2}}]}).encode(),
            422,
        ),
        ("/verify", _verify_body("n").replace(b'"input": []', b'"input": [NaN, Infinity]'), 200),
    ],
    ids=["surrogate_in_model_output", "surrogate_in_a_refused_label", "non_finite_numbers_echoed"],
)
def test_every_answer_is_json_whatever_the_request_held(path: str, body: bytes, status: int) -> None:
    # A lone surrogate (which json.loads accepts) failed to encode: a plain-text 500 with no detail.
    guard: BodyLimit = create_app()
    with serving(guard) as (url, _):
        got = httpx.post(f"{url}{path}", content=body, headers={"content-type": "application/json"}, timeout=PATIENCE)
        assert got.status_code == status and got.headers["content-type"] == "application/json"
        answer = got.json()
        if path == "/verify":
            assert answer["responses_create_params"] == json.loads(body)["responses_create_params"] or b"NaN" in body
        else:
            assert "\ud800" in answer["detail"]
        real_request(url)
