"""The reward server's work per row against a plain ``score_trace_response`` call, in instructions.

Run from the repository root under callgrind (load-independent; one mode per run)::

    for mode in setup plain server verify; do
      OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        uv run python benchmarks/bench_server.py --mode $mode --rows 120 2>&1 | grep 'refs'
    done

Every mode builds the same seeded rows (benchmarks/workload.py, mode
``answer_and_annotation``, each row its own label: distinct labels, so no cache
helps) and scores three warm-up rows of every annotation type first through every
mode (plugins loaded, scipy's solver imported); ``setup`` stops there. Per row = (mode's instructions - setup's) / rows:

* ``plain``: ``score_trace_response(**row)`` for each row;
* ``server``: what ``POST /get_reward`` runs in its worker thread for each row,
  one row a request as OpenRLHF 0.11.2 sends them (``_validate_and_score``:
  every label validated, then scored);
* ``verify``: what ``POST /verify`` (NeMo Gym) runs for each row.

The HTTP layer (uvicorn, FastAPI, ``BodyLimit``) is not counted: it does not
depend on the label. Without valgrind the script prints wall-clock seconds
per row, for a quick look only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import ANNOTATION_TYPES, make_item  # type: ignore[import-not-found]

from trace_tasks import score_trace_response
from trace_tasks.integrations import server

MODE = "answer_and_annotation"
PROMPT = "<|im_start|>user\nFind the objects.<|im_end|>\n<|im_start|>assistant\n"


def make_rows(count: int, seed: int = 20261204) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make_item(rng, ANNOTATION_TYPES[i % len(ANNOTATION_TYPES)], MODE) for i in range(count)]


def label_of(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key not in ("response", "trace_reward_mode")}


def run_plain(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        score_trace_response(**row)


def run_server(rows: list[dict[str, Any]]) -> None:
    options = {"trace_reward_mode": MODE}
    for row in rows:
        server._validate_and_score([PROMPT + row["response"]], [PROMPT], [label_of(row)], options, "charted")


def run_verify(rows: list[dict[str, Any]]) -> None:
    options = {"trace_reward_mode": MODE}
    for row in rows:
        body = {
            "responses_create_params": {"input": [{"role": "user", "content": "Find the objects."}]},
            "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": row["response"]}]}]},
            **label_of(row),
        }
        server.verify_body(json.loads(json.dumps(body)), options, "charted")


RUNS = {"plain": run_plain, "server": run_server, "verify": run_verify}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["setup", *RUNS], required=True)
    parser.add_argument("--rows", type=int, default=120)
    args = parser.parse_args()
    # Three warm-up rows of every annotation type: the first large set imports scipy's solver.
    warm = make_rows(3 * len(ANNOTATION_TYPES), seed=1)
    rows = make_rows(args.rows)
    for run in RUNS.values():
        if run is not run_verify or hasattr(server, "verify_body"):
            run(warm)
    if args.mode == "setup":
        return
    start = time.perf_counter()
    RUNS[args.mode](rows)
    print(f"{args.mode}: {(time.perf_counter() - start) / len(rows) * 1e6:.0f} us per row (wall clock)")


if __name__ == "__main__":
    main()
