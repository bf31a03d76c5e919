"""``trace-tasks score --engine ray`` on a real two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``).

Each run is the command in its own process joining the cluster with
``--address``, as on a real cluster; the scores are compared with the local
engine's, which is the reference (tests/cli/test_one_pipeline.py ties it to
``score_trace_response``). ``cluster.shutdown()`` stops only the processes the
fixture started, never another Ray on the machine.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.runs._ray_engine import parts_directory

from ..cli.helpers import COMBINED, INSTANCES, RESPONSES

pytestmark = [pytest.mark.ray, pytest.mark.slow]

pa = pytest.importorskip("pyarrow", reason="the [ray] extra is part of the dev environment; skipped only without it")
pq = pytest.importorskip("pyarrow.parquet")
ray_cluster_utils = pytest.importorskip("ray.cluster_utils")

RUN_TIMEOUT_S = 600
JSON_FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "TRACE_TASKS_PLUGINS", "TRACE_TASKS_DISABLE_PLUGINS")}
    env.update(RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", **extra)
    return env


def _start_cluster(**second_node: Any) -> Any:
    cluster = ray_cluster_utils.Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 1, "env_vars": _env()})
    cluster.add_node(num_cpus=1, **{"env_vars": _env(), **second_node})
    cluster.wait_for_nodes()
    return cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head and a second node, one CPU each."""
    cluster = _start_cluster()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def score(
    *args: str, address: str | None = None, check: bool = False, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "trace_tasks.cli", "score", *args, "-q"]
    if address is not None:
        command += ["--engine", "ray", "--address", address, "--workers", "2"]
    proc = subprocess.run(command, capture_output=True, timeout=RUN_TIMEOUT_S, env=_env(), stdin=subprocess.DEVNULL, cwd=cwd)
    if check:
        assert proc.returncode in (0, 1), proc.stderr.decode()[-3000:]
    return proc


def _lines(path: Path) -> list[str]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _combined_rows(repeat: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in COMBINED.read_text().splitlines()]
    return rows * repeat


