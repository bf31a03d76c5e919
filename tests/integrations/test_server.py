"""The HTTP reward server: real uvicorn on a free loopback port, real requests.

The protocol is OpenRLHF's remote reward model (``openrlhf/utils/remote_rm_utils.py``,
``request_api_wrapper``): ``POST`` JSON ``{"query": [...], "prompts": [...],
"labels": [...]}`` and read ``rewards``/``scores``/``extra_logs`` from the JSON answer.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

import trace_tasks
from tests.support.live_server import serving
from trace_tasks.cli import main
from trace_tasks.integrations._common import CHARTED_KEYS
from trace_tasks.integrations.server import create_app

from .helpers import INSTANCES, as_json, pairs, reference

MAX_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serving(create_app(max_request_bytes=MAX_BYTES, format_weight=0.1)) as (url, _):
        yield url


def test_health(base_url: str) -> None:
    got = httpx.get(f"{base_url}/health", timeout=10)
    assert got.status_code == 200
    body = got.json()
    assert body["status"] == "ok" and "bbox_set" in body["annotation_types"]
    assert body["version"] == trace_tasks.__version__ and body["build"] == trace_tasks.__build__


def test_get_reward_equals_scorer(base_url: str) -> None:
    rows = pairs()
    prompt = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    payload = {
        "query": [prompt + r + "<|im_end|>" for r, _ in rows],
        "prompts": [prompt] * len(rows),
        "labels": [as_json(i) if n % 2 else i for n, (_, i) in enumerate(rows)],  # strings and objects
    }
    got = httpx.post(f"{base_url}/get_reward", json=payload, timeout=60)
    assert got.status_code == 200, got.text
    body = got.json()
    expected = [reference(r, i, format_weight=0.1) for r, i in rows]
    assert body["rewards"] == [e["overall"] for e in expected]
    assert body["scores"] == body["rewards"]
    assert list(body["extra_logs"]) == list(CHARTED_KEYS)  # log_keys="charted", the default
    for key, values in body["extra_logs"].items():
        assert values == [e[key] for e in expected], key


def _post(base_url: str, content: bytes | str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{base_url}/get_reward", content=content, headers={"content-type": "application/json", **headers}, timeout=30
    )


@pytest.mark.parametrize(
    "content,status,detail",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not valid JSON"),
        (b"[" * 50_000, 400, "not valid JSON"),  # nesting past the parser's recursion limit
        (b"[1, 2]", 422, "JSON object"),
        (b'{"query": "a", "prompts": [], "labels": []}', 422, '"query" must be a list'),
        (b'{"query": [1], "prompts": [""], "labels": [{}]}', 422, r'"query"\[0\] must be a string'),
        (b'{"query": ["a"], "prompts": "p", "labels": [{}]}', 422, '"prompts" must be a list'),
        (b'{"query": ["a"], "prompts": [""]}', 422, '"labels" must be a list'),
        (b'{"query": ["a"], "prompts": [""], "labels": []}', 422, "same length"),
        (b'{"query": ["a"], "prompts": [""], "labels": ["{oops"]}', 422, r"labels\[0\] is a string but not JSON"),
        (b'{"query": ["a"], "prompts": [""], "labels": [{"answer_gt": 1}]}', 422, r"labels\[0\] lacks"),
    ],
)
def test_malformed_requests_get_4xx_with_a_message(base_url: str, content: bytes, status: int, detail: str) -> None:
    got = _post(base_url, content)
    assert got.status_code == status
    assert re.search(detail, got.json()["detail"])
    assert httpx.get(f"{base_url}/health", timeout=10).status_code == 200  # still serving


def test_hostile_model_output_is_scored_not_crashed(base_url: str) -> None:
    queries = ["{" * 20_000, "`" * 20_000, '{"answer": ' * 2000, "\x00\ud7ff", '{"answer": 2, "annotation": [[1e999, 0, 1, 1]]}']
    payload = {"query": queries, "prompts": [""] * len(queries), "labels": [INSTANCES[0]] * len(queries)}
    got = httpx.post(f"{base_url}/get_reward", json=payload, timeout=60)
    assert got.status_code == 200
    assert got.json()["rewards"] == [reference(q, INSTANCES[0], format_weight=0.1)["overall"] for q in queries]


def test_oversized_body_is_refused(base_url: str) -> None:
    big = json.dumps({"query": ["x" * MAX_BYTES], "prompts": [""], "labels": [INSTANCES[0]]}).encode()
    got = _post(base_url, big)
    assert got.status_code == 413 and "bytes" in got.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer, counted as it arrives
        for _ in range(8):
            yield b" " * (MAX_BYTES // 4)

    got = httpx.post(f"{base_url}/get_reward", content=chunks(), timeout=30)
    assert got.status_code == 413
    assert httpx.get(f"{base_url}/health", timeout=10).status_code == 200


def test_invalid_server_options_fail_at_start() -> None:
    with pytest.raises(ValueError, match="unknown scorer option"):
        create_app(answer_wieght=1)
    with pytest.raises(ValueError, match="max_request_bytes"):
        create_app(max_request_bytes=0)


@pytest.mark.slow  # a real `trace-tasks serve` process and its uvicorn start-up
def test_cli_serve_subprocess() -> None:
    """``trace-tasks serve`` end to end: options reach the uvicorn worker through the environment."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # uvicorn binds it again; a race with another process here is unlikely
    command = [
        sys.executable,
        "-m",
        "trace_tasks.cli",
        "serve",
        "--port",
        str(port),
        "--mode",
        "answer",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
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
        (response, inst) = pairs()[0]
        got = httpx.post(f"{url}/get_reward", json={"query": [response], "prompts": [""], "labels": [inst]}, timeout=30)
        assert got.json()["rewards"] == [reference(response, inst, trace_reward_mode="answer")["overall"]]
        assert got.json()["extra_logs"]["overall"] == got.json()["rewards"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_serve_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the options are checked before anything starts (or touches the environment).
    assert main(["serve", "--format-weight", "3"]) == 2
    assert "format_weight" in capsys.readouterr().err


def test_cli_serve_refuses_a_bad_pin_before_starting(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # A bad TRACE_TASKS_REWARD_IDS stops the server at start with one line, not every request later.
    from trace_tasks.plugins import reset_registry

    monkeypatch.setenv("TRACE_TASKS_REWARD_IDS", "bbox=bbox_soft_iou_v9")
    reset_registry()
    try:
        assert main(["serve", "--port", "0"]) == 1
    finally:
        monkeypatch.delenv("TRACE_TASKS_REWARD_IDS")
        reset_registry()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RewardPinError" in err and "bbox_soft_iou_v9" in err
