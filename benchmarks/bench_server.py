"""The reward server's work per row against a plain ``score_trace_response`` call, in instructions.

Run from the repository root under callgrind (load-independent), every mode in one process::

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/bench_server/cg.out \\
        .venv/bin/python benchmarks/bench_server.py --callgrind /tmp/bench_server/cg.out

(run the interpreter itself: valgrind does not follow ``uv run`` into its child;
the hash seed moves a count by up to ~10k, so a comparison fixes it.)
The rows are seeded (benchmarks/workload.py, mode ``answer_and_annotation``, each
row its own label: distinct labels, so no cache helps). :data:`WARM_ROWS` other
rows (another seed) go through every mode first, uninstrumented: a server's first
minutes (plugins loaded, scipy's solver imported, every pair of answer and
annotation types met, so the native lane's plan of each pair is made, and every
authoring rule those rows break logged once, as a server logs each rule once).
``--warm-rows 36`` counts a server just started instead. Then for each mode callgrind's counters are
zeroed, the rows scored, and the counts dumped (``CALLGRIND_ZERO_STATS`` /
``CALLGRIND_DUMP_STATS_AT`` through a three-function helper built with the
C compiler against valgrind's ``callgrind.h``); the script reads each dump's
``totals`` and prints instructions per row:

* ``plain``: ``score_trace_response(**row)`` for each row;
* ``server``: what ``POST /get_reward`` runs in its worker thread for each row,
  one row a request as OpenRLHF 0.11.2 sends them (``_validate_and_score``:
  every label validated, then scored), each label an object;
* ``plain-text``: the plain call's baseline for ``text``, on ``text``'s rows:
  what a reward function of one's own does with a label column holding the
  instance's JSON, the label decoded (reading's ``decode_json``, the decoder the
  server uses) and ``score_trace_response`` called (it keeps nothing of a label
  that ``text`` could find);
* ``text``: ``server`` with each label as its JSON text (made before counting),
  as OpenRLHF sends a label column that holds the instance's JSON: as many
  rows of the same mix, of their own seed (content ``server`` did not meet);
* ``again``: ``server`` once more on the same rows, each label a new object decoded
  from JSON (made before counting), as a GRPO group's other rollouts or a later
  epoch send it: a repeated label's cost (loaded, keyed, found in the cache);
* ``verify``: what ``POST /verify`` (NeMo Gym) runs for each row (``verify_body``) on
  the request body as decoded (made before counting), after ``server`` on the same
  rows: its labels are met again (a repeated label's cost).

With ``--steps`` (under callgrind only) the script counts each step of
``/get_reward`` on its own instead, every row through one step before the
next: ``lane`` (the native build's one call for the common label,
``data.quick_compile``: validated, compiled and linted; in the pure build it
declines at once), then the general path's steps, in the order the server
runs them for a label the lane does not take: ``load`` (the label's mapping),
``key`` (its content key, the instance cache's), ``check`` (the strict
validation), ``build`` (the compiled instance), ``lint`` (its authoring-rule
warnings, the rules the server has logged already skipped), ``score``
(scoring the response against it) and ``request`` (the same scoring inside
the OpenRLHF request shape); then ``answer``, the answer's own checks alone
(part of ``check``, measured again with their memo emptied).

Each mode (and step) is counted after a full collection (``gc.collect()``): the
cyclic collector's rare full pass, which a long-lived heap makes costly, would
otherwise land in whichever mode crosses its threshold (one such pass counted
in ``text`` doubled its count).

The HTTP layer (uvicorn, FastAPI, ``BodyLimit``) is not counted: it does not
depend on the label. Without ``--callgrind`` the script prints wall-clock
microseconds per row, for a quick look only.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import ANNOTATION_TYPES, make_item  # type: ignore[import-not-found]

from trace_tasks import score_trace_response
from trace_tasks.data import _validation as validation
from trace_tasks.data import instance_warnings, quick_compile
from trace_tasks.data._compiled import CompiledInstance
from trace_tasks.data._keys import content_key
from trace_tasks.data._records import TrainInstance
from trace_tasks.integrations import _common as common
from trace_tasks.integrations import openrlhf, server
from trace_tasks.plugins import get_registry
from trace_tasks.reading import decode_json
from trace_tasks.scoring import options_from

MODE = "answer_and_annotation"
#: Rows through every mode before counting (another seed): every pair of types met, the first-seen work done.
WARM_ROWS = 1200
PROMPT = "<|im_start|>user\nFind the objects.<|im_end|>\n<|im_start|>assistant\n"


def make_rows(count: int, seed: int | str = 20261204) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make_item(rng, ANNOTATION_TYPES[i % len(ANNOTATION_TYPES)], MODE) for i in range(count)]


def label_of(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key not in ("response", "trace_reward_mode")}


def run_plain(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        score_trace_response(**row)


def run_server(rows: list[dict[str, Any]]) -> None:
    options = options_from({"trace_reward_mode": MODE})  # the server makes the record once (create_app)
    for row in rows:
        server._validate_and_score([PROMPT + row["response"]], [PROMPT], [label_of(row)], options, "charted")


def text_requests(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Queries and labels as JSON text, as OpenRLHF sends a label column holding the instance's JSON (not counted).

    Rows of their own, as many, seeded by the first row's response (the warm-up's and the counted rows' differ):
    the pure build's instance cache keys content, so the other modes' labels sent again as text would be found there.
    """
    return [(PROMPT + row["response"], json.dumps(label_of(row))) for row in text_rows(rows)]


