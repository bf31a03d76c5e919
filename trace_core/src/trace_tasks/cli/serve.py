"""``trace-tasks serve``: the OpenRLHF remote reward protocol (and NeMo Gym's ``/verify``) over HTTP.

Binds to 127.0.0.1 unless told otherwise. With ``--token`` (or
``TRACE_TASKS_SERVER_TOKEN``) every request but ``GET /health`` must carry the
shared secret; a ``--host`` other machines can reach needs one, or an explicit
``--insecure-no-token``; without a token a request's ``Host`` must name the
address listened on or an ``--allowed-host`` name. FastAPI and uvicorn are imported only when the command
runs (``pip install 'trace-core[server]'``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from typing import Any

from trace_tasks.cli._options import add_scoring_options, scoring_options


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand to the ``trace-tasks`` parser."""
    from trace_tasks.integrations.server import (
        ALLOWED_HOSTS_ENV,
        DEFAULT_BODY_TIMEOUT_SECONDS,
        DEFAULT_HEADER_TIMEOUT_SECONDS,
        DEFAULT_MAX_CLIENT_UPLOADS,
        DEFAULT_MAX_REQUEST_BYTES,
        TOKEN_ENV,
    )

    parser = subparsers.add_parser(
        "serve",
        help="serve rewards over HTTP (OpenRLHF --remote_rm_url protocol, NeMo Gym /verify)",
        description=(
            "Serve POST /get_reward ({query, prompts, labels} -> {rewards, scores, extra_logs}) and "
            "POST /verify (NeMo Gym's resources-server protocol) and GET /health with FastAPI and uvicorn. Labels are trace instances (JSON strings or objects), "
            "validated before scoring: a batch with an invalid label gets 422 listing every problem. "
            f"A --host other machines can reach needs --token or {TOKEN_ENV} (or --insecure-no-token). "
            "Needs: pip install 'trace-core[server]'."
        ),
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default %(default)s: this machine only; any other needs a token)",
    )
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
    parser.add_argument(
        "--token",
        default=None,
        help="shared secret every request but GET /health must carry, as 'Authorization: Bearer TOKEN' or "
        f"'?token=TOKEN' in the URL (401 without); default ${TOKEN_ENV}, which keeps it out of the process list",
    )
    parser.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="serve a --host other machines can reach without a token: anyone who can connect gets rewards scored",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a host name clients call the server by (http://NAME:PORT), besides the address it listens on; "
        "repeatable, '*' for any. Without a token any other Host gets 403 (it guards against DNS rebinding); "
        f"with a token, Host is checked only when this is given. Default ${ALLOWED_HOSTS_ENV} (comma-separated)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT_SECONDS,
        help="a request body that sends nothing for this many seconds gets 408 (default %(default)g)",
    )
    parser.add_argument(
        "--header-timeout",
        type=int,
        default=DEFAULT_HEADER_TIMEOUT_SECONDS,
        help="seconds a connection has to send its request head, and an idle keep-alive connection stays open "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--max-client-uploads",
        type=int,
        default=DEFAULT_MAX_CLIENT_UPLOADS,
        help="request bodies one client address may be sending at once, 429 beyond (default %(default)s; 0: no bound)",
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


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


def run(args: argparse.Namespace) -> int:
    from trace_tasks.errors import OptionError
    from trace_tasks.integrations import MissingExtraError, require
    from trace_tasks.integrations.server import CONFIG_ENV, TOKEN_ADVICE, TOKEN_ENV, RequestHeadTimeout, create_app
    from trace_tasks.plugins import get_registry

    try:
        options = scoring_options(args)
    except ValueError as exc:
        print(f"trace-tasks serve: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1 or args.max_request_bytes < 1 or not 0 <= args.port <= 65535:
        print("trace-tasks serve: --workers and --max-request-bytes must be positive, --port in 0..65535", file=sys.stderr)
        return 2
    if not 1 <= args.header_timeout < 3600 or args.max_client_uploads < 0:
        print("trace-tasks serve: --header-timeout must be in 1..3599 seconds, --max-client-uploads 0 or more", file=sys.stderr)
        return 2
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if token is None and not args.insecure_no_token and not is_loopback(args.host):
        print(
            f"trace-tasks serve: error: --host {args.host} can be reached from other machines: set a token "
            f"(--token TOKEN or {TOKEN_ENV}=TOKEN; make one with {TOKEN_ADVICE}) or pass --insecure-no-token",
            file=sys.stderr,
        )
        return 2
    try:
        uvicorn = require("uvicorn", "server")
        config = {
            "max_request_bytes": args.max_request_bytes,
            "max_inflight_bytes": args.max_inflight_bytes,
            "body_timeout_seconds": args.body_timeout,
            "max_client_uploads": args.max_client_uploads or None,
            "token": token,
            **options,
        }
        if args.allowed_host is not None:
            config["allowed_hosts"] = args.allowed_host
        try:
            create_app(**config)  # fail here, with a message, rather than inside every worker
        except OptionError as exc:
            print(f"trace-tasks serve: {exc}", file=sys.stderr)
            return 2
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
    # Workers are separate processes that build their own app from the environment
    # (the token too: a process's environment is readable by its user only).
    os.environ[CONFIG_ENV] = json.dumps(config)
    uvicorn.run(
        "trace_tasks.integrations.server:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        http=RequestHeadTimeout,  # uvicorn's h11 protocol, with a deadline on the request head
        timeout_keep_alive=args.header_timeout,
    )
    return 0
