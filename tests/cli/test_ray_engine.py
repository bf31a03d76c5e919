"""The pieces of ``--engine ray`` that need no running Ray: reading blocks, parts and merging, errors, the node check's words.

The whole pipeline on a real two-node cluster is tests/integrations/test_ray_cluster.py.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from trace_tasks.errors import ClusterMismatchError, RayJobError
from trace_tasks.integrations.ray_cluster import environment_variables, fingerprint, node_differences
from trace_tasks.runs._jsonl import dumps
from trace_tasks.runs._ray_engine import (
    COUNT_FILE,
    _our_error,
    _runs,
    complete_parts,
    decoded_lines,
    merge_shard,
    parts_directory,
    read_shard,
    scored_block,
)
from trace_tasks.runs._summary import Summary

from .helpers import COMBINED, run_cli

pa = pytest.importorskip("pyarrow", reason="the [ray] extra is part of the dev environment; skipped only without it")
pq = pytest.importorskip("pyarrow.parquet")


def test_a_read_task_writes_the_line_count_before_its_last_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trace_tasks.runs._ray_engine.BLOCK_LINES", 3)
    shard = tmp_path / "a.jsonl"
    shard.write_bytes(b"\xef\xbb\xbf" + b"".join(b'{"n": %d}\n' % i for i in range(7)))
    count = tmp_path / "LINES"
    blocks = read_shard(4, str(shard), "jsonl", str(count))
    seen = []
    for block in blocks:
        last = block.column("line").to_pylist()[-1] == 7
        assert count.exists() == last  # the count is there exactly when the last block goes out
        seen.append(block)
    assert count.read_text() == "7"
    assert [b.column("line").to_pylist() for b in seen] == [[1, 2, 3], [4, 5, 6], [7]]
    assert set(seen[0].column("shard").to_pylist()) == {4}
    lines = list(decoded_lines(seen[0], ["jsonl"] * 5))
    assert [line.value for line in lines] == [{"n": 0}, {"n": 1}, {"n": 2}]  # the BOM of line 1 dropped


def test_an_empty_shard_yields_no_block_and_counts_zero(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_bytes(b"")
    assert list(read_shard(0, str(tmp_path / "e.jsonl"), "jsonl", str(tmp_path / "LINES"))) == []
    assert (tmp_path / "LINES").read_text() == "0"


def test_parquet_rows_travel_pickled_and_read_as_the_local_engine_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "answer_gt": json.dumps({"type": "integer", "value": 3}), "x": None}]), path)
    (block,) = read_shard(0, str(path), "parquet", None)
    (line,) = decoded_lines(block, ["parquet"])
    assert line.number == 1 and line.value == {"id": "a", "answer_gt": {"type": "integer", "value": 3}}  # null cell left out


def _scored(shard: int, numbers: list[int]) -> pa.Table:
    records = [{"id": f"r{n}", "line": n, "overall": n / 10} for n in numbers]
    return scored_block([shard] * len(numbers), numbers, records, Summary())


def test_runs_split_a_block_by_shard_and_gap_in_line_order() -> None:
    block = pa.concat_tables([_scored(1, [5, 6]), _scored(0, [3, 1, 2]), _scored(1, [9])])
    runs = [(shard, first, last, len(out)) for shard, first, last, out in _runs(block)]
    assert runs == [(0, 1, 3, 3), (1, 5, 6, 2), (1, 9, 9, 1)]


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "parquet"])
def test_a_shard_is_merged_only_when_its_parts_cover_every_line(tmp_path: Path, fmt: str) -> None:
    from trace_tasks.runs._ray_engine import _write_part

    output = tmp_path / f"out.{fmt}"
    parts = Path(parts_directory(str(output)))
    parts.mkdir()
    lines = {n: (dumps({"id": f"r{n}", "line": n, "overall": 0.5}) + "\n").encode() for n in range(1, 8)}
    _write_part(str(parts), 4, 7, [lines[n] for n in range(4, 8)], fmt)
    assert complete_parts(str(parts)) is None  # no count yet
    (parts / COUNT_FILE).write_text("7")
    assert not merge_shard(str(parts), str(output), fmt) and not output.exists()  # lines 1-3 missing
    _write_part(str(parts), 1, 3, [lines[n] for n in range(1, 4)], fmt)
    assert merge_shard(str(parts), str(output), fmt)
    assert not parts.exists() and output.exists()
    assert [p.name for p in tmp_path.iterdir()] == [output.name]  # no temporary left
    if fmt == "parquet":
        assert [row["line"] for row in pq.read_table(output).to_pylist()] == list(range(1, 8))
    else:
        data = output.read_bytes()
        assert (gzip.decompress(data) if fmt == "jsonl.gz" else data) == b"".join(lines.values())


def test_a_claimed_merge_is_left_to_its_claimant(tmp_path: Path) -> None:
    output = tmp_path / "o.jsonl"
    parts = Path(parts_directory(str(output)))
    parts.mkdir()
    (parts / COUNT_FILE).write_text("0")
    (parts / "MERGING").write_text("")
    assert not merge_shard(str(parts), str(output), "jsonl")
    assert merge_shard(str(parts), str(output), "jsonl", claim=False)  # the driver's last pass takes it anyway
    assert output.read_bytes() == b""


def test_block_totals_ride_in_the_first_row_only() -> None:
    summary = Summary()
    summary.add_scores("bbox", {"overall": 1.0})
    summary.add_error()
    block = scored_block([0, 0], [1, 2], [{"line": 1}, {"line": 2}], summary)
    cells = block.column("summary").to_pylist()
    assert cells[1] is None and pickle.loads(cells[0]).to_dict() == summary.to_dict()


def test_summaries_merge_exactly() -> None:
    parts = [Summary() for _ in range(3)]
    whole = Summary()
    for i, scores in enumerate([{"overall": 0.25, "format": 1.0}, {"overall": 0.5, "json_found": 0.0}, {"overall": 1.0}]):
        for target in (parts[i], whole):
            target.add_scores("point" if i else "bbox", scores)
    parts[2].add_error()
    whole.add_error()
    merged = Summary()
    for part in parts:
        merged.merge(part)
    assert merged.to_dict() == whole.to_dict()


def test_ray_failures_become_our_one_line_errors() -> None:
    class Wrapped(Exception):
        def __init__(self, cause: BaseException) -> None:
            super().__init__("ray::Write() failed")
            self.cause = cause

    ours = ClusterMismatchError("a Ray worker on n1 differs")
    assert _our_error(Wrapped(ours)) is ours
    text = "ray::MapWorker()\n  File x, line 3\nModuleNotFoundError: No module named 'trace_tasks'\n"
    assert isinstance(_our_error(RuntimeError(text)), ClusterMismatchError)
    other = _our_error(RuntimeError("Traceback\n  File y\nKeyError: 'x'\n"))
    assert isinstance(other, RayJobError) and str(other) == "the Ray job failed: KeyError: 'x'"


def test_node_differences_say_what_differs_from_the_drivers_side() -> None:
    here = fingerprint()
    there = json.loads(json.dumps(here))
    assert node_differences(here, there) == []
    del there["plugins"]["point"]
    there["trace-core"] = "0.0.9"
    name, rid = next(iter(there["current_reward_ids"].items()))
    there["current_reward_ids"][name] = rid + "_pinned"
    found = node_differences(here, there)
    assert found[0] == f"trace-core 0.0.9 there, {here['trace-core']} here"
    assert any(
        item.startswith("plugin point (trace-plugins-point ") and item.endswith("is not registered there") for item in found
    )
    assert f"the current reward id of {name} is {rid}_pinned there, {rid} here (pins differ)" in found


def test_the_settings_that_change_scores_travel_with_the_job() -> None:
    env = {"TRACE_TASKS_REWARD_IDS": "bbox=bbox_soft_iou_v0", "TRACE_TASKS_PLUGINS": "bbox", "HOME": "/root"}
    assert environment_variables(env) == {"TRACE_TASKS_REWARD_IDS": "bbox=bbox_soft_iou_v0", "TRACE_TASKS_PLUGINS": "bbox"}


def test_ray_engine_refuses_standard_input_and_address_needs_the_engine() -> None:
    proc = run_cli("score", "-", "--engine", "ray", "-q", stdin=b"")
    assert proc.returncode == 2
    assert (
        proc.stderr.decode()
        .strip()
        .endswith("--engine ray reads its inputs on the cluster: give a file, a directory or a glob, not '-'")
    )
    proc = run_cli("score", str(COMBINED), "--address", "auto", "-q")
    assert (proc.returncode, proc.stderr.decode().strip()) == (
        2,
        "trace-tasks score: error: --address joins a Ray cluster: add --engine ray",
    )


def test_scores_stream_keeps_descriptor_1_for_the_scores_alone() -> None:
    # What Ray's processes inherit (descriptor 1) goes to stderr; the scores keep the real stdout.
    code = (
        "import os\n"
        "from trace_tasks.runs._ray_engine import scores_stream\n"
        "with scores_stream(True) as out:\n"
        "    os.write(1, b'(raylet) noise\\n')\n"
        "    print('more noise')\n"
        "    out.write('{\"score\": 1}\\n')\n"
        "print('after')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b'{"score": 1}\nafter\n'
    assert proc.stderr == b"(raylet) noise\nmore noise\n"


def test_a_worker_that_would_score_otherwise_refuses_before_its_first_row() -> None:
    from trace_tasks.integrations.ray import _score_arrow_batch
    from trace_tasks.integrations.ray_cluster import check_worker

    here = fingerprint()
    check_worker(here)  # the same process: silent
    elsewhere = {**here, "plugins": {k: v for k, v in here["plugins"].items() if k != "segment"}}
    with pytest.raises(
        ClusterMismatchError,
        match=r"differs from the driver: plugin segment \(trace-plugins-segment .*\) is registered there only",
    ):
        check_worker(elsewhere)
    batch = pa.table({"response": ["{}"], "instance": ["{}"]})
    with pytest.raises(ClusterMismatchError):  # score_dataset's batches: the job fails, no row gets a silent error
        _score_arrow_batch(
            batch,
            response_column="response",
            instance_columns="instance",
            options={},
            prefix="",
            error_column="error",
            expected=elsewhere,
        )
