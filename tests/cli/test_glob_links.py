"""Recursive input globs never follow a symbolic link to a directory under ``**`` (issue 37, item 9).

``glob.glob(recursive=True)`` walks into such links: one link back to a parent
repeated every shard under ~40 ever longer names, and two links multiplied
that until the glob never finished. The rule (``docs/cli.md``, "Globs and
symbolic links"): ``**`` walks real directories; a part of the pattern that
names or wildcards a linked directory still goes through it.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from tests.cli.helpers import COMBINED, read_jsonl, run_cli, write_lines
from trace_tasks.runs._glob import glob_paths
from trace_tasks.runs._shards import find_shards

ROWS = read_jsonl(COMBINED)

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or os.name != "posix", reason="needs symbolic links")


def _tree(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "a" / "b").mkdir(parents=True)
    (data / ".hidden").mkdir()
    write_lines(data / "top.jsonl", ROWS[:2])
    write_lines(data / "a" / "mid.jsonl", ROWS[2:4])
    write_lines(data / "a" / "b" / "low.jsonl", ROWS[4:6])
    write_lines(data / ".hidden" / "h.jsonl", ROWS[6:7])
    return data


def test_one_symlink_loop_adds_no_shard(tmp_path: Path) -> None:
    data = _tree(tmp_path)
    os.symlink("..", data / "a" / "up")  # data/a/up -> data
    found = [shard.path for shard in find_shards(f"{data}/**/*.jsonl")]
    assert found == [f"{data}/a/b/low.jsonl", f"{data}/a/mid.jsonl", f"{data}/top.jsonl"]


def test_two_symlink_loops_finish_and_score_each_file_once(tmp_path: Path) -> None:
    data = _tree(tmp_path)
    os.symlink("..", data / "a" / "up")
    os.symlink("../..", data / "a" / "b" / "upup")
    out = tmp_path / "out"
    proc = run_cli("score", f"{data}/**/*.jsonl", "-o", f"{out}/", "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(os.listdir(out)) == ["low.jsonl", "mid.jsonl", "top.jsonl"]


def test_a_named_or_wildcarded_link_is_still_followed(tmp_path: Path) -> None:
    data = _tree(tmp_path)
    os.symlink("a", data / "linked")
    os.symlink(data / "a" / "mid.jsonl", data / "file-link.jsonl")
    assert glob_paths(f"{data}/linked/*.jsonl") == [f"{data}/linked/mid.jsonl"]
    assert f"{data}/linked/mid.jsonl" in glob_paths(f"{data}/*/*.jsonl")
    assert f"{data}/linked/mid.jsonl" not in glob_paths(f"{data}/**/*.jsonl")  # '**' does not walk into it
    assert f"{data}/file-link.jsonl" in glob_paths(f"{data}/**/*.jsonl")  # a link to a file is a file


@pytest.mark.parametrize(
    "pattern",
    ["data/**/*.jsonl", "data/*.jsonl", "data/*/*.jsonl", "**/*.jsonl", "data/.*", "data/a/**/**/*.jsonl", "data/**/b/*"],
)
def test_without_links_the_glob_matches_as_glob_does(tmp_path: Path, pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert glob_paths(pattern) == sorted(set(glob.glob(pattern, recursive=True)))
    assert glob_paths(f"{tmp_path}/{pattern}") == sorted(set(glob.glob(f"{tmp_path}/{pattern}", recursive=True)))
