"""OpenRLHF's remote reward protocol over HTTP (needs ``pip install 'trace-core[server]'``).

``trace-tasks serve`` runs :func:`create_app` under uvicorn.

* ``POST /get_reward`` with ``{"query": [...], "prompts": [...], "labels": [...]}``
  answers ``{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}``
  (see :mod:`trace_tasks.integrations.openrlhf`).
* ``GET /health`` answers ``{"status": "ok", ...}``.

The body is hostile input: a body over ``max_request_bytes`` gets 413 before it
is read in full; a body that would take the bytes held by requests in flight
over ``max_inflight_bytes`` waits for room (``max_wait_seconds``), then gets
503 with ``Retry-After`` (a 15 MB JSON body
costs several times its size once parsed, so eight at once took the server to
537 MB before this bound); invalid JSON 400, a wrong shape or a malformed label 422, all
with a ``detail`` message. Every label is validated before anything is scored
(:func:`trace_tasks.compile_instance`, compiled once per distinct label): a label that
cannot be scored honestly (a zero-area target box, an unknown type, a contract
that disagrees, an answer its type cannot hold...) gets 422 whose ``detail``
lists every problem of every such label (``labels[3]: invalid instance:
$.annotation_gt.value: ...``) and whose ``problems`` holds them one by one.
Nothing a client sends crashes the server. A missing annotation family is a
deployment error: 500 naming the package to install. Refused labels are also
logged at ERROR on the server's side: OpenRLHF 0.11.2 logs a failed request at
INFO only (``openrlhf/utils/agent.py`` l.347-358) and gives the sample no
reward, so the 422's ``detail`` never reaches its user. Scoring runs in a worker
thread so the event loop keeps answering ``/health``.
"""

# No ``from __future__ import annotations``: FastAPI must see the real ``fastapi.Request``
# annotation of the endpoint, and ``fastapi`` is only imported inside ``create_app``.
import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from trace_tasks.data import InstanceCache, InstanceError
from trace_tasks.errors import MissingFamilyError, OptionError, TraceTasksError
from trace_tasks.integrations import _common
from trace_tasks.integrations._common import load_instance, logged_keys, require, scorer_options
from trace_tasks.integrations.openrlhf import score_queries
from trace_tasks.plugins import get_registry

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_MAX_WAIT_SECONDS",
    "RETRY_AFTER_SECONDS",
    "InvalidLabels",
    "app_from_env",
    "create_app",
    "validate_labels",
]

log = logging.getLogger(__name__)

