"""``trace-tasks score`` on sharded inputs: directories, globs, one output per shard, Parquet, ``--resume``.

Each sharded output is compared with what scoring its input file alone to a
single output gives (the contract of :mod:`trace_tasks.runs._shards`). In
process (``helpers.run_cli``), except the one test that SIGTERMs a real run.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import COMBINED, INSTANCES, RESPONSES, ROOT, read_jsonl, run_cli, write_lines
from trace_tasks.runs._shards import JSON_FIELDS
from trace_tasks.scoring import result_keys

MODULE = [sys.executable, "-m", "trace_tasks.cli"]
ROWS: list[dict[str, Any]] = read_jsonl(COMBINED)  # 108 valid rows, 12 annotation types


def _pa() -> Any:
    return pytest.importorskip("pyarrow")


def _pq() -> Any:
    _pa()
    import pyarrow.parquet

    return pyarrow.parquet


def _lines(rows: list[Any]) -> list[str]:
    return [row if isinstance(row, str) else json.dumps(row) for row in rows]


def _ok(proc: subprocess.CompletedProcess[bytes], code: int = 0) -> None:
    assert proc.returncode == code, proc.stderr.decode()


def _refused(proc: subprocess.CompletedProcess[bytes], words: str) -> str:
    """Exit 2 with one line on stderr naming the problem; nothing on stdout."""
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("trace-tasks score: error: "), err
    assert words in err, err
    assert proc.stdout == b""
    return err


def _score_alone(path: Path, out: Path) -> Path:
    """The reference: one input file scored to a single output file."""
    proc = run_cli("score", str(path), "-o", str(out), "-q")
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return out


def _temporaries(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


# --- Parquet builders and readers ------------------------------------------------------------


def _write_json_text_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Every instance field as JSON text (a string cell is written as it is: it may be text that is not JSON)."""
    cells = [{k: v if k not in JSON_FIELDS or isinstance(v, str) else json.dumps(v) for k, v in r.items()} for r in rows]
    _pq().write_table(_pa().Table.from_pylist(cells), path)
    return path


def _write_struct_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Instance fields as Arrow structs and lists, in a schema wider than the rows: its other fields are null.

    ``quality`` (top level), ``reward_contract.note`` and ``reward_contract.answer.note``
    are null in every row; were a null kept as a key, the instance would have
    keys it may not have (``extra fields found``, ``unknown keys``).
    ``metadata.source`` is set in some rows only. The answer and annotation
    targets vary in type across rows, so they are JSON text.
    """
    pa = _pa()
    side = [pa.field("id", pa.string()), pa.field("type", pa.string())]
    schema = pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("answer_gt", pa.string()),
            pa.field("annotation_gt", pa.string()),
            pa.field(
                "reward_contract",
                pa.struct(
                    [
                        pa.field("reward_contract_version", pa.string()),
                        pa.field("answer", pa.struct([*side, pa.field("note", pa.string())])),
                        pa.field("annotation", pa.struct(side)),
                        pa.field("note", pa.string()),
                    ]
                ),
            ),
            pa.field("image_size", pa.list_(pa.int64())),
            pa.field("metadata", pa.struct([pa.field("question", pa.string()), pa.field("source", pa.string())])),
            pa.field("quality", pa.string()),
            pa.field("response", pa.string()),
        ]
    )
    cells = [{**r, "answer_gt": json.dumps(r["answer_gt"]), "annotation_gt": json.dumps(r["annotation_gt"])} for r in rows]
    _pq().write_table(pa.Table.from_pylist(cells, schema=schema), path)
    return path


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    assert path.read_bytes()[:4] == b"PAR1", f"{path} is not Parquet"
    rows: list[dict[str, Any]] = _pq().read_table(path).to_pylist()
    return rows


def _as_parquet_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the Parquet output of these JSON output rows holds: id, line, every always-present key (0.0 on error), error."""
    keys = result_keys()
    return [
        {
            "id": row["id"],
            "line": row["line"],
            **{key: 0.0 if "error" in row else row[key] for key in keys},
            "error": row.get("error"),
        }
        for row in rows
    ]


