"""``workers > 1`` on an input of one chunk: scored in this process, and no pool is started for it.

One chunk (2,048 lines) goes to one worker whatever the pool's size, so a
pool would only add its start-up (forking a worker, or a fork server and a
resource tracker; the payload pickled both ways) and score nothing sooner. The pool here is the
stand-in of tests/support/pools.py (``fake_pool``): it runs each chunk at once
and counts its starts and chunks, so the tests see when the pool would have
started without starting processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.runs import RunSettings, _engine, score_files

from ..cli.helpers import COMBINED, read_jsonl, repeated_rows
from ..support.pools import FakeExecutor

POOL_CHUNK = _engine.POOL_CHUNK


def _input(path: Path, lines: int) -> Path:
    return repeated_rows(path, read_jsonl(COMBINED), lines)


def _score(source: Path, output: Path, workers: int, **more: Any) -> bytes:
    result = score_files(RunSettings(input=str(source), output=str(output), workers=workers, quiet=True, **more))
    assert result.exit_status == 0
    return output.read_bytes() if output.is_file() else b"".join(p.read_bytes() for p in sorted(output.iterdir()))


@pytest.mark.parametrize("lines", [1, 108, POOL_CHUNK])
def test_one_chunk_starts_no_pool_and_writes_the_same_bytes(tmp_path: Path, fake_pool: type[FakeExecutor], lines: int) -> None:
    source = _input(tmp_path / "in.jsonl", lines)
    one = _score(source, tmp_path / "one.jsonl", 1)
    two = _score(source, tmp_path / "two.jsonl", 2)
    assert fake_pool.started == 0
    assert one == two and len(two.splitlines()) == lines


def test_one_line_past_the_chunk_starts_the_pool(tmp_path: Path, fake_pool: type[FakeExecutor]) -> None:
    source = _input(tmp_path / "in.jsonl", POOL_CHUNK + 1)
    one = _score(source, tmp_path / "one.jsonl", 1)
    two = _score(source, tmp_path / "two.jsonl", 2)
    assert (fake_pool.started, fake_pool.submitted) == (1, 2)  # the second chunk has one line: it is handed out too
    assert one == two


def test_field_metrics_of_one_chunk_are_the_pools(tmp_path: Path, fake_pool: type[FakeExecutor]) -> None:
    source = _input(tmp_path / "in.jsonl", 300)
    summaries = {}
    for workers in (1, 2):
        summary = tmp_path / f"{workers}.json"
        _score(source, tmp_path / f"{workers}.jsonl", workers, summary=str(summary))
        summaries[workers] = json.loads(summary.read_text(encoding="utf-8"))
    assert fake_pool.started == 0
    assert summaries[1] == summaries[2]


def test_shards_of_one_chunk_each_start_no_pool(tmp_path: Path, fake_pool: type[FakeExecutor]) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(3):
        _input(folder / f"part-{k}.jsonl", 500 + k)
    one = _score(folder, tmp_path / "one", 1)
    two = _score(folder, tmp_path / "two", 2)
    assert fake_pool.started == 0
    assert one == two


def test_a_large_shard_among_small_ones_starts_the_pool_once(tmp_path: Path, fake_pool: type[FakeExecutor]) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _input(folder / "part-0.jsonl", 10)
    _input(folder / "part-1.jsonl", 2 * POOL_CHUNK + 5)  # three chunks
    _input(folder / "part-2.jsonl", 10)
    one = _score(folder, tmp_path / "one", 1)
    two = _score(folder, tmp_path / "two", 2)
    assert (fake_pool.started, fake_pool.submitted) == (1, 3)
    assert one == two
