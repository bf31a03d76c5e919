"""Measure what plugin loading costs a fresh process (a benchmark script, not a test).

    uv run python tests/packaging/measure_plugin_loading.py [--python PATH] [--repeat 5]

Each row runs a fresh interpreter ``--repeat`` times and reports the best wall
time, which is the least disturbed by other work on the machine. Rows:

* ``python -c pass``: interpreter start-up, the floor under every other row;
* ``import trace_tasks``: the core import; no plugin is loaded yet (the registry
  is built lazily on first use);
* ``import + registry``: plus loading every installed entry point and indexing it;
* ``import + first score (bbox, answer_and_annotation)``: what the first reward
  of a worker really costs;
* the same first score with ``TRACE_TASKS_PLUGINS=bbox`` (only the family needed);
* a first ``bbox_set`` score, whose Hungarian assignment imports scipy;
* ``import + first score (answer mode, no plugins)`` with ``TRACE_TASKS_PLUGINS=""``.

Nothing is asserted: timings depend on the machine. Numbers measured on the
project's 2-core machine are quoted in docs/plugins.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Mapping

FIRST_SCORE = """
import trace_tasks
trace_tasks.score_trace_response(
    response='{"answer": 2, "annotation": [10, 10, 50, 50]}',
    answer_gt={"type": "integer", "value": 2},
    annotation_gt={"type": "bbox", "value": [10, 10, 50, 52]},
    reward_contract={"reward_contract_version": "v0",
                     "answer": {"id": "answer_exact_match_v0", "type": "integer"},
                     "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"}},
    trace_reward_mode=MODE,
)
"""

#: A two-box set needs the Hungarian assignment, which imports scipy on first use.
FIRST_SET_SCORE = """
import trace_tasks
trace_tasks.score_trace_response(
    response='{"answer": 2, "annotation": [[10, 10, 50, 50], [60, 60, 90, 90]]}',
    answer_gt={"type": "integer", "value": 2},
    annotation_gt={"type": "bbox_set", "value": [[60, 60, 90, 90], [10, 10, 50, 52]]},
    reward_contract={"reward_contract_version": "v0",
                     "answer": {"id": "answer_exact_match_v0", "type": "integer"},
                     "annotation": {"id": "bbox_set_soft_iou_v0", "type": "bbox_set"}},
)
"""

#: label -> (code, extra environment)
ROWS: Mapping[str, tuple[str, Mapping[str, str]]] = {
    "python -c pass": ("pass", {}),
    "import trace_tasks": ("import trace_tasks", {}),
    "import + registry (all installed plugins)": ("import trace_tasks; trace_tasks.get_registry()", {}),
    "import + first score (bbox, answer_and_annotation)": (FIRST_SCORE.replace("MODE", "'answer_and_annotation'"), {}),
    "  same, TRACE_TASKS_PLUGINS=bbox": (
        FIRST_SCORE.replace("MODE", "'answer_and_annotation'"),
        {"TRACE_TASKS_PLUGINS": "bbox"},
    ),
    "import + first score (bbox_set: scipy is imported)": (FIRST_SET_SCORE, {}),
    "import + first score (answer mode, no plugins)": (
        FIRST_SCORE.replace("MODE", "'answer'"),
        {"TRACE_TASKS_PLUGINS": ""},
    ),
}


def best_of(python: str, code: str, env: Mapping[str, str], repeat: int) -> float:
    """Best wall time in seconds of ``repeat`` fresh runs of ``python -c code``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_TASKS_")}
    full_env.update(env)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([python, "-c", code], check=True, env=full_env, timeout=120)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure (default: this one)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per row; the best is reported")
    args = parser.parse_args()
    print(f"{args.python}, best of {args.repeat}")
    floor = None
    for label, (code, env) in ROWS.items():
        seconds = best_of(args.python, code, env, args.repeat)
        floor = seconds if floor is None else floor
        print(f"{label:<56} {seconds * 1000:8.1f} ms   (+{(seconds - floor) * 1000:6.1f} ms over start-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