# --- a directory of mixed shards -------------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """``in/``: JSONL (with a broken line), gzip JSONL, two Parquet files, an empty file, and names left out."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_lines(folder / "a.jsonl", [*_lines(ROWS[:20]), "{not json", *_lines(ROWS[20:40])])
    write_lines(folder / "b.jsonl.gz", ROWS[40:80])
    broken = {**ROWS[81], "answer_gt": "{not json"}  # JSON text that is not JSON: kept, and refused by validation
    c_rows = [ROWS[80], broken, *ROWS[82:]]
    write_lines(tmp_path / "c-source.jsonl", c_rows)
    _write_json_text_parquet(folder / "c.parquet", c_rows)
    d_rows = [{**r, "metadata": {**r["metadata"], "source": "synthetic"}} if i % 3 == 0 else r for i, r in enumerate(ROWS)]
    write_lines(tmp_path / "d-source.jsonl", d_rows)
    _write_struct_parquet(folder / "d.parquet", d_rows)
    (folder / "e.jsonl").write_bytes(b"")
    write_lines(folder / ".hidden.jsonl", ROWS[:3])  # hidden: not an input
    (folder / "notes.txt").write_text("not an input\n")
    (folder / "sub").mkdir()  # not recursed into
    write_lines(folder / "sub" / "f.jsonl", ROWS[:3])
    return folder


def _run_mixed(mixed: Path) -> Path:
    out = mixed.parent / "out"
    proc = run_cli("score", str(mixed), "-o", f"{out}/", "-q")
    _ok(proc, 1)  # the broken line of a.jsonl and the broken row of c.parquet
    return out


