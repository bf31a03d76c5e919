"""What a ``score --workers N`` row costs beyond one process, step by step, in one process under callgrind.

Run from the repository root (valgrind's callgrind; its client requests need a C
compiler and valgrind's ``callgrind.h``, as ``bench_server.py``'s do)::

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/bench_pool/cg.out \\
        .venv/bin/python benchmarks/bench_pool_steps.py --callgrind /tmp/bench_pool/cg.out

``bench_workers.py --callgrind`` counts a real run's processes; this script
splits the difference into the pool's steps, which a forked worker's counts
cannot show (its profile inherits the command's stack). The input is
``bench_workers.py``'s (``examples/data/combined.jsonl`` repeated with ids made
distinct), read and compiled as the command reads it (``combined_slots``), cut
into the pool's chunks of :data:`~trace_tasks.runs._engine.POOL_CHUNK` rows,
with a JSON Lines output of every column. Every step runs once uncounted (caches
warm), then once counted; instructions per row:

* ``one process``: what the command does per row with ``--workers 1`` after
  compiling it: the score (``score_response``), its output row counted in the
  summary (``output_record``) and written as JSON (``dumps``);
* ``score`` and ``record and count``: the first two of those alone (the JSON is
  the rest);
* the pool's steps, in their order: ``payload out`` (the command builds each
  chunk's payload and text heads and pickles the call, as the pool's feeder
  thread does), ``worker load`` (the worker unpickles it), ``worker score``
  (``score_payload``: the instances rebuilt from their handovers, each row
  scored and written as its line with its tallies), ``worker dump`` (the
  results pickled), ``results in`` (the command unpickles them) and ``count``
  (the command counts each row's tallies and takes its line, ``counted_text``).

The pool's own cost per row is the sum of its steps less ``one process``;
what a real run adds beyond it (the pipes, the pool's threads) is
``bench_workers.py``'s figure less this one.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import callgrind_helper, dumped_totals  # type: ignore[import-not-found]
from bench_workers import make_input  # type: ignore[import-not-found]

from trace_tasks.runs import _engine
from trace_tasks.runs._jsonl import Line, dumps
from trace_tasks.runs._rows import Slot, combined_slots, counted_text, output_record
from trace_tasks.runs._summary import Summary


class PoolSteps:
    """Each step a method of no argument; :attr:`ORDER` is the order they run and are printed in."""

    ORDER = (
        "one_process",
        "score",
        "record_and_count",
        "payload_out",
        "worker_load",
        "worker_score",
        "worker_dump",
        "results_in",
        "count",
    )

    def __init__(self, slots: list[Slot]) -> None:
        self.rows = [slot for slot in slots if slot.item is not None and slot.compiled is not None]
        self.chunks = [self.rows[i : i + _engine.POOL_CHUNK] for i in range(0, len(self.rows), _engine.POOL_CHUNK)]
        self.options: dict[str, Any] = {}
        self.opts = _engine.options_from(self.options)
        self.scores: list[dict[str, Any]] = []
        self.sent: list[bytes] = []
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self.returned: list[Any] = []
        self.back: list[bytes] = []
        self.received: list[Any] = []

    def one_process(self) -> None:
        summary = Summary()
        for slot in self.rows:
            assert slot.item is not None
            dumps(output_record(slot, _engine.score_response(slot.compiled, slot.item["response"], self.opts), summary))

    def score(self) -> None:
        self.scores = [_engine.score_response(slot.compiled, slot.item["response"], self.opts) for slot in self.rows]  # type: ignore[index]

    def record_and_count(self) -> None:
        summary = Summary()
        for slot, scores in zip(self.rows, self.scores, strict=True):
            output_record(slot, scores, summary)

    def payload_out(self) -> None:
        self.sent = []
        for chunk in self.chunks:
            call = (_engine.score_payload, (_engine.payload(chunk), self.options, False, _engine.as_text(chunk, "all")))
            self.sent.append(bytes(ForkingPickler.dumps(call)))

    def worker_load(self) -> None:
        self.calls = [pickle.loads(blob) for blob in self.sent]

    def worker_score(self) -> None:
        self.returned = [function(*args) for function, args in self.calls]

    def worker_dump(self) -> None:
        self.back = [bytes(ForkingPickler.dumps(results)) for results in self.returned]

    def results_in(self) -> None:
        self.received = [pickle.loads(blob) for blob in self.back]

    def count(self) -> None:
        summary = Summary()
        for chunk, results in zip(self.chunks, self.received, strict=True):
            for slot, row in zip(chunk, results, strict=True):
                counted_text(slot, row, summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--callgrind", metavar="OUT_FILE", required=True, help="valgrind's --callgrind-out-file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.jsonl"
        make_input(source, args.rows)
        texts = source.read_text().splitlines()
    steps = PoolSteps(list(combined_slots(Line(n, json.loads(text)) for n, text in enumerate(texts, 1))))
    for name in steps.ORDER:  # uncounted: caches warm, and each step's input made by the one before
        getattr(steps, name)()
    with tempfile.TemporaryDirectory() as folder:
        helper = callgrind_helper(Path(folder))
        helper.bench_start()
        for name in steps.ORDER:
            helper.bench_zero()
            getattr(steps, name)()
            helper.bench_dump(name.encode())
    totals = dict(zip(steps.ORDER, dumped_totals(args.callgrind, list(steps.ORDER)), strict=True))
    n = len(steps.rows)
    for name, total in totals.items():
        print(f"{name.replace('_', ' ')}: {total / n:,.0f} instructions per row")
    pool = sum(totals[name] for name in steps.ORDER[3:]) - totals["one_process"]
    print(f"the pool's own cost: {pool / n:,.0f} instructions per row ({n:,} rows)")


if __name__ == "__main__":
    main()
