"""OpenRLHF's remote reward protocol and NeMo Gym's ``/verify`` over HTTP (needs ``pip install 'trace-core[server]'``).

``trace-tasks serve`` runs :func:`create_app` under uvicorn, with
:class:`RequestHeadTimeout` as its HTTP protocol.

* ``POST /get_reward`` with ``{"query": [...], "prompts": [...], "labels": [...]}``
  answers ``{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}``
  (see :mod:`trace_tasks.integrations.openrlhf`).
* ``POST /verify`` answers NeMo Gym's resources-server protocol (``nemo-gym``
  0.7.0): a ``BaseVerifyRequest`` whose row fields hold the trace instance in, a
  ``BaseMultiRewardVerifyResponse`` (``reward``, ``reward_components``) out
  (:func:`verify_body`), under the same bounds, token and refusals.
* ``GET /health`` answers ``{"status": "ok", "version": ..., "build": "pure" | "compiled", "annotation_types": [...]}``.

The body is hostile input, and so is the connection (:class:`BodyLimit`), and
so is the browser on the same machine: without a token a request's ``Host``
must name the address the server listens on (or an ``allowed_hosts`` name),
any request with an ``Origin`` not in ``allowed_origins`` gets 403, and a body
that is not JSON needs the token (415), so a web page can neither POST a
"simple" cross-site request nor rebind DNS to drive the server. A trailing
slash is served, never redirected (the redirect would lose the token). With
a ``token``, every request but ``GET /health`` must carry it
(``Authorization: Bearer TOKEN`` or ``?token=TOKEN``, the form OpenRLHF can
send) or gets 401; the ``token`` parameter, in any spelling, is taken out of
the query before uvicorn logs it. A body over ``max_request_bytes`` gets 413 before it is read
in full. The bytes of the bodies held at once (being read, parsed or scored) may
total ``max_inflight_bytes``: they are reserved chunk by chunk as they arrive,
never by the declared ``Content-Length``, so a client that declares 16 MiB and
sends one byte holds one byte; a chunk that does not fit waits for room
(``max_wait_seconds`` per request in all), then gets 503 with ``Retry-After``
(a 15 MB JSON body costs several times its size once parsed, so eight at once
took the server to 537 MB before this bound). A body that sends nothing for
``body_timeout_seconds`` gets 408 and its bytes are released; one client
address may send at most ``max_client_uploads`` bodies at once (429 with
``Retry-After`` beyond). Invalid JSON gets 400, a wrong shape or a malformed
label 422, all with a ``detail`` message. Every label is validated before
anything is scored (:func:`trace_tasks.compile_instance`, compiled once per
distinct label): a label that cannot be scored honestly (a zero-area target
box, an unknown type, a contract that disagrees, an answer its type cannot
hold...) gets 422 whose ``detail`` lists every problem of every such label
(``labels[3]: invalid instance: $.annotation_gt.value: ...``) and whose
``problems`` holds them one by one. Nothing a client sends crashes the server.
A missing annotation family is a deployment error: 500 naming the package to
install. Refused labels are also logged at ERROR on the server's side: OpenRLHF
0.11.2 logs a failed request at INFO only (``openrlhf/utils/agent.py``
l.347-358) and gives the sample no reward, so the 422's ``detail`` never
reaches its user. Scoring runs in a worker thread so the event loop keeps
answering ``/health``.
"""

# No ``from __future__ import annotations``: FastAPI must see the real ``fastapi.Request``
# annotation of the endpoint, and ``fastapi`` is only imported inside ``create_app``.
import asyncio
import bisect
import hmac
import ipaddress
import itertools
import json
import logging
import math
import os
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import unquote_plus

from trace_tasks.data import InstanceError, quick_compile
from trace_tasks.errors import MissingFamilyError, OptionError, Problem, RecordError, TraceTasksError
from trace_tasks.integrations._common import (
    CompiledEntry,
    compile_ground_truth,
    load_instance,
    log_error,
    logged_keys,
    logged_rules,
    require,
    scorer_options,
)
from trace_tasks.integrations.openrlhf import score_compiled
from trace_tasks.plugins import get_registry
from trace_tasks.scoring import ScoringOptions, options_from

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "CONFIG_ENV",
    "DEFAULT_BODY_TIMEOUT_SECONDS",
    "DEFAULT_HEADER_TIMEOUT_SECONDS",
    "DEFAULT_MAX_CLIENT_UPLOADS",
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_MAX_WAIT_SECONDS",
    "INSTANCE_ROW_FIELDS",
    "NEMO_GYM_RELEASE",
    "RETRY_AFTER_SECONDS",
    "TOKEN_ENV",
    "BodyLimit",
    "InvalidLabels",
    "RequestHeadTimeout",
    "app_from_env",
    "check_token",
    "create_app",
    "output_text",
    "strip_token",
    "validate_labels",
    "verify_body",
]

log = logging.getLogger(__name__)