def text_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As many rows of the same mix, seeded by the first row's response: content no other mode met."""
    return make_rows(len(rows), seed=f"text:{rows[0]['response']}")


def plain_text_calls(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Responses and labels as JSON text (not counted): :func:`text_requests`' rows, met by no mode before."""
    return [(row["response"], json.dumps(label_of(row))) for row in text_rows(rows)]


def run_plain_text(calls: list[tuple[str, str]]) -> None:
    for response, label in calls:
        score_trace_response(response=response, **decode_json(label), trace_reward_mode=MODE)


def run_text(queries: list[tuple[str, str]]) -> None:
    options = options_from({"trace_reward_mode": MODE})
    for query, label in queries:
        server._validate_and_score([query], [PROMPT], [label], options, "charted")


def repeated_requests(rows: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each row's query and label as ``/get_reward`` gets them, the label decoded from JSON (not counted)."""
    return [(PROMPT + row["response"], json.loads(json.dumps(label_of(row)))) for row in rows]


def run_again(queries: list[tuple[str, dict[str, Any]]]) -> None:
    options = options_from({"trace_reward_mode": MODE})
    for query, label in queries:
        server._validate_and_score([query], [PROMPT], [label], options, "charted")


def verify_bodies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row as NeMo Gym's agent posts it to ``/verify``, decoded from JSON as the request body is (not counted)."""
    bodies = []
    for row in rows:
        body = {
            "responses_create_params": {"input": [{"role": "user", "content": "Find the objects."}]},
            "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": row["response"]}]}]},
            **label_of(row),
        }
        bodies.append(json.loads(json.dumps(body)))
    return bodies


def run_verify(bodies: list[dict[str, Any]]) -> None:
    options = options_from({"trace_reward_mode": MODE})
    for body in bodies:
        server.verify_body(body, options, "charted")


RUNS = {
    "plain": run_plain,
    "server": run_server,
    "plain-text": run_plain_text,
    "text": run_text,
    "again": run_again,
    "verify": run_verify,
}
#: What a mode's run takes, made from the rows before counting (the rows themselves when not listed).
PREPARE = {"text": text_requests, "plain-text": plain_text_calls, "again": repeated_requests, "verify": verify_bodies}


def prepared(mode: str, rows: list[dict[str, Any]]) -> Any:
    return PREPARE[mode](rows) if mode in PREPARE else rows


class ServerSteps:
    """``/get_reward``'s steps for ``rows``, each a method of no argument, run in :attr:`ORDER` (see ``--steps``)."""

    ORDER = ("lane", "load", "key", "check", "build", "lint", "score", "request", "answer")

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows, self.registry = rows, get_registry()
        self.labels = [label_of(row) for row in rows]
        self.options = {"trace_reward_mode": MODE}
        self.opts = options_from(self.options)

    def lane(self) -> None:
        for label in self.labels:
            quick_compile(label, common.logged_rules())

    def load(self) -> None:
        loaded = [common.load_instance(label, where="x", decoded=True) for label in self.labels]
        self.fields = [{name: one[name] for name in common.COMPILED_FIELDS if one[name] is not None} for one in loaded]

    def key(self) -> None:
        for fields in self.fields:
            content_key(fields)

    def check(self) -> None:
        self.parts = [validation.check(fields, TrainInstance, self.registry)[1] for fields in self.fields]

    def build(self) -> None:
        self.compiled = [CompiledInstance._build(f, p, self.registry) for f, p in zip(self.fields, self.parts, strict=True)]

    def lint(self) -> None:
        for compiled in self.compiled:
            instance_warnings(compiled, skip=common.logged_rules())

    def score(self) -> None:
        for compiled, row in zip(self.compiled, self.rows, strict=True):
            compiled.score(row["response"], self.opts)

    def request(self) -> None:
        for compiled, row in zip(self.compiled, self.rows, strict=True):
            openrlhf.score_compiled([PROMPT + row["response"]], [PROMPT], [(compiled, {})], self.opts, log_keys="charted")

    def answer_setup(self) -> None:
        """Not counted: the parts the answer's checks read, and their memo emptied."""
        self.answer_parts = []
        for fields in self.fields:
            parts = validation.Parts()
            validation._check_types(fields, self.registry, parts, [])
            self.answer_parts.append(parts)
        validation._answer_checks.clear()

    def answer(self) -> None:
        for fields, parts in zip(self.fields, self.answer_parts, strict=True):
            validation._check_answer_value(fields, parts, [])