def _write_jsonl(path: Path, rows: list[Any], extra: str = "") -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + extra)


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    flat = [{k: json.dumps(v) if k in JSON_FIELDS else v for k, v in row.items()} for row in rows]
    columns = sorted({key for row in flat for key in row})
    pq.write_table(pa.Table.from_pylist([{key: row.get(key) for key in columns} for row in flat]), path)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of mixed shards: JSON Lines with broken lines, gzip, Parquet (instance fields as JSON text), an empty one."""
    directory = tmp_path_factory.mktemp("shards")
    rows = _combined_rows(60)  # 6,480 rows: two blocks of the first shard
    _write_jsonl(directory / "a.jsonl", rows[:5000], extra="not json\n\n[1, 2]\n")
    with gzip.open(directory / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps(row) + "\n" for row in rows[5000:]))
    _write_parquet(directory / "c.parquet", rows[:1500])
    (directory / "d.jsonl").write_text("")
    return directory


@pytest.fixture(scope="module")
def local_outputs(shards: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out"
    score(str(shards), "-o", f"{out}/", check=True)
    return out


def _same_outputs(left: Path, right: Path) -> None:
    assert (
        sorted(p.name for p in left.iterdir())
        == sorted(p.name for p in right.iterdir())
        == [
            "a.jsonl",
            "b.jsonl.gz",
            "c.parquet",
            "d.jsonl",
        ]
    )
    assert (left / "a.jsonl").read_bytes() == (right / "a.jsonl").read_bytes()
    assert gzip.decompress((left / "b.jsonl.gz").read_bytes()) == gzip.decompress((right / "b.jsonl.gz").read_bytes())
    assert pq.read_table(left / "c.parquet").equals(pq.read_table(right / "c.parquet"))
    assert (right / "d.jsonl").read_bytes() == b""


def test_a_directory_of_mixed_shards_is_exact_and_in_order_on_two_nodes(
    cluster: Any, shards: Path, local_outputs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = score(str(shards), "-o", f"{out}/", address=cluster.address, check=True)
    assert proc.returncode == 1  # the three broken lines of a.jsonl
    _same_outputs(local_outputs, out)
    rows = _lines(out / "a.jsonl")
    assert [row["line"] for row in rows] == list(range(1, 5004))  # every line, in input order
    assert sum("error" in row for row in rows) == 3 and sum(row.get("overall", 0) > 0 for row in rows) > 1000
    assert [row["line"] for row in pq.read_table(out / "c.parquet").to_pylist()] == list(range(1, 1501))
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no parts or temporaries left


def test_scores_on_standard_output_hold_only_scores(cluster: Any, shards: Path, local_outputs: Path) -> None:
    proc = score(str(shards / "a.jsonl"), address=cluster.address, check=True)
    assert proc.stdout == (local_outputs / "a.jsonl").read_bytes()  # not one Ray log line among them
    assert proc.stderr.decode().count("\n") >= 1  # Ray did say things: on stderr


def test_the_two_file_layout_is_exact_and_names_problems_as_the_local_engine(cluster: Any, tmp_path: Path) -> None:
    instances = [json.loads(line) for line in INSTANCES.read_text().splitlines()]
    responses = [json.loads(line) for line in RESPONSES.read_text().splitlines()]
    (tmp_path / "inst").mkdir()
    (tmp_path / "resp").mkdir()
    half = len(instances) // 2
    _write_jsonl(tmp_path / "inst" / "i1.jsonl", [*instances[:half], instances[0]])  # a duplicate id
    _write_jsonl(tmp_path / "inst" / "i2.jsonl", instances[half:], extra='{"id": "broken", "answer_gt": 3}\nnot json\n')
    shuffled = [responses[(7 * i) % len(responses)] for i in range(len(responses))] * 20  # rollouts of one id far apart
    _write_jsonl(
        tmp_path / "resp" / "r1.jsonl",
        shuffled[:1500],
        extra='{"id": "nope", "response": "x"}\n{"id": "broken", "response": "x"}\n',
    )
    _write_parquet(tmp_path / "resp" / "r2.parquet", shuffled[1500:])
    local = score(str(tmp_path / "inst"), "--responses", str(tmp_path / "resp"), "-o", f"{tmp_path}/local/", check=True)
    on_ray = score(
        str(tmp_path / "inst"),
        "--responses",
        str(tmp_path / "resp"),
        "-o",
        f"{tmp_path}/ray/",
        address=cluster.address,
        check=True,
    )
    assert local.returncode == on_ray.returncode == 1
    assert (tmp_path / "local" / "r1.jsonl").read_bytes() == (tmp_path / "ray" / "r1.jsonl").read_bytes()
    assert pq.read_table(tmp_path / "local" / "r2.parquet").equals(pq.read_table(tmp_path / "ray" / "r2.parquet"))

    def problems(proc: subprocess.CompletedProcess[bytes]) -> list[str]:
        return [line for line in proc.stderr.decode().splitlines() if line.startswith("trace-tasks score: instances:")]

    assert problems(on_ray) == problems(local) and len(problems(local)) >= 4
    assert any("duplicate id" in line for line in problems(local))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".trace-tasks-join.")]  # the scratch is gone


def _big_shards(directory: Path, count: int, rows_each: int) -> None:
    rows = _combined_rows(-(-rows_each // 108))[:rows_each]
    directory.mkdir()
    for i in range(count):
        _write_jsonl(directory / f"part-{i:02d}.jsonl", rows)


def _wait_for(predicate: Any, proc: subprocess.Popen[bytes], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
        assert time.monotonic() < deadline, "the run never got that far"
        time.sleep(0.2)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_resumes_without_duplicates(cluster: Any, tmp_path: Path, how: signal.Signals) -> None:
    inputs = tmp_path / "in"
    _big_shards(inputs, count=6, rows_each=12_000)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "trace_tasks.cli", "score", str(inputs), "-o", f"{out}/", "-q"]
    command += ["--engine", "ray", "--address", cluster.address, "--workers", "2"]
    proc = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    _wait_for(lambda: out.is_dir() and any(p.suffix == ".jsonl" for p in out.iterdir()), proc)
    proc.send_signal(how)
    _, stderr = proc.communicate(timeout=120)
    done = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert 1 <= len(done) < 6, "the kill should land mid-run"
    if how == signal.SIGTERM:
        assert proc.returncode == 143
        assert stderr.decode().strip().splitlines()[-1] == "trace-tasks score: terminated"
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # parts and temporaries removed
    complete = {name: (out / name).stat().st_ino for name in done}

    resumed = subprocess.run(
        [*command, "--resume"],
        env=_env(),
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    for name, inode in complete.items():
        assert (out / name).stat().st_ino == inode  # complete shards were left alone
    expected = (inputs / "part-00.jsonl").read_text().count("\n")
    for i in range(6):
        rows = _lines(out / f"part-{i:02d}.jsonl")
        assert [row["line"] for row in rows] == list(range(1, expected + 1))  # every line once, in order
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert (out / "part-05.jsonl").read_bytes() == (out / "part-00.jsonl").read_bytes()  # same input, same scores


# --- a node that cannot score as the driver would ----------------------------------------------------


def _fails_fast(cluster: Any, tmp_path: Path, shards: Path) -> str:
    start = time.monotonic()
    proc = score(str(shards / "a.jsonl"), "-o", str(tmp_path / "o.jsonl"), address=cluster.address)
    assert proc.returncode == 1, proc.stderr.decode()[-3000:]
    assert time.monotonic() - start < 120
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert not (tmp_path / "o.jsonl").exists()
    return last


def test_a_node_without_the_families_fails_the_job_at_once(shards: Path, tmp_path: Path) -> None:
    # The families installed but not registered there: what runtime_env={"py_modules": [...]} gives.
    cluster = _start_cluster(env_vars=_env(TRACE_TASKS_PLUGINS="trace-plugins-bbox"))
    try:
        last = _fails_fast(cluster, tmp_path, shards)
    finally:
        cluster.shutdown()
    assert last.startswith("trace-tasks: error: ") and "differs from this process" in last
    assert "plugin point (trace-plugins-point " in last and "is not registered there" in last
    node_ip = "127.0.0.1" if "127.0.0.1" in last else last.split(" (node ")[0].split()[-1]
    assert node_ip in last  # names the node


def test_a_node_without_the_project_fails_the_job_at_once(shards: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "trace_tasks"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'trace_tasks\'", name="trace_tasks")\n')
    cluster = _start_cluster(env_vars=_env(PYTHONPATH=str(shadow.parent)))
    try:
        last = _fails_fast(cluster, tmp_path, shards)
    finally:
        cluster.shutdown()
    assert "cannot run trace_tasks" in last and "No module named 'trace_tasks'" in last, last


def test_parts_directory_is_hidden_beside_its_output(tmp_path: Path) -> None:
    assert parts_directory(str(tmp_path / "x.jsonl")) == str(tmp_path / ".x.jsonl.parts")
