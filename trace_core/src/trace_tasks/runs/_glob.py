"""Input globs that always finish: ``**`` never descends through a symbolic link to a directory.

``glob.glob(..., recursive=True)`` follows links to directories under ``**``,
so a link back to a parent makes the walk revisit the same tree under an ever
longer name, and two such links multiply it: a glob through two symlink loops
never finished. Here ``**`` matches zero or more *real* directories (as
pathlib's ``glob`` does since Python 3.13): a link to a directory is not
searched by ``**``, while a part of the pattern that names or wildcards it
(``data/linked/*.jsonl``, ``data/*/*.jsonl``) still goes through it, and
links to files are matched like files. Every part but ``**`` matches as
``glob`` does: names starting with ``.`` only when the part starts with
``.``, and ``**`` skips hidden directories. Each path is found once.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re

_MAGIC = re.compile(r"[*?[]")
RECURSIVE = "**"


def glob_paths(pattern: str) -> list[str]:
    """The paths ``pattern`` matches, sorted, each once; ``**`` walks real directories only (the module says why)."""
    parts = pattern.split(os.sep)
    base = os.sep if parts[0] == "" and len(parts) > 1 else ""
    wanted: list[str] = []
    for part in parts:
        if part and not (part == RECURSIVE and wanted and wanted[-1] == RECURSIVE):  # '//' and '**/**' add nothing
            wanted.append(part)
    found: set[str] = set()
    _match(base, wanted, found)
    return sorted(found)


def _match(path: str, parts: list[str], found: set[str]) -> None:
    if not parts:
        if path:
            found.add(path)
        return
    head, rest = parts[0], parts[1:]
    if head == RECURSIVE:
        _match(path, rest, found)  # zero directories
        for entry in _entries(path):
            if entry.name.startswith("."):
                continue
            if not rest and not _is_real_dir(entry):
                found.add(os.path.join(path, entry.name))  # 'dir/**' names the files under dir too
            if _is_real_dir(entry):
                _match(os.path.join(path, entry.name), parts, found)
        return
    if _MAGIC.search(head) is None:
        child = os.path.join(path, head)
        if os.path.lexists(child) if not rest else os.path.isdir(child):
            _match(child, rest, found)
        return
    for entry in _entries(path):
        if entry.name.startswith(".") and not head.startswith("."):
            continue
        if fnmatch.fnmatch(entry.name, head):
            _match(os.path.join(path, entry.name), rest, found)


def _entries(path: str) -> list[os.DirEntry[str]]:
    with contextlib.suppress(OSError), os.scandir(path or os.curdir) as entries:
        return list(entries)
    return []


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