#: 16 MiB: a batch of 1,024 responses of 16 KB each.
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
#: 64 MiB of request bodies held at once per worker process: four bodies of the
#: largest size, any number of the one-query requests OpenRLHF 0.11.2 sends.
DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
#: ``Retry-After`` of a 503 (OpenRLHF's clients retry 5 times, 1 s apart).
RETRY_AFTER_SECONDS = 1
#: How long a request waits for room before 503: OpenRLHF's clients give a
#: request 180 s in all (0.11.2 ``agent.py`` l.331, 0.9.0 ``remote_rm_utils.py`` l.17),
#: and a 503 they retry only 5 times, 1 s apart, before giving up.
DEFAULT_MAX_WAIT_SECONDS = 60.0
#: ``trace-tasks serve`` passes its settings to every uvicorn worker through this variable.
CONFIG_ENV = "TRACE_TASKS_SERVE_CONFIG"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: bound each request body and the bytes of all bodies in flight.

    A body over ``max_bytes`` gets 413: a declared ``Content-Length`` over the
    limit before any body is read, a chunked body as soon as it passes it. A
    body that would take the bytes held by the requests in flight (read,
    parsed or being scored) over ``max_inflight_bytes`` waits up to
    ``max_wait_seconds`` for room, then gets 503 with ``Retry-After``. The
    declared size is reserved before the body is read (while it waits, the body
    stays in the client's socket, not in this process), a chunked body's bytes
    as they arrive, and the reservation is released when the response is sent.
    One event loop per process runs this, so a plain counter is enough.
    """

    def __init__(
        self, app: ASGIApp, max_bytes: int, max_inflight_bytes: int | None = None, max_wait_seconds: float = 0.0
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_inflight_bytes = (
            max_inflight_bytes if max_inflight_bytes is not None else max(max_bytes, DEFAULT_MAX_INFLIGHT_BYTES)
        )
        self.max_wait_seconds = max_wait_seconds
        self.inflight = 0
        self._room: asyncio.Condition | None = None  # created in the event loop that serves

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        reserved = 0
        try:
            headers = dict(scope.get("headers") or [])
            declared = headers.get(b"content-length")
            if declared is not None:
                try:
                    size = int(declared)
                except ValueError:
                    await self._reject(send, 400, "invalid Content-Length header")
                    return
                if size > self.max_bytes:
                    await self._reject(send, 413, f"request body over {self.max_bytes} bytes")
                    return
                if not await self._reserve(size):
                    await self._busy(send)
                    return
                reserved = size
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":  # client went away
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    await self._reject(send, 413, f"request body over {self.max_bytes} bytes")
                    return
                if size > reserved:  # chunked, or longer than declared: reserve what arrived
                    if not await self._reserve(size - reserved):
                        await self._busy(send)
                        return
                    reserved = size
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            del chunks
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if replayed:  # the app asks again only to wait for a disconnect
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
        finally:
            if reserved:
                self.inflight -= reserved
                await self._notify()

    def _condition(self) -> asyncio.Condition:
        if self._room is None:
            self._room = asyncio.Condition()
        return self._room

    async def _reserve(self, size: int) -> bool:
        """Reserve ``size`` bytes, waiting up to ``max_wait_seconds`` for room; False when there is none."""
        if self.inflight + size <= self.max_inflight_bytes:
            self.inflight += size
            return True
        if self.max_wait_seconds <= 0:
            return False
        room = self._condition()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait_seconds
        async with room:
            while self.inflight + size > self.max_inflight_bytes:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                try:
                    await asyncio.wait_for(room.wait(), remaining)
                except asyncio.TimeoutError:
                    return False
            self.inflight += size
            return True

    async def _notify(self) -> None:
        if self._room is not None:
            async with self._room:
                self._room.notify_all()

    async def _busy(self, send: Send) -> None:
        await self._reject(
            send,
            503,
            f"server busy: the request bodies in flight would exceed {self.max_inflight_bytes} bytes "
            f"(max_inflight_bytes) after waiting {self.max_wait_seconds:g} s; retry after {RETRY_AFTER_SECONDS} s",
            [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())],
        )

    @staticmethod
    async def _reject(send: Send, status: int, detail: str, extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
        payload = json.dumps({"detail": detail}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
        await send({"type": "http.response.body", "body": payload})


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


#: The instance fields of a label that are validated (``image_sizes`` is a scorer input, not an instance field).
LABEL_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")


class InvalidLabels(TraceTasksError, ValueError):
    """Labels that cannot be scored honestly; ``errors`` holds ``(label index, InstanceError)`` pairs."""

    def __init__(self, errors: list[tuple[int, InstanceError]]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(error) for _, error in errors))

    def body(self) -> dict[str, Any]:
        return {
            "detail": str(self),
            "problems": [
                {"label": index, "path": problem.path, "message": problem.message}
                for index, error in self.errors
                for problem in error.problems
            ],
        }


def _label_cache() -> InstanceCache:
    # The adapters' shared cache when there is one, so scoring finds the labels compiled here.
    cache = getattr(_common, "INSTANCE_CACHE", None)
    return cache if isinstance(cache, InstanceCache) else _OWN_CACHE


_OWN_CACHE = InstanceCache(maxsize=4096)


def validate_labels(labels: list[Any]) -> None:
    """Validate every label before scoring any.

    Raises :class:`~trace_tasks.errors.RecordError` (a ``ValueError``) for a
    label that is no instance at all (not JSON, a required field missing),
    :class:`MissingFamilyError` for a type whose official family is not
    installed or is disabled (a deployment error), and
    :class:`InvalidLabels` listing every problem of every invalid label.
    """
    registry = get_registry()
    cache = _label_cache()
    errors: list[tuple[int, InstanceError]] = []
    for i, label in enumerate(labels):
        where = f"labels[{i}]"
        instance = load_instance(label, where=where)
        fields = {name: instance.get(name) for name in LABEL_FIELDS if instance.get(name) is not None}
        annotation = fields.get("annotation_gt")
        name = annotation.get("type") if isinstance(annotation, Mapping) else None
        missing = registry.missing_family(name.strip()) if isinstance(name, str) else None
        if missing is not None:
            raise missing
        try:
            cache.compile(fields, record=where)
        except InstanceError as exc:
            errors.append((i, exc))
    if errors:
        raise InvalidLabels(errors)


def _validate_and_score(
    queries: list[Any], prompts: list[Any] | None, labels: list[Any], options: Mapping[str, Any], log_keys: str
) -> Any:
    validate_labels(labels)
    return score_queries(queries, prompts, labels, options, log_keys=log_keys)


def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise OptionError(f"{name} must be a positive integer, got {value!r}")
    return value


def create_app(
    *,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    max_inflight_bytes: int | None = None,
    max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
    log_keys: str = "charted",
    **options: Any,
) -> Any:
    """The ASGI app (FastAPI inside the body guard); ``options`` are scorer options, checked now.

    ``max_inflight_bytes``: request bytes held at once before new requests get
    503 (default :data:`DEFAULT_MAX_INFLIGHT_BYTES`, raised to
    ``max_request_bytes`` if that is larger; it may not be smaller), after
    waiting up to ``max_wait_seconds`` for room (0: at once).
    ``log_keys``: the ``extra_logs`` keys, ``"charted"`` (default) or ``"all"``.
    """
    require("fastapi", "server")  # a missing extra raises MissingExtraError naming it
    from fastapi import FastAPI, Request
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse

    _positive_int("max_request_bytes", max_request_bytes)
    if max_inflight_bytes is not None:
        _positive_int("max_inflight_bytes", max_inflight_bytes)
        if max_inflight_bytes < max_request_bytes:
            raise OptionError(
                f"max_inflight_bytes ({max_inflight_bytes}) must be at least max_request_bytes ({max_request_bytes}): "
                "a request of the largest size accepted could never be served"
            )
    if isinstance(max_wait_seconds, bool) or not isinstance(max_wait_seconds, (int, float)) or not 0 <= max_wait_seconds < 3600:
        raise OptionError(f"max_wait_seconds must be a number of seconds in [0, 3600), got {max_wait_seconds!r}")
    logged_keys(log_keys)  # raises for an unknown set
    picked = scorer_options(options, strict=True)

    from trace_tasks import __version__
    from trace_tasks.plugins import get_registry

    app = FastAPI(title="trace_tasks reward server", version=__version__)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "annotation_types": sorted(get_registry().annotation_types)}

    @app.post("/get_reward")
    async def get_reward(request: Request) -> Any:
        body = await request.body()
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            return JSONResponse({"detail": f"request body is not valid JSON: {exc}"}, status_code=400)
        if not isinstance(payload, dict):
            return JSONResponse({"detail": "request body must be a JSON object with query, prompts, labels"}, status_code=422)
        try:
            queries, prompts, labels = _check_lists(payload)
            return await run_in_threadpool(_validate_and_score, queries, prompts, labels, picked, log_keys)
        except MissingFamilyError as exc:
            log.error("trace_tasks serve: %s", exc)
            return JSONResponse({"detail": f"server deployment error: {exc}"}, status_code=500)
        except InvalidLabels as exc:
            log.error("trace_tasks serve: 422, a request with broken trace instances in its labels: %s", _preview(str(exc)))
            return JSONResponse(exc.body(), status_code=422)
        except (ValueError, TypeError) as exc:
            return JSONResponse({"detail": str(exc)}, status_code=422)
        except Exception as exc:  # a bug of ours must not take the server down
            log.exception("trace_tasks serve: unexpected error")
            return JSONResponse({"detail": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)

    return BodyLimit(app, max_request_bytes, max_inflight_bytes, float(max_wait_seconds))


def _preview(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def app_from_env() -> Any:
    """Factory for uvicorn workers: the settings are the JSON object in ``TRACE_TASKS_SERVE_CONFIG``."""
    config = json.loads(os.environ.get(CONFIG_ENV) or "{}")
    return create_app(**config)
