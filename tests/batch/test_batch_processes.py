"""``score_trace_batch`` with child processes: the file hand-off, main-module safety, timeouts, dead children.

The children never import the caller's main module (a script without
``if __name__ == "__main__"`` would run again in each of them); a child that
hangs past ``timeout`` or dies has its chunk scored in the calling process,
with results equal to one worker's and the pool dropped.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing.spawn
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trace_tasks import TraceTasksError, score_trace_batch
from trace_tasks.data import _batch as batch_module

from .test_score_trace_batch import make_items, serial

POOLED = 2 * batch_module.MIN_ITEMS_PER_WORKER + 40  # just above the in-process threshold


@pytest.fixture
def no_pools() -> Iterator[None]:
    batch_module.shutdown_batch_pools()
    yield
    batch_module.shutdown_batch_pools()


def _child_pids() -> list[int]:
    pool = batch_module._pools[1]
    return list(pool._processes or {})  # type: ignore[attr-defined]


@pytest.mark.parametrize("timeout", [0, -1.0, math.nan, True, "5", [1]])
def test_invalid_timeout_raises(timeout: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        score_trace_batch(make_items(2), workers=2, timeout=timeout)


def test_the_default_timeout_grows_with_the_busiest_childs_items() -> None:
    base, per_item = batch_module.TIMEOUT_BASE_SECONDS, batch_module.TIMEOUT_SECONDS_PER_ITEM
    assert batch_module._default_timeout([[0] * 600, [0] * 400], 1) == base + 1000 * per_item
    assert batch_module._default_timeout([[0] * 600, [0] * 400], 2) == base + 600 * per_item  # one chunk each at best
    assert batch_module._default_timeout([], 1) == base


def test_the_main_module_filter_acts_only_while_this_module_starts_a_child() -> None:
    batch_module._install_main_free_filter()
    filtered = multiprocessing.spawn.get_preparation_data
    batch_module._install_main_free_filter()
    assert multiprocessing.spawn.get_preparation_data is filtered  # installed once, not wrapped again
    main_keys = {"init_main_from_path", "init_main_from_name"}
    # pytest's own entry point is the main module here: another start would re-import it.
    assert main_keys & set(filtered("other"))
    batch_module._launching.main_free = True
    try:
        data = filtered("ours")
    finally:
        batch_module._launching.main_free = False
    assert not main_keys & set(data)
    assert data["name"] == "ours" and data["sys_path"]  # the rest is what spawn always sends


def test_a_chunk_file_round_trips_in_process(tmp_path: Path) -> None:
    """The child's function run here: results equal in-process scoring."""
    items = make_items(20)
    path = tmp_path / "chunk"
    path.write_bytes(batch_module.pickle.dumps(({"format_weight": 0.25}, items)))
    batch_module._score_file(str(path), str(path) + ".out")
    assert batch_module._read_results(str(path) + ".out", 20) == serial(items, format_weight=0.25)
    with pytest.raises(TraceTasksError, match="for 19 items"):  # a short answer is not taken for the chunk
        batch_module._read_results(str(path) + ".out", 19)


def test_results_are_private_and_not_written_for_an_abandoned_chunk(tmp_path: Path) -> None:
    path = tmp_path / "chunk"
    path.write_bytes(batch_module.pickle.dumps(({}, make_items(2))))
    batch_module._score_file(str(path), str(path) + ".out")
    assert (tmp_path / "chunk.out").stat().st_mode & 0o077 == 0  # scores are no one else's business
    with pytest.raises(FileExistsError):  # never written through a file already there
        batch_module._score_file(str(path), str(path) + ".out")
    (tmp_path / "chunk.out").unlink()
    real_loads = batch_module.pickle.loads

    def caller_gives_up(blob: bytes) -> Any:  # the caller removes the input while the child scores
        path.unlink()
        return real_loads(blob)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_module.pickle, "loads", caller_gives_up)
        batch_module._score_file(str(path), str(path) + ".out")
    assert list(tmp_path.iterdir()) == []