CALLGRIND_HELPER = """
#include <valgrind/callgrind.h>
void bench_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void bench_zero(void) { CALLGRIND_ZERO_STATS; }
void bench_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


def callgrind_helper(folder: Path) -> ctypes.CDLL:
    """The client requests of valgrind's ``callgrind.h`` as C functions (they are inline assembly: no Python binding)."""
    source, library = folder / "helper.c", folder / "helper.so"
    source.write_text(CALLGRIND_HELPER)
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return ctypes.CDLL(str(library))


def dumped_totals(out_file: str, labels: list[str]) -> list[int]:
    """The instructions of each of this process's dumps beside ``out_file`` named in ``labels``, in that order.

    A dump is this process's when its ``pid:`` line says so, and it is found by the label it was dumped at
    (``CALLGRIND_DUMP_STATS_AT``): dumps an earlier run left in the folder (``cg.out.1`` ... of another
    process, or more of them than this run made) are never read.
    """
    pid = f"pid: {os.getpid()}"
    found: dict[str, int] = {}
    for dump in Path(out_file).parent.glob(Path(out_file).name + ".*"):
        lines = dump.read_text().splitlines()
        label = next((line.partition("Client Request: ")[2] for line in lines if "Trigger: Client Request: " in line), "")
        if pid in lines and label in labels:
            total = next(line for line in lines if line.startswith(("totals:", "summary:")))
            found[label] = int(total.split()[1])
    missing = [label for label in labels if label not in found]
    if missing:
        raise SystemExit(f"no callgrind dump of this run for {missing} beside {out_file}: run under valgrind (see the docstring)")
    return [found[label] for label in labels]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=120)
    parser.add_argument("--modes", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument(
        "--callgrind",
        metavar="OUT_FILE",
        help="count instructions: valgrind's --callgrind-out-file (under valgrind --tool=callgrind --instr-atstart=no)",
    )
    parser.add_argument("--steps", action="store_true", help="count each step of /get_reward instead (with --callgrind)")
    parser.add_argument("--warm-rows", type=int, default=WARM_ROWS, help="rows through every mode before counting")
    args = parser.parse_args()
    if args.steps and not args.callgrind:
        parser.error("--steps counts instructions: give --callgrind (and run under valgrind)")
    # The warm-up (another seed): the first large set imports scipy's solver, the first of each pair of types
    # makes the lane's plan, the first label breaking a rule logs it.
    warm = make_rows(args.warm_rows, seed=1)
    rows = make_rows(args.rows)
    runs = {mode: RUNS[mode] for mode in args.modes if mode != "verify" or hasattr(server, "verify_body")}
    for mode, run in runs.items():
        run(prepared(mode, warm))
    if not args.callgrind:
        for mode, run in runs.items():
            data = prepared(mode, rows)
            start = time.perf_counter()
            run(data)
            print(f"{mode}: {(time.perf_counter() - start) / len(rows) * 1e6:.0f} us per row (wall clock)")
        return
    if args.steps:
        count_steps(rows, args.callgrind)
        return
    with tempfile.TemporaryDirectory() as folder:
        helper = callgrind_helper(Path(folder))
        helper.bench_start()
        for mode, run in runs.items():
            data = prepared(mode, rows)
            gc.collect()  # each mode from the same collector state: no full collection lands in one mode by chance
            helper.bench_zero()
            run(data)
            helper.bench_dump(mode.encode())
    for mode, total in zip(runs, dumped_totals(args.callgrind, list(runs)), strict=True):
        print(f"{mode}: {total / len(rows):,.0f} instructions per row ({total:,} for {len(rows)} rows)")


def count_steps(rows: list[dict[str, Any]], out_file: str) -> None:
    """Count each of :func:`server_steps` on ``rows`` (the warm-up done) and print instructions per row."""
    run_plain(rows)  # the rows' responses met once, as the plain mode would have (the same memos warm)
    steps = ServerSteps(rows)
    with tempfile.TemporaryDirectory() as folder:
        helper = callgrind_helper(Path(folder))
        helper.bench_start()
        for name in steps.ORDER:
            if name == "answer":
                steps.answer_setup()
            gc.collect()
            helper.bench_zero()
            getattr(steps, name)()
            helper.bench_dump(name.encode())
    for name, total in zip(steps.ORDER, dumped_totals(out_file, list(steps.ORDER)), strict=True):
        print(f"{name}: {total / len(rows):,.0f} instructions per row")


if __name__ == "__main__":
    main()