#: 16 MiB: a batch of 1,024 responses of 16 KB each.
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
#: 64 MiB of request bodies held at once per worker process: four bodies of the
#: largest size, any number of the one-query requests OpenRLHF 0.11.2 sends.
DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
#: ``Retry-After`` of a 503 or a 429 (OpenRLHF's clients retry 5 times, 1 s apart).
RETRY_AFTER_SECONDS = 1
#: How long a request may wait for room in all before 503: OpenRLHF's clients give a
#: request 180 s in all (0.11.2 ``agent.py`` l.331, 0.9.0 ``remote_rm_utils.py`` l.17),
#: and a 503 they retry only 5 times, 1 s apart, before giving up.
DEFAULT_MAX_WAIT_SECONDS = 60.0
#: A request body that sends nothing for this long gets 408 (its reserved bytes are released).
#: A trainer on the same network sends a 16 MiB body in well under a second.
DEFAULT_BODY_TIMEOUT_SECONDS = 10.0
#: ``trace-tasks serve``: a connection must send its whole request head this soon after it
#: opens (or after its first byte following a response), and an idle keep-alive connection is
#: closed after as long (uvicorn's ``timeout_keep_alive``).
DEFAULT_HEADER_TIMEOUT_SECONDS = 10
#: Request bodies one client address may be sending at once (429 beyond). OpenRLHF
#: 0.11.2 sends one small request per sample, read in one chunk: its bodies are in
#: this state for microseconds, however many requests it has in flight.
DEFAULT_MAX_CLIENT_UPLOADS = 64
#: ``trace-tasks serve`` passes its settings to every uvicorn worker through this variable.
CONFIG_ENV = "TRACE_TASKS_SERVE_CONFIG"
#: ``trace-tasks serve`` reads the shared secret from this variable when ``--token`` is not given.
TOKEN_ENV = "TRACE_TASKS_SERVER_TOKEN"
#: Comma-separated host names the server answers to besides the address it listens on
#: (``*``: any), read by :func:`create_app` when ``allowed_hosts`` is not given.
ALLOWED_HOSTS_ENV = "TRACE_TASKS_SERVER_ALLOWED_HOSTS"
#: The health check's paths (no token needed); the trailing-slash spelling is served, never redirected.
HEALTH_PATHS: tuple[str, ...] = ("/health", "/health/")
#: A token fits in a URL's query as it is (no escaping, no comma: OpenRLHF splits
#: ``--reward.remote_url`` at commas) and is long enough not to be guessed.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,4096}")
TOKEN_ADVICE = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

_GRANTED, _PREEMPTED = "granted", "preempted"


def check_token(token: Any) -> str | None:
    """``token`` if it is a usable shared secret (or ``None``); :class:`OptionError` says why not."""
    if token is None:
        return None
    if not isinstance(token, str) or TOKEN_PATTERN.fullmatch(token) is None:
        raise OptionError(
            "token must be 16 or more characters from A-Z a-z 0-9 . _ ~ - (it goes into a URL as it is); "
            f"make one with: {TOKEN_ADVICE}"
        )
    return token


#: The pieces a response body is sent in (:meth:`BodyLimit._paced`): uvicorn's write buffer's high-water mark.
_ANSWER_PIECE = 64 * 1024


class _UnreadAnswer(Exception):
    """A client read nothing of its answer for ``body_timeout_seconds``: the answer is cut short."""


async def _send_within(send: Send, message: Message, timeout: float) -> None:
    try:
        await asyncio.wait_for(send(message), timeout)
    except asyncio.TimeoutError:
        raise _UnreadAnswer(
            f"a client read nothing of its answer for {timeout:g} s (body_timeout_seconds): the answer is cut "
            "short and the connection closed"
        ) from None


@dataclass(eq=False)
class _Upload:
    """One request body being read: its client, the bytes it holds, and what it waits for."""

    seq: int  # arrival order: the oldest waiting body gets room first
    client: str = ""
    counted: bool = False  # counted among its client's uploads (a body still arriving)
    held: int = 0
    need: int = 0
    waited: float = 0.0
    verdict: str | None = None
    wake: "asyncio.Future[None] | None" = None


