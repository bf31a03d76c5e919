"""``trace-tasks report`` over several checkpoints: peak memory and wall time for 4 scores files of a million rows each.

Run from the repository root::

    uv run python benchmarks/bench_report_runs.py                      # 4 files x 1,000,000 rows
    uv run python benchmarks/bench_report_runs.py --runs 4 --rows 200000
    uv run python benchmarks/bench_report_runs.py --keep /tmp/runs     # keep the files (and the page) there

The files are written the way ``bench_report.py`` writes one (the example
data's 108 real score rows repeated and re-id'd), checkpoint ``k`` with every
``overall`` raised by ``0.05 * k`` (clamped to [0, 1]): a planted trend the
curves must show. Then ``trace-tasks report FILE1 ... FILEN`` runs as a
subprocess; its peak resident set is the ``ru_maxrss`` that ``os.wait4``
returns, its wall time is measured around it, and the load average before and
after is printed (the machine is shared: check it first).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_report import run_report, score_lines
from timing import loadavg

#: How much each checkpoint raises every ``overall`` over the one before.
TREND = 0.05


def write_checkpoint(path: Path, base: list[dict[str, object]], rows: int, step: int) -> None:
    """``rows`` score lines: the base rows repeated and re-id'd, each ``overall`` raised by ``TREND * step``."""
    encoded = []
    for row in base:
        if isinstance(row.get("overall"), (int, float)):
            row = {**row, "overall": min(max(float(row["overall"]) + TREND * step, 0.0), 1.0)}  # type: ignore[arg-type]
        encoded.append(row)
    with path.open("wb") as fh:
        for n in range(rows):
            row = dict(encoded[n % len(encoded)])
            row["id"] = f"{row['id']}-r{n // len(encoded)}"
            row["line"] = n + 1
            fh.write(json.dumps(row, separators=(",", ":")).encode() + b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per scores file")
    parser.add_argument("--keep", default=None, help="a folder to write the files and the page to (kept)")
    options = parser.parse_args()
    base = score_lines()
    with tempfile.TemporaryDirectory(prefix="bench_report_runs_") as tmp:
        folder = Path(options.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        files = []
        for step in range(options.runs):
            path = folder / f"step{step}.jsonl"
            write_checkpoint(path, base, options.rows, step)
            files.append(str(path))
        size = sum(Path(f).stat().st_size for f in files)
        print(f"wrote {options.runs} x {options.rows:,} rows ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        print(f"load average before: {loadavg()}")
        page = folder / "report.html"
        wall, rss, code = run_report([*files, "-o", str(page)], None)
        print(f"load average after: {loadavg()}")
        kb = page.stat().st_size / 1e3 if code == 0 else 0
    print(
        f"report of {options.runs} runs x {options.rows:,} rows: exit {code}, {wall:.1f} s wall, "
        f"peak RSS {rss / 2**20:.0f} MiB, page {kb:.0f} kB"
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
