"""A real uvicorn server on a free loopback port, for the tests that talk HTTP to ``create_app``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

#: How long a server may take to start or stop before the test fails instead of hanging.
START_STOP_SECONDS = 30.0


@contextmanager
def serving(app: Any, **config: Any) -> Iterator[tuple[str, int]]:
    """``(base URL, port)`` of ``app`` served by uvicorn in a daemon thread on 127.0.0.1; ``config`` goes to ``uvicorn.Config``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_STOP_SECONDS
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(timeout=START_STOP_SECONDS)
        sock.close()
