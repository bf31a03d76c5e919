"""The public hook-implementation marker, ``trace_tasks.hookimpl``."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "trace_tasks"
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
