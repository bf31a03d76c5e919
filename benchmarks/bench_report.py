"""``trace-tasks report`` on a million score rows: peak memory and wall time of the report subprocess.

Run from the repository root::

    uv run python benchmarks/bench_report.py                    # 1,000,000 rows
    uv run python benchmarks/bench_report.py --rows 200000
    uv run python benchmarks/bench_report.py --baseline         # also --baseline (a second 1M-row file, paired per row)
    uv run python benchmarks/bench_report.py --pythonpath /tmp/old/trace_core/src   # another build of trace_tasks

The rows are real: ``trace-tasks score examples/data/combined.jsonl`` is run
once (108 score lines over every annotation type), then its lines are repeated
and re-id'd (``id`` becomes ``<id>-r<repeat>``, ``line`` the running line
number) into a scores file of ``--rows`` lines, written as bytes (untimed). With
``--baseline`` a second such file, each ``overall`` moved by a seeded amount,
is the baseline.

``trace-tasks report`` then runs as a subprocess (``python -m trace_tasks.cli``
with ``--pythonpath`` prepended to ``PYTHONPATH``, so an older build copied
with ``git archive`` can be measured the same way); its peak resident set is
the ``ru_maxrss`` that ``os.wait4`` returns for it, its wall time measured
around it. The load average before and after is printed: on a shared machine,
check it first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import loadavg

ROOT = Path(__file__).resolve().parent.parent
COMBINED = ROOT / "examples" / "data" / "combined.jsonl"


def score_lines() -> list[dict[str, object]]:
    """The example data's score rows, as ``trace-tasks score`` writes them."""
    out = subprocess.run(
        [sys.executable, "-m", "trace_tasks.cli", "score", str(COMBINED), "-q", "-o", "-"],
        check=True, capture_output=True,
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def write_scores(path: Path, base: list[dict[str, object]], rows: int, shift_seed: int | None = None) -> None:
    """``rows`` lines: the base rows repeated, re-id'd and re-numbered (and ``overall`` moved when ``shift_seed``)."""
    rng = random.Random(shift_seed)
    with path.open("wb") as fh:
        for n in range(rows):
            row = dict(base[n % len(base)])
            row["id"] = f"{row['id']}-r{n // len(base)}"
            row["line"] = n + 1
            if shift_seed is not None:
                overall = float(row["overall"])  # type: ignore[arg-type]
                row["overall"] = min(max(overall + rng.choice((-0.2, 0.0, 0.0, 0.1)), 0.0), 1.0)
            fh.write(json.dumps(row, separators=(",", ":")).encode() + b"\n")


def run_report(args: list[str], pythonpath: str | None) -> tuple[float, int, int]:
    """Wall seconds, peak RSS (bytes) and exit status of one ``trace-tasks report`` subprocess."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH", "")) if p)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "trace_tasks.cli", "report", *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss * 1024, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--baseline", action="store_true", help="also report against a shifted copy (--baseline)")
    parser.add_argument("--pythonpath", default=None, help="a trace_tasks build to run instead (prepended to PYTHONPATH)")
    options = parser.parse_args()
    base = score_lines()
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp:
        scores = Path(tmp) / "scores.jsonl"
        t0 = time.perf_counter()
        write_scores(scores, base, options.rows)
        args = [str(scores), "-o", str(Path(tmp) / "report.html")]
        if options.baseline:
            before = Path(tmp) / "before.jsonl"
            write_scores(before, base, options.rows, shift_seed=1)
            args += ["--baseline", str(before)]
        print(f"wrote {options.rows:,} rows ({scores.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        print(f"load average before: {loadavg()}")
        wall, rss, code = run_report(args, options.pythonpath)
        print(f"load average after: {loadavg()}")
        size = (Path(tmp) / "report.html").stat().st_size if code == 0 else 0
    print(f"report{' --baseline' if options.baseline else ''}: exit {code}, {wall:.1f} s wall, "
          f"peak RSS {rss / 2**20:.0f} MiB, page {size / 1e3:.0f} kB")  # fmt: skip
    return code


if __name__ == "__main__":
    raise SystemExit(main())
