"""OpenRLHF's remote reward protocol over HTTP (needs ``pip install 'trace-core[server]'``).

``trace-tasks serve`` runs :func:`create_app` under uvicorn.

* ``POST /get_reward`` with ``{"query": [...], "prompts": [...], "labels": [...]}``
  answers ``{"rewards": [...], "scores": [...], "extra_logs": {key: [...]}}``
  (see :mod:`trace_tasks.integrations.openrlhf`).
* ``GET /health`` answers ``{"status": "ok", ...}``.

The body is hostile input: a body over ``max_request_bytes`` gets 413 before it
is read in full, invalid JSON 400, a wrong shape or a malformed label 422, all
with a ``detail`` message. Every label is validated before anything is scored
(:mod:`trace_tasks.instances`, compiled once per distinct label): a label that
cannot be scored honestly (a zero-area target box, an unknown type, a contract
that disagrees, an answer its type cannot hold...) gets 422 whose ``detail``
lists every problem of every such label (``labels[3]: invalid instance:
$.annotation_gt.value: ...``) and whose ``problems`` holds them one by one.
Nothing a client sends crashes the server. A missing annotation family is a
deployment error: 500 naming the package to install. Scoring runs in a worker
thread so the event loop keeps answering ``/health``.
"""

# No ``from __future__ import annotations``: FastAPI must see the real ``fastapi.Request``
# annotation of the endpoint, and ``fastapi`` is only imported inside ``create_app``.
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from trace_tasks.errors import MissingFamilyError
from trace_tasks.instances import InstanceCache, InstanceError
from trace_tasks.integrations import _common
from trace_tasks.integrations._common import load_instance, require, scorer_options
from trace_tasks.integrations.openrlhf import score_queries
from trace_tasks.plugins import OFFICIAL_TYPES, get_registry

__all__ = ["CONFIG_ENV", "DEFAULT_MAX_REQUEST_BYTES", "InvalidLabels", "app_from_env", "create_app", "validate_labels"]

log = logging.getLogger(__name__)

#: 16 MiB: a batch of 1,024 responses of 16 KB each.
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
#: ``trace-tasks serve`` passes its settings to every uvicorn worker through this variable.
CONFIG_ENV = "TRACE_TASKS_SERVE_CONFIG"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with 413.

    A declared ``Content-Length`` over the limit is refused before any body is
    read; a chunked body is buffered only up to the limit, then refused.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                await self._reject(send, 400, "invalid Content-Length header")
                return
            if too_big:
                await self._reject(send, 413, f"request body over {self.max_bytes} bytes")
                return
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
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:  # the app asks again only to wait for a disconnect
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _reject(send: Send, status: int, detail: str) -> None:
        payload = json.dumps({"detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _check_lists(payload: Mapping[str, Any]) -> tuple[list[Any], list[Any] | None, list[Any]]:
    """The three lists of a request, or ``ValueError`` describing the wrong shape."""
    queries = payload.get("query")
    prompts = payload.get("prompts")
    labels = payload.get("labels")
    if not isinstance(queries, list):
        raise ValueError('"query" must be a list of strings (prompt + response)')
    if prompts is not None and not isinstance(prompts, list):
        raise ValueError('"prompts" must be a list of strings')
    if not isinstance(labels, list):
        raise ValueError('"labels" must be a list of trace instances (objects or their JSON strings)')
    bad = next((i for i, q in enumerate(queries) if not isinstance(q, str)), None)
    if bad is not None:
        raise ValueError(f'"query"[{bad}] must be a string')
    if prompts is not None:
        bad = next((i for i, p in enumerate(prompts) if not isinstance(p, str)), None)
        if bad is not None:
            raise ValueError(f'"prompts"[{bad}] must be a string')
    return queries, prompts, labels


#: The instance fields of a label that are validated (``image_sizes`` is a scorer input, not an instance field).
LABEL_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")


class InvalidLabels(ValueError):
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

    Raises ``ValueError`` for a label that is no instance at all (not JSON, a
    required field missing), :class:`MissingFamilyError` for a type whose
    official family is not installed (a deployment error), and
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
        if isinstance(name, str) and name.strip() in OFFICIAL_TYPES and name.strip() not in registry.annotation_types:
            raise MissingFamilyError(name.strip(), OFFICIAL_TYPES[name.strip()])
        try:
            cache.compile(fields, record=where)
        except InstanceError as exc:
            errors.append((i, exc))
    if errors:
        raise InvalidLabels(errors)


def _validate_and_score(queries: list[Any], prompts: list[Any] | None, labels: list[Any], options: Mapping[str, Any]) -> Any:
    validate_labels(labels)
    return score_queries(queries, prompts, labels, options)


def create_app(*, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, **options: Any) -> Any:
    """The ASGI app (FastAPI inside the body-size guard); ``options`` are scorer options, checked now."""
    fastapi = require("fastapi", "server")
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse

    if not isinstance(max_request_bytes, int) or isinstance(max_request_bytes, bool) or max_request_bytes < 1:
        raise ValueError(f"max_request_bytes must be a positive integer, got {max_request_bytes!r}")
    picked = scorer_options(options, strict=True)

    from trace_tasks import __version__
    from trace_tasks.plugins import get_registry

    app = fastapi.FastAPI(title="trace_tasks reward server", version=__version__)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "annotation_types": sorted(get_registry().annotation_types)}

    @app.post("/get_reward")
    async def get_reward(request: fastapi.Request) -> Any:  # type: ignore[name-defined]  # fastapi is imported lazily
        body = await request.body()
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            return JSONResponse({"detail": f"request body is not valid JSON: {exc}"}, status_code=400)
        if not isinstance(payload, dict):
            return JSONResponse({"detail": "request body must be a JSON object with query, prompts, labels"}, status_code=422)
        try:
            queries, prompts, labels = _check_lists(payload)
            return await run_in_threadpool(_validate_and_score, queries, prompts, labels, picked)
        except MissingFamilyError as exc:
            log.error("trace_tasks serve: %s", exc)
            return JSONResponse({"detail": f"server deployment error: {exc}"}, status_code=500)
        except InvalidLabels as exc:
            return JSONResponse(exc.body(), status_code=422)
        except (ValueError, TypeError) as exc:
            return JSONResponse({"detail": str(exc)}, status_code=422)
        except Exception as exc:  # a bug of ours must not take the server down
            log.exception("trace_tasks serve: unexpected error")
            return JSONResponse({"detail": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)

    return BodyLimit(app, max_request_bytes)


def app_from_env() -> Any:
    """Factory for uvicorn workers: the settings are the JSON object in ``TRACE_TASKS_SERVE_CONFIG``."""
    config = json.loads(os.environ.get(CONFIG_ENV) or "{}")
    return create_app(**config)