def test_mixed_directory_gives_one_output_per_shard_in_its_format(mixed: Path) -> None:
    out = _run_mixed(mixed)
    assert sorted(os.listdir(out)) == ["a.jsonl", "b.jsonl.gz", "c.parquet", "d.parquet", "e.jsonl"]
    assert (out / "b.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (out / "e.jsonl").read_bytes() == b""


def test_mixed_jsonl_outputs_equal_each_file_scored_alone(mixed: Path) -> None:
    out = _run_mixed(mixed)
    ref = mixed.parent / "ref"
    ref.mkdir()
    for name in ("a.jsonl", "e.jsonl"):
        assert (out / name).read_bytes() == _score_alone(mixed / name, ref / name).read_bytes(), name
    alone = _score_alone(mixed / "b.jsonl.gz", ref / "b.jsonl.gz")
    assert gzip.decompress((out / "b.jsonl.gz").read_bytes()) == gzip.decompress(alone.read_bytes())
    assert len(read_jsonl(out / "b.jsonl.gz")) == 40


def test_mixed_parquet_outputs_equal_the_json_lines_of_the_same_rows(mixed: Path) -> None:
    out = _run_mixed(mixed)
    ref = mixed.parent / "ref"
    ref.mkdir()
    for stem in ("c", "d"):
        got = _parquet_rows(out / f"{stem}.parquet")
        assert list(got[0]) == ["id", "line", *result_keys(), "error"]
        # The Parquet file scored alone to a single -o FILE.parquet: the same rows.
        assert _parquet_rows(_score_alone(mixed / f"{stem}.parquet", ref / f"{stem}.parquet")) == got
        # The same rows as JSON lines (instance fields as objects, no nulls): the same scores.
        source = read_jsonl(_score_alone(mixed.parent / f"{stem}-source.jsonl", ref / f"{stem}.jsonl"))
        assert got == _as_parquet_rows(source)
    d = _parquet_rows(out / "d.parquet")
    assert len(d) == 108 and all(row["error"] is None for row in d)  # structs with null fields are valid instances
    c = _parquet_rows(out / "c.parquet")
    assert [row["error"] is not None for row in c] == [False, True] + [False] * 26
    assert "line 2: " in c[1]["error"] and "$.answer_gt" in c[1]["error"]
    assert c[1]["overall"] == 0.0


def test_mixed_outputs_keep_input_order(mixed: Path) -> None:
    out = _run_mixed(mixed)
    a = read_jsonl(out / "a.jsonl")
    assert [row["line"] for row in a] == list(range(1, 42))
    assert [row["id"] for row in a] == [r["id"] for r in ROWS[:20]] + [None] + [r["id"] for r in ROWS[20:40]]
    assert "error" in a[20] and "not valid JSON" in a[20]["error"]
    b = read_jsonl(out / "b.jsonl.gz")
    assert [(row["line"], row["id"]) for row in b] == [(n, r["id"]) for n, r in enumerate(ROWS[40:80], start=1)]
    d = _parquet_rows(out / "d.parquet")
    assert [(row["line"], row["id"]) for row in d] == [(n, r["id"]) for n, r in enumerate(ROWS, start=1)]


# --- globs -----------------------------------------------------------------------------------


def test_glob_input_takes_the_files_it_matches(mixed: Path) -> None:
    out = mixed.parent / "out"
    _ok(run_cli("score", str(mixed / "*.jsonl"), "-o", str(out), "-q"), 1)  # -o: a new name, made a directory
    assert sorted(os.listdir(out)) == ["a.jsonl", "e.jsonl"]  # not .hidden.jsonl, not sub/f.jsonl
    assert (out / "a.jsonl").read_bytes() == _score_alone(mixed / "a.jsonl", mixed.parent / "a.jsonl").read_bytes()


def test_recursive_glob_input(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "x").mkdir(parents=True)
    (runs / "y" / "z").mkdir(parents=True)
    write_lines(runs / "r.jsonl.gz", ROWS[:10])
    write_lines(runs / "x" / "p.jsonl.gz", ROWS[10:30])
    write_lines(runs / "y" / "z" / "q.jsonl.gz", ROWS[30:35])
    write_lines(runs / "y" / "skip.jsonl", ROWS[:2])  # not matched by the pattern
    out = tmp_path / "out"
    _ok(run_cli("score", str(runs / "**" / "*.jsonl.gz"), "-o", f"{out}/", "-q"))
    assert sorted(os.listdir(out)) == ["p.jsonl.gz", "q.jsonl.gz", "r.jsonl.gz"]
    for name, rows in (("r.jsonl.gz", ROWS[:10]), ("p.jsonl.gz", ROWS[10:30]), ("q.jsonl.gz", ROWS[30:35])):
        assert [row["id"] for row in read_jsonl(out / name)] == [r["id"] for r in rows]


# --- the --responses layout ------------------------------------------------------------------


def _joined_fixture(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Instances in two shards (one of them invalid at its line 3) and all of them in one file; responses in two shards."""
    instances = read_jsonl(INSTANCES)
    assert len(instances) == 36
    # annotation_gt: an instance without answer_gt is valid (annotation_only), one without annotation_gt never is
    instances[20] = {k: v for k, v in instances[20].items() if k != "annotation_gt"}
    inst = tmp_path / "inst"
    inst.mkdir()
    write_lines(inst / "i1.jsonl", instances[:18])
    write_lines(inst / "i2.jsonl.gz", instances[18:])
    everything = write_lines(tmp_path / "all.jsonl", instances)
    responses = read_jsonl(RESPONSES)
    resp = tmp_path / "resp"
    resp.mkdir()
    write_lines(resp / "r1.jsonl", [*responses[:50], {"id": "nope-00", "response": "{}"}])
    write_lines(resp / "r2.jsonl.gz", responses[50:])
    return inst, everything, resp


def test_sharded_instances_and_responses_equal_one_instances_file(tmp_path: Path) -> None:
    inst, everything, resp = _joined_fixture(tmp_path)
    sharded, single = tmp_path / "sharded", tmp_path / "single"
    a = run_cli("score", str(inst), "--responses", str(resp), "-o", f"{sharded}/", "-q")
    b = run_cli("score", str(everything), "--responses", str(resp), "-o", f"{single}/", "-q")
    _ok(a, 1)
    _ok(b, 1)
    # The instances' problems name the shard and its own line; the one file, its line.
    assert f"instances: {inst / 'i2.jsonl.gz'} line 3: $.annotation_gt" in a.stderr.decode()
    assert f"instances: {everything} line 21: $.annotation_gt" in b.stderr.decode()
    assert sorted(os.listdir(sharded)) == sorted(os.listdir(single)) == ["r1.jsonl", "r2.jsonl.gz"]
    names = {
        "sharded": ((f"({inst / 'i2.jsonl.gz'} line 3)", "(INSTANCE)"), (f"in {inst}", "in INSTANCES")),
        "single": ((f"({everything} line 21)", "(INSTANCE)"), (f"in {everything}", "in INSTANCES")),
    }

    def rows(path: Path, kind: str) -> list[dict[str, Any]]:
        found = read_jsonl(path)
        for row in found:
            if "error" in row:
                for old, new in names[kind]:
                    row["error"] = row["error"].replace(old, new)
        return found

    for name in ("r1.jsonl", "r2.jsonl.gz"):
        assert rows(sharded / name, "sharded") == rows(single / name, "single"), name
    r1, r2 = read_jsonl(sharded / "r1.jsonl"), read_jsonl(sharded / "r2.jsonl.gz")
    assert len(r1) == 51 and len(r2) == 58
    assert r1[-1]["error"] == f"line 51: no instance with id 'nope-00' in {inst}"
    invalid = [row for row in r2 if "error" in row]
    assert len(invalid) == 3  # the three responses to instance 21
    assert all(f"({inst / 'i2.jsonl.gz'} line 3) is invalid" in row["error"] for row in invalid)
    assert sum("error" not in row for row in r1 + r2) == 108 - 3


def test_duplicate_id_across_instance_shards_names_both_files(tmp_path: Path) -> None:
    instances = read_jsonl(INSTANCES)
    inst = tmp_path / "inst"
    inst.mkdir()
    first = write_lines(inst / "i1.jsonl", instances[:18])
    second = write_lines(inst / "i2.jsonl", [*instances[18:], instances[0]])  # bbox-00 again, at line 19
    out = tmp_path / "scores.jsonl"
    proc = run_cli("score", str(inst), "--responses", str(RESPONSES), "-o", str(out), "-q")
    _ok(proc, 1)
    message = f"duplicate id 'bbox-00' ({first} line 1 and {second} line 19)"
    assert f"instances: {second} line 19: {message}" in proc.stderr.decode()
    rows = read_jsonl(out)
    assert [row["line"] for row in rows if "error" in row] == [1, 2, 3]  # the three responses to bbox-00
    assert all(message in row["error"] for row in rows[:3])


# --- resume and temporaries ------------------------------------------------------------------


def _three_shards(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    write_lines(folder / "a.jsonl", ROWS[:30])
    write_lines(folder / "b.jsonl.gz", ROWS[30:70])
    write_lines(folder / "c.jsonl", ROWS[70:])
    return folder


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def test_resume_skips_complete_outputs_and_redoes_a_missing_one(tmp_path: Path) -> None:
    folder, out = _three_shards(tmp_path), tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    before = {name: (out / name).read_bytes() for name in ("a.jsonl", "b.jsonl.gz", "c.jsonl")}
    stamps = {name: _stamp(out / name) for name in ("a.jsonl", "c.jsonl")}
    (out / "b.jsonl.gz").unlink()
    time.sleep(0.01)  # a rewrite would show in the modification time too
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")
    _ok(proc)
    err = proc.stderr.decode()
    assert "trace-tasks score: resume: 2 of 3 output(s) already complete, skipped" in err
    assert "40 lines: 40 scored" in err  # the summary counts b only
    assert {name: _stamp(out / name) for name in stamps} == stamps  # not rewritten
    assert gzip.decompress((out / "b.jsonl.gz").read_bytes()) == gzip.decompress(before["b.jsonl.gz"])
    # Without --resume every output is written again (a new file renamed into place).
    _ok(run_cli("score", str(folder), "-o", str(out), "-q"))
    assert _stamp(out / "a.jsonl") != stamps["a.jsonl"]
    assert (out / "a.jsonl").read_bytes() == before["a.jsonl"]


def test_stale_temporaries_of_the_outputs_are_removed(tmp_path: Path) -> None:
    folder, out = _three_shards(tmp_path), tmp_path / "out"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q"))
    stale = [".a.jsonl.1234abcd.tmp", ".b.jsonl.gz.deadbeef.tmp"]
    kept = [".other.jsonl.1234abcd.tmp", ".a.jsonl.notahex.tmp", "a.jsonl.1234abcd.tmp"]
    for name in stale + kept:
        (out / name).write_text("half a shard\n")
    proc = run_cli("score", str(folder), "-o", str(out), "--resume")  # nothing to score: they go all the same
    _ok(proc)
    assert "resume: 3 of 3 output(s) already complete" in proc.stderr.decode()
    assert _temporaries(out) == sorted(kept)
    (out / ".c.jsonl.0000ffff.tmp").write_text("half\n")
    _ok(run_cli("score", str(folder), "-o", str(out), "-q"))
    assert _temporaries(out) == sorted(kept)


def test_summary_json_of_a_sharded_run_lists_outputs_and_skipped(tmp_path: Path) -> None:
    folder, out, summary = _three_shards(tmp_path), tmp_path / "out", tmp_path / "summary.json"
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q", "--summary-json", str(summary)))
    data = json.loads(summary.read_text())
    assert data["outputs"] == [f"{out}/a.jsonl", f"{out}/b.jsonl.gz", f"{out}/c.jsonl"]
    assert data["skipped_complete"] == 0 and data["lines"] == 108
    (out / "c.jsonl").unlink()
    _ok(run_cli("score", str(folder), "-o", f"{out}/", "-q", "--resume", "--summary-json", str(summary)))
    data = json.loads(summary.read_text())
    assert data["outputs"] == [f"{out}/c.jsonl"]  # written by this run; the complete ones are counted
    assert data["skipped_complete"] == 2 and data["lines"] == 108 - 70
    assert data["skipped_outputs"] == [f"{out}/a.jsonl", f"{out}/b.jsonl.gz"]
    # A run of one file to one file does not have these keys.
    _ok(run_cli("score", str(COMBINED), "-o", str(tmp_path / "one.jsonl"), "-q", "--summary-json", str(summary)))
    assert "outputs" not in json.loads(summary.read_text())


# --- refused -------------------------------------------------------------------------------------


def test_many_shards_to_standard_output_are_refused(tmp_path: Path) -> None:
    folder = _three_shards(tmp_path)
    _refused(run_cli("score", str(folder)), f"{folder} names 3 shard(s), written one output each: give -o DIR")
    _refused(run_cli("score", str(folder / "*.jsonl"), "-o", "-"), "give -o DIR")


def test_two_shards_with_one_output_name_are_refused(tmp_path: Path) -> None:
    # a.jsonl and a.jsonl.gz keep their formats (two names); a.json and a.jsonl are both JSON Lines: a.jsonl.
    folder = tmp_path / "in"
    folder.mkdir()
    write_lines(folder / "a.jsonl", ROWS[:3])
    write_lines(folder / "a.jsonl.gz", ROWS[3:6])
    write_lines(folder / "a.json", ROWS[6:9])
    out = tmp_path / "out"
    err = _refused(run_cli("score", str(folder), "-o", f"{out}/"), "would both be written to")
    assert f"{folder / 'a.json'} and {folder / 'a.jsonl'} would both be written to {out}/a.jsonl" in err
    assert not out.exists()  # refused before anything was made
    # One name in two directories of a recursive glob.
    for sub in ("x", "y"):
        (tmp_path / "runs" / sub).mkdir(parents=True)
        write_lines(tmp_path / "runs" / sub / "p.jsonl.gz", ROWS[:3])
    err = _refused(run_cli("score", str(tmp_path / "runs" / "**" / "*.gz"), "-o", f"{out}/"), "would both be written to")
    assert f"{tmp_path / 'runs' / 'x' / 'p.jsonl.gz'} and {tmp_path / 'runs' / 'y' / 'p.jsonl.gz'}" in err
    assert not out.exists()


def test_output_directory_that_is_the_input_directory_is_refused(tmp_path: Path) -> None:
    folder = _three_shards(tmp_path)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    _refused(run_cli("score", str(folder), "-o", str(folder)), "is the input directory")
    _refused(run_cli("score", str(folder), "-o", f"{tmp_path}/./in/"), "is the input directory")
    # A glob's outputs that are its inputs, and .json inputs (outputs .jsonl: the next run's inputs).
    _refused(run_cli("score", str(folder / "*.jsonl"), "-o", str(folder)), "is an input: give -o another directory")
    write_lines(folder / "x.json", ROWS[:3])
    _refused(run_cli("score", str(folder), "-o", str(folder)), "is the input directory")
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "x.json"} == before


def test_an_output_that_is_an_instances_shard_is_refused(tmp_path: Path) -> None:
    instances = read_jsonl(INSTANCES)
    inst = tmp_path / "inst"
    inst.mkdir()
    write_lines(inst / "i1.jsonl", instances[:18])
    write_lines(inst / "r.jsonl", instances[18:])  # the name a response shard r.jsonl is written to
    before = {p.name: p.read_bytes() for p in inst.iterdir()}
    resp = tmp_path / "resp"
    resp.mkdir()
    shutil.copy(RESPONSES, resp / "r.jsonl")
    _refused(run_cli("score", str(inst), "--responses", str(resp), "-o", str(inst)), "is the input directory")
    linked = tmp_path / "linked"
    linked.mkdir()
    os.link(inst / "r.jsonl", linked / "r.jsonl")  # the same file under another directory
    _refused(run_cli("score", str(inst), "--responses", str(resp), "-o", str(linked)), f"is the instances file {inst}")
    one = run_cli("score", str(inst), "--responses", str(resp / "r.jsonl"), "-o", str(inst / "i1.jsonl"))
    _refused(one, f"the output {inst / 'i1.jsonl'} is the instances file")
    assert {p.name: p.read_bytes() for p in inst.iterdir()} == before


def test_a_file_name_as_the_output_of_many_shards_is_refused(tmp_path: Path) -> None:
    folder = _three_shards(tmp_path)
    _refused(run_cli("score", str(folder), "-o", str(tmp_path / "scores.jsonl")), "names a file; give a directory")
    assert not (tmp_path / "scores.jsonl").exists()


def test_nothing_to_read_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x\n")
    write_lines(empty / ".hidden.jsonl", ROWS[:1])
    out = tmp_path / "out"
    _refused(run_cli("score", str(empty), "-o", f"{out}/"), f"directory {empty} holds no input files")
    _refused(run_cli("score", str(tmp_path / "none" / "*.jsonl"), "-o", f"{out}/"), "holds no input files")
    _refused(run_cli("score", str(tmp_path / "**" / "*.parquet"), "-o", f"{out}/"), "glob ")
    assert not out.exists()


# --- Parquet in and out ------------------------------------------------------------------------


def test_single_parquet_output_file(tmp_path: Path) -> None:
    out = tmp_path / "scores.parquet"
    _ok(run_cli("score", str(COMBINED), "-o", str(out), "-q"))
    plain = run_cli("score", str(COMBINED), "-q")
    _ok(plain)
    assert _parquet_rows(out) == _as_parquet_rows(read_jsonl(plain.stdout))
    assert _temporaries(tmp_path) == []


def test_a_parquet_file_that_is_not_parquet_is_exit_2_naming_it(tmp_path: Path) -> None:
    _pa()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b'{"id": "x", "response": "not Parquet"}\n')
    out = tmp_path / "scores.jsonl"
    err = _refused(run_cli("score", str(bad), "-o", str(out)), f"cannot open {bad}: not a readable Parquet file")
    assert "Traceback" not in err
    assert not out.exists() and _temporaries(tmp_path) == []
    # Among shards: the shards before it are complete, it has no output, no temporary is left.
    folder = tmp_path / "in"
    folder.mkdir()
    write_lines(folder / "a.jsonl", ROWS[:5])
    shutil.copy(bad, folder / "b.parquet")
    outs = tmp_path / "out"
    _refused(run_cli("score", str(folder), "-o", f"{outs}/", "-q"), f"cannot open {folder / 'b.parquet'}")
    assert os.listdir(outs) == ["a.jsonl"]
    assert (outs / "a.jsonl").read_bytes() == _score_alone(folder / "a.jsonl", tmp_path / "a.jsonl").read_bytes()


# --- SIGTERM mid-run, then --resume (a real process) -------------------------------------------


@pytest.mark.slow
def test_sigterm_keeps_complete_outputs_and_resume_finishes(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    lines = COMBINED.read_text().splitlines()
    names = ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"]
    for k, name in enumerate(names):  # 20,000 lines each (about a second and a half of scoring), each its own order
        (folder / name).write_text("".join(lines[(7 * k + i) % len(lines)] + "\n" for i in range(20_000)))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*MODULE, "score", str(folder), "-o", f"{out}/"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "a.jsonl").exists():
            assert proc.poll() is None, "the run ended before its first output was complete"
            assert time.monotonic() < deadline, "no output after 120 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, stdout, stderr) == (143, b"", b"trace-tasks score: terminated\n")
    left = sorted(os.listdir(out))
    assert left[0] == "a.jsonl" and len(left) < len(names), left  # the kill landed mid-run
    assert _temporaries(out) == []
    complete = {name: (out / name).read_bytes() for name in left}
    assert all(len(data.splitlines()) == 20_000 for data in complete.values())

    resumed = run_cli("score", str(folder), "-o", str(out), "--resume", "-q")
    _ok(resumed)
    assert sorted(os.listdir(out)) == names
    assert {name: (out / name).read_bytes() for name in left} == complete
    whole = tmp_path / "whole"
    _ok(run_cli("score", str(folder), "-o", f"{whole}/", "-q"))
    for name in names:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
