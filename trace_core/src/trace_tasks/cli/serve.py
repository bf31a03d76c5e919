"""``trace-tasks serve``: the OpenRLHF remote reward protocol over HTTP.

Binds to 127.0.0.1 unless told otherwise: a reward server has no
authentication, so exposing it is a decision the user makes with ``--host``.
FastAPI and uvicorn are imported only when the command runs
(``pip install 'trace-core[server]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any

from trace_tasks.cli._options import add_scoring_options, scoring_options


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand to the ``trace-tasks`` parser."""
    from trace_tasks.integrations.server import DEFAULT_MAX_REQUEST_BYTES

    parser = subparsers.add_parser(
        "serve",
        help="serve rewards over HTTP (OpenRLHF --remote_rm_url protocol)",
        description=(
            "Serve POST /get_reward ({query, prompts, labels} -> {rewards, scores, extra_logs}) and "
            "GET /health with FastAPI and uvicorn. Labels are trace instances (JSON strings or objects), "
            "validated before scoring: a batch with an invalid label gets 422 listing every problem. "
            "Needs: pip install 'trace-core[server]'."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s: this machine only)")
    parser.add_argument("--port", type=int, default=5000, help="port to bind (default %(default)s)")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default %(default)s)")
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        help="refuse larger request bodies with 413 (default %(default)s = 16 MiB)",
    )
    parser.add_argument(
        "--max-inflight-bytes",
        type=int,
        default=None,
        help="request bytes held at once per worker before new requests get 503 with Retry-After "
        "(default 64 MiB, at least --max-request-bytes)",
    )
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default %(default)s)")
    add_scoring_options(parser)
    parser.set_defaults(func=run)


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, an unknown address), or ``None``.

    Bound and released the way uvicorn binds (``SO_REUSEADDR``), just before
    uvicorn does: a busy port is one line and exit 2 here, where uvicorn would
    log its own error and exit 3.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:  # socket.gaierror (an unknown host) is one too
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def run(args: argparse.Namespace) -> int:
    from trace_tasks.integrations import MissingExtraError, require
    from trace_tasks.integrations.server import CONFIG_ENV, create_app
    from trace_tasks.plugins import get_registry

    try:
        options = scoring_options(args)
    except ValueError as exc:
        print(f"trace-tasks serve: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1 or args.max_request_bytes < 1 or not 0 <= args.port <= 65535:
        print("trace-tasks serve: --workers and --max-request-bytes must be positive, --port in 0..65535", file=sys.stderr)
        return 2
    try:
        uvicorn = require("uvicorn", "server")
        config = {"max_request_bytes": args.max_request_bytes, "max_inflight_bytes": args.max_inflight_bytes, **options}
        create_app(**config)  # fail here, with a message, rather than inside every worker
        # Plugins and the user's pins too: a broken plugin or a bad TRACE_TASKS_REWARD_IDS
        # stops the server now (one line, exit 1, from main) instead of failing every request.
        get_registry()
    except MissingExtraError as exc:
        print(f"trace-tasks serve: {exc}", file=sys.stderr)
        return 1
    problem = port_problem(args.host, args.port)
    if problem is not None:
        print(f"trace-tasks serve: error: {problem}", file=sys.stderr)
        return 2
    # Workers are separate processes that build their own app from the environment.
    os.environ[CONFIG_ENV] = json.dumps(config)
    uvicorn.run(
        "trace_tasks.integrations.server:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
    )
    return 0