def test_result_values_keep_their_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A plugin's numpy float: marshal, for one, would have turned it into 8 bytes.
    monkeypatch.setattr(batch_module, "_score_chunk", lambda chunk, options: [{"x": np.float64(0.5)} for _ in chunk])
    path = tmp_path / "chunk"
    path.write_bytes(batch_module.pickle.dumps(({}, make_items(3))))
    batch_module._score_file(str(path), str(path) + ".out")
    results = batch_module._read_results(str(path) + ".out", 3)
    assert results == [{"x": 0.5}] * 3 and type(results[0]["x"]) is np.float64


@pytest.mark.slow  # spawns a pool
def test_pooled_results_equal_one_worker_and_leave_no_files(
    no_pools: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_module.tempfile, "tempdir", str(tmp_path))
    items = make_items(POOLED)
    assert score_trace_batch(items, workers=2, format_weight=0.1) == serial(items, format_weight=0.1)
    assert 1 in batch_module._pools
    assert list(tmp_path.iterdir()) == []  # every chunk and result file removed


@pytest.mark.slow  # spawns a pool
def test_a_stuck_child_past_the_timeout_is_scored_in_process_and_the_pool_dropped(no_pools: None) -> None:
    items = make_items(POOLED)
    score_trace_batch(items, workers=2)  # starts the pool
    (pid,) = _child_pids()
    os.kill(pid, signal.SIGSTOP)  # stuck: alive, holds its chunk, never answers
    try:
        results = score_trace_batch(items, workers=2, timeout=0.5)
    finally:
        with contextlib.suppress(ProcessLookupError):  # killed and reaped already
            os.kill(pid, signal.SIGCONT)
    assert results == serial(items)
    assert 1 not in batch_module._pools, "the stuck pool is still kept"
    assert not _alive(pid), "the stuck child was left running"
    assert score_trace_batch(items, workers=2) == results  # a fresh pool next time
    assert _child_pids() != [pid]


@pytest.mark.slow  # spawns a pool twice
def test_a_dead_child_has_its_chunk_scored_in_process(no_pools: None) -> None:
    items = make_items(POOLED)
    score_trace_batch(items, workers=2)
    (pid,) = _child_pids()
    os.kill(pid, signal.SIGKILL)
    assert score_trace_batch(items, workers=2) == serial(items)
    assert score_trace_batch(items, workers=2) == serial(items)  # the broken pool was replaced
    assert _child_pids() != [pid]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


UNGUARDED = textwrap.dedent(
    """
    import os

    with open(os.environ["MARKER"], "a") as marker:  # runs again in every child that imports this script
        marker.write(__name__ + "\\n")

    from trace_tasks import resolve_reward_contract
    from trace_tasks.data import _batch as batch

    contract = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    items = [
        {
            "response": '{"answer": %d, "annotation": [0, 0, %d, 10]}' % (i % 3, 5 + i % 7),
            "answer_gt": {"type": "integer", "value": 1},
            "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
            "reward_contract": contract,
        }
        for i in range(COUNT)
    ]

    class Opaque:  # defined in the script: a child cannot load it, its chunk is scored here
        pass

    items[-5]["extra_info"] = Opaque()
    pooled = batch.score_trace_batch(items, workers=2, chunksize=300)
    assert 1 in batch._pools and batch._pools[1]._processes, "no child was started"
    assert pooled == batch.score_trace_batch(items), "pooled results differ"
    print("ok")
    """
).replace("COUNT", str(POOLED))


@pytest.mark.slow  # starts an interpreter and a pool
@pytest.mark.parametrize("how", ["path", "module"])
def test_a_script_without_a_main_guard_runs_once(tmp_path: Path, how: str) -> None:
    """Run as ``python script.py`` or ``python -m script``: the children never run it again."""
    (tmp_path / "unguarded_script.py").write_text(UNGUARDED)
    marker = tmp_path / "marker.txt"
    command = [sys.executable, "unguarded_script.py"] if how == "path" else [sys.executable, "-m", "unguarded_script"]
    env = {**os.environ, "MARKER": str(marker)}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]
    assert marker.read_text().split() == ["__main__"]  # before: also "__mp_main__", once per child