class BodyLimit:
    """ASGI middleware: the token, and bounds on each request body, the bodies in flight and each client.

    In order, before any body byte is read: without the ``token`` (when there is
    one) a request gets 401, unless it is ``GET /health``; a client address
    already sending ``max_client_uploads`` bodies gets 429 with ``Retry-After``;
    a declared ``Content-Length`` over ``max_bytes`` gets 413. Then the body is
    read chunk by chunk from the ASGI receive channel (the server stops reading
    the socket while the app does not ask, so what a client has sent but the app
    has not received stays in the kernel's buffers and uvicorn's 64 KiB one):

    * each chunk's bytes are reserved as it arrives, against
      ``max_inflight_bytes`` for all the bodies held (being read, parsed or
      scored) until their response is sent; the declared size is never reserved,
      so a client that declares 16 MiB and sends one byte holds one byte;
    * a chunk that does not fit waits for room, the oldest request first, up to
      ``max_wait_seconds`` for the whole request, then gets 503 with
      ``Retry-After``. When the waiting bodies hold so much that the oldest
      could never fit, however many other requests finish, the youngest of
      them that holds bytes gets 503 at once, so that the others complete
      instead of all waiting for nothing;
    * a receive that brings nothing for ``body_timeout_seconds`` gets 408 (time
      spent waiting for room does not count);
    * a body passing ``max_bytes`` (a chunked one) gets 413.

    Every refusal closes the connection (``Connection: close``): its body may be
    unread. One event loop per process runs this, so plain counters are enough.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        max_inflight_bytes: int | None = None,
        max_wait_seconds: float = 0.0,
        *,
        body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS,
        max_client_uploads: int | None = None,
        token: str | None = None,
        allowed_hosts: tuple[str, ...] | None = None,
        allowed_origins: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_inflight_bytes = (
            max_inflight_bytes if max_inflight_bytes is not None else max(max_bytes, DEFAULT_MAX_INFLIGHT_BYTES)
        )
        self.max_wait_seconds = max_wait_seconds
        self.body_timeout_seconds = body_timeout_seconds
        self.max_client_uploads = max_client_uploads
        self._token = check_token(token)
        #: Host names a request may address besides the served address (``None``: no Host check with a token).
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.casefold() for h in allowed_hosts)
        self.allowed_origins = frozenset(o.casefold() for o in allowed_origins)
        self.inflight = 0
        self.uploads: dict[str, int] = {}  # client address -> bodies it is sending
        self._waiting: list[_Upload] = []  # ordered by seq
        self._seq = itertools.count()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await self._reject(send, *refusal)
            return
        upload = _Upload(next(self._seq), _client_of(scope))
        try:
            body = await self._read_body(upload, receive, send)
            if body is None:  # refused (the answer is sent) or the client went away
                return
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if replayed:  # the app asks again only to wait for a disconnect
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            try:
                await self.app(scope, replay, self._paced(send))
            except _UnreadAnswer as exc:
                log.warning("trace_tasks serve: %s", exc)
        finally:
            self._release(upload)  # after the whole answer is sent: a client that does not read it holds its bytes

    # -- before the body ----------------------------------------------------------------------------

    def _refusal(self, scope: Scope) -> tuple[int, str, Headers] | None:
        """The status, detail and headers refusing this request before its body is read, or ``None``."""
        authorized = self._authorized(scope)  # first: it also takes the token out of the logged query
        browser = self._browser_refusal(scope, authorized)
        if browser is not None:
            return browser
        if not authorized and not (scope.get("method") in ("GET", "HEAD") and scope.get("path") in HEALTH_PATHS):
            return (
                401,
                "missing or wrong token: send the server's token as 'Authorization: Bearer TOKEN' or in the URL as ?token=TOKEN",
                [(b"www-authenticate", b'Bearer realm="trace_tasks"')],
            )
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return 400, "invalid Content-Length header", []
            if size > self.max_bytes:
                return 413, f"request body over {self.max_bytes} bytes", []
        return None

    def _authorized(self, scope: Scope) -> bool:
        """Whether the request carries the token; every ``token`` query parameter is removed from the scope either way.

        uvicorn logs the path and query of every request from this very scope, so
        the secret never reaches the access log, however the parameter's name is
        spelt (``TOKEN``, ``Token``, ``%74oken``: :func:`strip_token`).
        """
        given: list[bytes] = []
        query = scope.get("query_string") or b""
        if query:
            kept, in_query = strip_token(query)
            given += in_query
            if in_query or kept != query:
                scope["query_string"] = kept
        for name, value in scope.get("headers") or []:
            if name == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    given.append(credentials.strip())
        if self._token is None:
            return True
        expected = self._token.encode()
        found = False
        for candidate in given:  # every candidate is compared, in constant time
            found |= hmac.compare_digest(candidate, expected)
        return found

    def _browser_refusal(self, scope: Scope, authorized: bool) -> tuple[int, str, Headers] | None:
        """403 or 415 for what only a web page in a browser sends: a foreign ``Host``, an ``Origin``, a form body.

        Loopback is no boundary against the browser on the same machine: a page
        can POST a ``text/plain`` body to ``http://127.0.0.1:5000`` (a "simple"
        request, sent without asking) or rebind its own name's DNS to 127.0.0.1.
        So, without a token (or with ``allowed_hosts`` given), the ``Host`` must
        name the address the connection reached (uvicorn's ``scope["server"]``),
        ``localhost`` when that is a loopback address, or an ``allowed_hosts``
        entry; any request with an ``Origin`` not in ``allowed_origins`` is
        refused (trainers' HTTP clients send none); and a body whose
        ``Content-Type`` is not JSON needs the token.
        """
        headers = _headers(scope)
        if (self._token is None or self.allowed_hosts is not None) and not self._host_allowed(scope, headers.get(b"host")):
            return (
                403,
                f"Host {headers.get(b'host', b'').decode('latin-1')!r} is not an address this server answers to: "
                "call it by the address it listens on, or allow the name (allowed_hosts, "
                f"the {ALLOWED_HOSTS_ENV} variable of `trace-tasks serve`)",
                [],
            )
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1").strip().casefold() not in self.allowed_origins:
            return 403, f"cross-origin requests are refused (Origin {origin.decode('latin-1')!r} is not allowed)", []
        kind = headers.get(b"content-type")
        form = kind is not None and not _is_json(kind) and scope.get("method") not in ("GET", "HEAD")
        if form and (self._token is None or not authorized):
            return 415, "the request body must be JSON (Content-Type: application/json) unless it carries the token", []
        return None

    def _host_allowed(self, scope: Scope, host: bytes | None) -> bool:
        if host is None:  # HTTP/1.0 without Host: no browser sends that
            return True
        name = _host_name(host.decode("latin-1"))
        if self.allowed_hosts is not None and ("*" in self.allowed_hosts or name in self.allowed_hosts):
            return True
        server = scope.get("server")
        served = str(server[0]).casefold() if server else ""
        if name == served.strip("[]"):
            return True
        return name == "localhost" and _is_loopback(served)

    def _upload_done(self, client: str) -> None:
        left = self.uploads.get(client, 0) - 1
        if left > 0:
            self.uploads[client] = left
        else:
            self.uploads.pop(client, None)

    # -- the body -----------------------------------------------------------------------------------

    async def _read_body(self, upload: _Upload, receive: Receive, send: Send) -> bytes | None:
        """The whole body, its bytes reserved chunk by chunk; ``None`` once a refusal is sent or the client left.

        A body counts as an upload of its client (``max_client_uploads``) from its first chunk that is not its
        last: a body that arrives whole in one receive (a small request, already buffered) never waits for
        its client, so many such requests at once are never refused (they were counted as they arrived).
        """
        try:
            return await self._read_chunks(upload, receive, send)
        finally:
            if upload.counted:
                self._upload_done(upload.client)

    async def _read_chunks(self, upload: _Upload, receive: Receive, send: Send) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout_seconds)
            except asyncio.TimeoutError:
                detail = (
                    f"no request body bytes for {self.body_timeout_seconds:g} s (body_timeout_seconds) "
                    f"after {size} bytes: the connection is closed"
                )
                await self._reject(send, 408, detail)
                return None
            if message["type"] != "http.request":  # client went away
                return None
            if message.get("more_body", False) and not upload.counted:
                client = upload.client
                if self.max_client_uploads is not None and self.uploads.get(client, 0) >= self.max_client_uploads:
                    detail = (
                        f"too many request bodies being sent at once from {client or 'this client'} "
                        f"(max_client_uploads={self.max_client_uploads}); retry after {RETRY_AFTER_SECONDS} s"
                    )
                    await self._reject(send, 429, detail, [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())])
                    return None
                self.uploads[client] = self.uploads.get(client, 0) + 1
                upload.counted = True
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > self.max_bytes:
                    await self._reject(send, 413, f"request body over {self.max_bytes} bytes")
                    return None
                verdict = await self._reserve(upload, len(chunk))
                if verdict != _GRANTED:
                    await self._busy(send, preempted=verdict == _PREEMPTED)
                    return None
                chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _reserve(self, upload: _Upload, size: int) -> str | None:
        """Reserve ``size`` more bytes for ``upload``: ``_GRANTED``, ``_PREEMPTED``, or ``None`` (no room in time)."""
        upload.need, upload.verdict = size, None
        bisect.insort(self._waiting, upload, key=lambda waiting: waiting.seq)
        self._schedule()
        remaining = self.max_wait_seconds - upload.waited
        if upload.verdict is None and remaining > 0:
            loop = asyncio.get_running_loop()
            upload.wake = loop.create_future()
            start = loop.time()
            try:
                await asyncio.wait({upload.wake}, timeout=remaining)
            finally:
                upload.waited += loop.time() - start
                upload.wake = None
                if upload.verdict is None:  # timed out, or cancelled
                    self._unqueue(upload)
        elif upload.verdict is None:
            self._unqueue(upload)
        return upload.verdict

    def _unqueue(self, upload: _Upload) -> None:
        self._waiting.remove(upload)
        upload.need = 0
        self._schedule()  # the ones behind it may fit now

    def _schedule(self) -> None:
        """Give room to the waiting chunks, oldest request first; break a deadlock among the waiters."""
        while self._waiting:
            head = self._waiting[0]
            if self.inflight + head.need <= self.max_inflight_bytes:
                self._waiting.pop(0)
                self.inflight += head.need
                head.held += head.need
                head.need = 0
                self._decide(head, _GRANTED)
                continue
            # Room comes back as the requests not waiting (read, scored, or idle until their
            # timeout) finish. If even then the head would not fit next to what the waiting
            # bodies hold, they block one another: refuse the youngest that holds bytes.
            held_by_waiters = sum(waiting.held for waiting in self._waiting)
            if head.need + held_by_waiters <= self.max_inflight_bytes:
                return
            victim = next((waiting for waiting in reversed(self._waiting) if waiting.held and waiting is not head), None)
            if victim is None:  # cannot happen: a body's size is at most max_bytes <= max_inflight_bytes
                return
            self._waiting.remove(victim)
            self.inflight -= victim.held
            victim.held = victim.need = 0
            self._decide(victim, _PREEMPTED)

    @staticmethod
    def _decide(upload: _Upload, verdict: str) -> None:
        upload.verdict = verdict
        if upload.wake is not None and not upload.wake.done():
            upload.wake.set_result(None)

    def _release(self, upload: _Upload) -> None:
        if upload.held:
            self.inflight -= upload.held
            upload.held = 0
            self._schedule()

    # -- answers ------------------------------------------------------------------------------------

    def _paced(self, send: Send) -> Send:
        """``send`` with each response body sent in pieces, each when the client has read enough of the last.

        uvicorn waits before a message while the connection's write buffer is full, but takes a whole
        body into that buffer at once: a 16 MB answer to a client that does not read it stayed in memory
        for as long as the connection lived, outside ``max_inflight_bytes`` (the request's bytes were
        released when the app returned). In pieces, the app waits while the client does not read, and
        keeps its reservation; a client that reads nothing for ``body_timeout_seconds`` has its answer
        cut short (:class:`_UnreadAnswer`) and the connection closed.
        """
        timeout = self.body_timeout_seconds

        async def paced(message: Message) -> None:
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if len(body) <= _ANSWER_PIECE:
                await _send_within(send, message, timeout)
                return
            more = message.get("more_body", False)
            for start in range(0, len(body), _ANSWER_PIECE):
                piece = body[start : start + _ANSWER_PIECE]
                last = start + _ANSWER_PIECE >= len(body)
                await _send_within(send, {"type": "http.response.body", "body": piece, "more_body": more or not last}, timeout)

        return paced

    async def _busy(self, send: Send, *, preempted: bool) -> None:
        why = (
            "it was refused so that older requests waiting for room can complete"
            if preempted
            else f"after waiting {self.max_wait_seconds:g} s"
        )
        await self._reject(
            send,
            503,
            f"server busy: the request bodies in flight would exceed {self.max_inflight_bytes} bytes "
            f"(max_inflight_bytes); {why}; retry after {RETRY_AFTER_SECONDS} s",
            [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())],
        )

    @staticmethod
    async def _reject(send: Send, status: int, detail: str, extra_headers: Headers | None = None) -> None:
        payload = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            (b"connection", b"close"),  # the body may be unread: the connection cannot carry another request
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
        await send({"type": "http.response.body", "body": payload})


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by lower-case name (the first of a repeated one)."""
    found: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or []:
        found.setdefault(name.lower(), value)
    return found


def _host_name(host: str) -> str:
    """The name of a ``Host`` header, case-folded, without its port or IPv6 brackets."""
    host = host.strip().casefold()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return address == "localhost"


def _is_json(content_type: bytes) -> bool:
    kind = content_type.split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or (kind.startswith(b"application/") and kind.endswith(b"+json"))


def _is_token_name(name: str) -> bool:
    """Whether a query parameter's name is ``token`` in any case, percent-encoded any number of times."""
    for _ in range(4):  # %2574oken -> %74oken -> token: each round decodes one layer
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return name.strip().casefold() == "token"


def strip_token(query: bytes) -> tuple[bytes, list[bytes]]:
    """``query`` without its ``token`` parameters (any spelling), and their values.

    Only the parameters named ``token`` (case-folded, percent-decoded) are
    removed; the other parameters keep their bytes exactly as sent.
    """
    kept: list[bytes] = []
    found: list[bytes] = []
    for part in query.split(b"&"):
        raw_name, _, raw_value = part.partition(b"=")
        if _is_token_name(raw_name.decode("latin-1")):
            found.append(unquote_plus(raw_value.decode("latin-1")).encode("latin-1", errors="replace"))
        else:
            kept.append(part)
    return b"&".join(kept), found


def _client_of(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


class RequestHeadTimeout(asyncio.Protocol):
    """uvicorn's h11 protocol with a deadline on the request head (``http=RequestHeadTimeout`` in uvicorn's config).

    uvicorn (0.54.0 in uv.lock) closes an idle keep-alive connection after
    ``timeout_keep_alive`` seconds, but only once a response is sent: a connection
    that opens and sends nothing, or sends its head a byte at a time, is never
    closed. This protocol closes a connection whose request head is not complete
    ``timeout_keep_alive`` seconds after it opened, or after its first byte
    following a response. The body is :class:`BodyLimit`'s business.
    """

    def __init__(
        self, config: Any, server_state: Any, app_state: dict[str, Any], _loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        import h11
        from uvicorn.protocols.http.h11_impl import H11Protocol

        self._idle = h11.IDLE  # h11's state of a client that has not sent a whole request head
        self.inner: Any = H11Protocol(config=config, server_state=server_state, app_state=app_state, _loop=_loop)
        self.timeout = float(config.timeout_keep_alive)
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._arm()

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)
        if self._waiting_for_head():
            self._arm()  # from the first byte of this head: trickling does not extend it
        else:
            self._disarm()

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def _waiting_for_head(self) -> bool:
        return bool(self.inner.conn.their_state is self._idle)

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self.inner.loop.call_later(self.timeout, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self._transport is not None and self._waiting_for_head() and not self._transport.is_closing():
            log.info("trace_tasks serve: closed a connection that sent no whole request head in %g s", self.timeout)
            self._transport.close()


def _check_lists(payload: Mapping[str, Any]) -> tuple[list[Any], list[Any] | None, list[Any]]:
    """The three lists of a request, or :class:`~trace_tasks.errors.OptionError` (a ``ValueError``) describing the wrong shape."""
    queries = payload.get("query")
    prompts = payload.get("prompts")
    labels = payload.get("labels")
    if not isinstance(queries, list):
        raise OptionError('"query" must be a list of strings (prompt + response)')
    if prompts is not None and not isinstance(prompts, list):
        raise OptionError('"prompts" must be a list of strings')
    if not isinstance(labels, list):
        raise OptionError('"labels" must be a list of trace instances (objects or their JSON strings)')
    bad = next((i for i, q in enumerate(queries) if not isinstance(q, str)), None)
    if bad is not None:
        raise OptionError(f'"query"[{bad}] must be a string')
    if prompts is not None:
        bad = next((i for i, p in enumerate(prompts) if not isinstance(p, str)), None)
        if bad is not None:
            raise OptionError(f'"prompts"[{bad}] must be a string')
    return queries, prompts, labels


#: Most problems a 422 answer lists (``problems_omitted`` counts the rest), and most labels its ``detail``
#: names: a broken label of 200 bytes has ~1.8 KB of problems, so a 16 MiB request of them was answered
#: with 143 MB, outside every memory bound.
MAX_PROBLEMS_LISTED = 1000
MAX_LABELS_IN_DETAIL = 20


class InvalidLabels(TraceTasksError, ValueError):
    """Labels that cannot be scored honestly; ``errors`` holds ``(label index, InstanceError)`` pairs."""

    def __init__(self, errors: list[tuple[int, InstanceError]]) -> None:
        self.errors = errors
        shown = "; ".join(str(error) for _, error in errors[:MAX_LABELS_IN_DETAIL])
        more = len(errors) - MAX_LABELS_IN_DETAIL
        super().__init__(shown + (f"; and {more} more broken labels" if more > 0 else ""))

    def body(self) -> dict[str, Any]:
        """The 422 answer: ``detail``, and each problem of each label, at most :data:`MAX_PROBLEMS_LISTED`."""
        problems = [
            {"label": index, "path": problem.path, "message": problem.message}
            for index, error in self.errors
            for problem in error.problems
        ]
        answer: dict[str, Any] = {"detail": str(self), "problems": problems[:MAX_PROBLEMS_LISTED]}
        if len(problems) > MAX_PROBLEMS_LISTED:
            answer["problems_omitted"] = len(problems) - MAX_PROBLEMS_LISTED
        return answer


def validate_labels(labels: Sequence[Any], *, names: Sequence[str] | None = None) -> list[CompiledEntry]:
    """Validate every label before scoring any; their compiled entries, for scoring.

    Each label is compiled once (strictly, through the adapters' cache by
    content; a raw JSON label met before is not even parsed again) and its
    entry handed to scoring, which compiles nothing. In the native build the
    common label (an object, or its JSON text) is validated, compiled and
    linted in one native call instead (:func:`~trace_tasks.data.quick_compile`:
    the same entry, docs/compiled.md). Raises
    :class:`MissingFamilyError` for a type whose official family is not
    installed or is disabled (a deployment error), and :class:`InvalidLabels`
    listing every problem of every invalid label, a label that is no instance
    at all (not JSON, a required field missing) among them. ``names``: what the errors
    call each label (default ``labels[i]``).
    """
    errors: list[tuple[int, InstanceError]] = []
    entries: list[CompiledEntry] = []
    skip = logged_rules()
    for i, label in enumerate(labels):
        if type(label) is dict:  # the common label in one native call (native build only), no name needed
            quick = quick_compile(label, skip)
            if quick is not None:
                entries.append(quick)
                continue
        record = names[i] if names is not None else f"labels[{i}]"
        try:
            # decoded: every label comes out of the request body's json.loads (no numpy value to copy out).
            entries.append(compile_ground_truth(label, where=record, decoded=True))
        except InstanceError as exc:
            _raise_missing_family(label, record)
            errors.append((i, exc))
        except RecordError as exc:  # no instance at all (not JSON, a field missing): listed with the others
            errors.append((i, InstanceError([Problem(exc.path or "$", exc.message)])))  # the message names the label
    if errors:
        raise InvalidLabels(errors)
    return entries


def _raise_missing_family(label: Any, record: str) -> None:
    """Raise :class:`MissingFamilyError` when ``label``'s type belongs to an official family not installed (or disabled)."""
    annotation = load_instance(label, where=record).get("annotation_gt")
    name = annotation.get("type") if isinstance(annotation, Mapping) else None
    missing = get_registry().missing_family(name.strip()) if isinstance(name, str) else None
    if missing is not None:
        raise missing


def _validate_and_score(
    queries: list[Any], prompts: list[Any] | None, labels: list[Any], options: Mapping[str, Any] | ScoringOptions, log_keys: str
) -> Any:
    entries = validate_labels(labels)
    return score_compiled(queries, prompts, entries, options, log_keys=log_keys)


#: The NeMo Gym release whose ``/verify`` models this server answers.
NEMO_GYM_RELEASE = "0.7.0"
#: A NeMo Gym row's own fields that make its trace instance (beside ``responses_create_params``).
INSTANCE_ROW_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "image_sizes", "metadata")
#: What the refusals of ``/verify`` call the instance.
VERIFY_RECORD = "the row's trace instance"
#: ``BaseRunRequest.capture_rollout_id``'s alias: excluded when NeMo Gym dumps a verify response.
_ROLLOUT_ID_ALIAS = "_ng_rollout_id"


def output_text(response: Mapping[str, Any]) -> str:
    """The text of a Responses API ``response``: its message items' ``output_text`` parts, joined.

    What NeMo Gym's text verifiers read (``resources_servers/equivalence_rule/app.py``
    l.76-83 at 0.7.0; the ``openai`` ``Response.output_text`` property).
    Reasoning items and tool calls are not read; anything malformed in the
    model's output is skipped (hostile input never raises).
    """
    parts: list[str] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else ():
        if not (type(item) is dict or isinstance(item, Mapping)) or item.get("type") != "message":  # a dict: no ABC check
            continue
        content = item.get("content")
        for part in content if isinstance(content, list) else ():
            if (type(part) is dict or isinstance(part, Mapping)) and part.get("type") == "output_text":
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
    return "".join(parts)


def verify_body(payload: Mapping[str, Any], options: Mapping[str, Any] | ScoringOptions, log_keys: str) -> dict[str, Any]:
    """NeMo Gym's ``/verify``: a ``BaseVerifyRequest`` in, a ``BaseMultiRewardVerifyResponse`` out.

    The request is NeMo Gym's row as its agent posts it: ``responses_create_params``,
    the model's ``response`` and the row's own fields, among them the trace
    instance's (:data:`INSTANCE_ROW_FIELDS`). The answer echoes the request
    (less ``_ng_rollout_id``, as NeMo Gym's own ``model_dump`` does) with
    ``reward`` (``overall``, clipped to [0, 1]), ``reward_components`` (the
    logged keys), each component also as a top-level number unless the row has
    a field of that name (NeMo Gym's metrics read top-level numbers only), and
    the defaults ``mask_sample``/``failure_kind``/``failure_reason``. Raises
    :class:`~trace_tasks.errors.OptionError` for a request of the wrong shape and
    what :func:`validate_labels` raises for a broken instance.
    """
    if not isinstance(payload.get("responses_create_params"), Mapping):
        raise OptionError('"responses_create_params" must be an object (NeMo Gym\'s BaseRunRequest)')
    response = payload.get("response")
    if not isinstance(response, Mapping) or not isinstance(response.get("output"), list):
        raise OptionError('"response" must be a Responses API response with an "output" list (NeMo Gym\'s BaseVerifyRequest)')
    keys = logged_keys(log_keys, options)
    label = {name: payload[name] for name in INSTANCE_ROW_FIELDS if name in payload}
    [(compiled, inputs)] = validate_labels([label], names=[VERIFY_RECORD])
    opts = options if isinstance(options, ScoringOptions) else options_from(options)
    result = compiled.score(output_text(response), opts, **inputs)
    components = {key: float(result.get(key, 0.0)) for key in keys}
    answer = dict(payload)  # the request echoed, in its order, less the rollout id
    answer.pop(_ROLLOUT_ID_ALIAS, None)
    for key, value in components.items():
        if key not in payload:
            answer[key] = value
    answer["reward"] = min(max(float(result.get("overall", 0.0)), 0.0), 1.0)
    answer["reward_components"] = components
    answer["mask_sample"] = False
    answer["failure_kind"] = answer["failure_reason"] = None
    return answer


def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise OptionError(f"{name} must be a positive integer, got {value!r}")
    return value


def _seconds(name: str, value: Any, *, zero: bool) -> float:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not (0 <= value < 3600) or (value == 0 and not zero):
        interval = "[0, 3600)" if zero else "(0, 3600)"
        raise OptionError(f"{name} must be a number of seconds in {interval}, got {value!r}")
    return float(value)


def create_app(
    *,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    max_inflight_bytes: int | None = None,
    max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS,
    max_client_uploads: int | None = DEFAULT_MAX_CLIENT_UPLOADS,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    log_keys: str = "charted",
    **options: Any,
) -> Any:
    """The ASGI app (FastAPI inside :class:`BodyLimit`); ``options`` are scorer options, checked now.

    ``max_inflight_bytes``: request bytes held at once before new requests get
    503 (default :data:`DEFAULT_MAX_INFLIGHT_BYTES`, raised to
    ``max_request_bytes`` if that is larger; it may not be smaller), reserved
    as they arrive, after waiting up to ``max_wait_seconds`` for room (0: at once).
    ``body_timeout_seconds``: a body that sends nothing for this long gets 408.
    ``max_client_uploads``: bodies one client address may be sending at once
    (429 beyond; ``None``: no bound). ``token``: the shared secret every request
    but ``GET /health`` must carry (``Authorization: Bearer TOKEN`` or
    ``?token=TOKEN``; ``None``: no check). The request head's deadline is the
    HTTP server's: under uvicorn, ``http=RequestHeadTimeout``.
    ``allowed_hosts``: host names a request's ``Host`` may carry besides the
    address the server listens on (``"*"``: any); default: the comma-separated
    names of :data:`ALLOWED_HOSTS_ENV`, else none. Without a token every
    request's ``Host`` is checked; with one, only when ``allowed_hosts`` is set.
    ``allowed_origins``: browser origins (``"https://example.org"``) allowed to
    call the server; any other request with an ``Origin`` gets 403.
    ``log_keys``: the ``extra_logs`` keys, ``"charted"`` (default) or ``"all"``.
    """
    require("fastapi", "server")  # a missing extra raises MissingExtraError naming it
    from fastapi import FastAPI, Request
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    _positive_int("max_request_bytes", max_request_bytes)
    if max_inflight_bytes is not None:
        _positive_int("max_inflight_bytes", max_inflight_bytes)
        if max_inflight_bytes < max_request_bytes:
            raise OptionError(
                f"max_inflight_bytes ({max_inflight_bytes}) must be at least max_request_bytes ({max_request_bytes}): "
                "a request of the largest size accepted could never be served"
            )
    wait = _seconds("max_wait_seconds", max_wait_seconds, zero=True)
    body_timeout = _seconds("body_timeout_seconds", body_timeout_seconds, zero=False)
    if max_client_uploads is not None:
        _positive_int("max_client_uploads", max_client_uploads)
    check_token(token)
    hosts = _names("allowed_hosts", allowed_hosts if allowed_hosts is not None else _hosts_from_env())
    origins = _names("allowed_origins", allowed_origins)
    logged_keys(log_keys)  # raises for an unknown set
    picked = scorer_options(options, strict=True)
    resolved = options_from(picked)  # the record, made once: each request would make it again

    from trace_tasks import __version__
    from trace_tasks._build import build_kind
    from trace_tasks.plugins import get_registry

    # redirect_slashes=False: a redirect would carry the query without its token (taken out for the log).
    app = FastAPI(title="trace_tasks reward server", version=__version__, redirect_slashes=False)

    @app.get("/health")
    @app.get("/health/")
    def health() -> dict[str, Any]:
        # The build too: a fleet of servers can differ in it (docs/compiled.md), and scores never do.
        registry = get_registry()
        return {
            "status": "ok",
            "version": __version__,
            "build": build_kind(),
            "annotation_types": sorted(registry.annotation_types),
        }

    async def answer(request: Request, shape: str, work: Callable[[dict[str, Any]], Any]) -> Any:
        """Parse the body, run ``work`` on it in a worker thread, and map refusals to their status (one policy for every endpoint)."""
        body = await request.body()
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            return Response(json_bytes({"detail": f"request body is not valid JSON: {exc}"}), 400, media_type=JSON)
        if not isinstance(payload, dict):
            return Response(json_bytes({"detail": f"request body must be a JSON object with {shape}"}), 422, media_type=JSON)
        status, data = await run_in_threadpool(_outcome, work, payload)
        return Response(data, status, media_type=JSON)

    def get_reward_work(payload: dict[str, Any]) -> Any:
        queries, prompts, labels = _check_lists(payload)
        return _validate_and_score(queries, prompts, labels, resolved, log_keys)

    @app.post("/get_reward")
    @app.post("/get_reward/")
    async def get_reward(request: Request) -> Any:
        return await answer(request, "query, prompts, labels", get_reward_work)

    @app.post("/verify")
    @app.post("/verify/")
    async def verify(request: Request) -> Any:
        return await answer(
            request,
            "responses_create_params, response and the trace instance's fields",
            partial(verify_body, options=resolved, log_keys=log_keys),
        )

    return BodyLimit(
        app,
        max_request_bytes,
        max_inflight_bytes,
        wait,
        body_timeout_seconds=body_timeout,
        max_client_uploads=max_client_uploads,
        token=token,
        allowed_hosts=hosts,
        allowed_origins=origins or (),
    )


JSON = "application/json"


def _outcome(work: Callable[[dict[str, Any]], Any], payload: dict[str, Any]) -> tuple[int, bytes]:
    """``work``'s answer to ``payload`` as ``(status, JSON bytes)``, each refusal mapped to its status.

    Run in a worker thread, rendering included: a large answer is not rendered on the event loop.
    """
    try:
        return 200, json_bytes(work(payload))
    except MissingFamilyError as exc:
        log_error(log, "trace_tasks serve: %s", exc)
        return 500, json_bytes({"detail": f"server deployment error: {exc}"})
    except InvalidLabels as exc:
        log_error(log, "trace_tasks serve: 422, a request with broken trace instances: %s", _preview(str(exc)))
        return 422, json_bytes(exc.body())
    except (ValueError, TypeError) as exc:
        return 422, json_bytes({"detail": str(exc)})
    except RecursionError:  # an answer echoing a request nested as deep as JSON allows
        return 422, json_bytes({"detail": "the request nests too deeply to be answered (its values are echoed)"})
    except Exception as exc:  # a bug of ours must not take the server down
        log.exception("trace_tasks serve: unexpected error")
        return 500, json_bytes({"detail": f"internal error: {type(exc).__name__}: {exc}"})


def json_bytes(content: Any) -> bytes:
    """An answer as JSON bytes, whatever the request held: ASCII-escaped, so a lone surrogate a model wrote
    (``"\\ud800"``, which ``json.loads`` accepts) is written back escaped instead of failing to encode; a
    non-finite number (``NaN``, ``1e400``: Python's JSON reads them, JSON has none) as ``null``.
    Raises ``RecursionError`` for content nested past the interpreter's limit."""
    try:
        text = json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    except ValueError:  # a non-finite float somewhere: the rare answer, walked once
        text = json.dumps(_finite(content), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.encode("ascii")


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as ``None`` (what JSON can say of it)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _hosts_from_env() -> tuple[str, ...] | None:
    raw = os.environ.get(ALLOWED_HOSTS_ENV)
    if not raw or not raw.strip():
        return None
    return tuple(name.strip() for name in raw.split(",") if name.strip())


def _names(option: str, names: Any) -> tuple[str, ...] | None:
    """``names`` as a tuple of non-empty strings (``None`` stays ``None``); :class:`OptionError` otherwise."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(name, str) and name.strip() for name in names):
        raise OptionError(f"{option} must be a list of non-empty names, got {names!r}")
    return tuple(name.strip() for name in names)


def _preview(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def app_from_env() -> Any:
    """Factory for uvicorn workers: the settings are the JSON object in ``TRACE_TASKS_SERVE_CONFIG``."""
    config = json.loads(os.environ.get(CONFIG_ENV) or "{}")
    return create_app(**config)
