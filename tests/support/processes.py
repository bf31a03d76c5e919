"""Finding and watching real processes through /proc (Linux), for the tests that kill pool workers."""

from __future__ import annotations

from pathlib import Path


def pool_children(pid: int) -> list[int]:
    """The spawned pool interpreters whose parent is ``pid``, sorted (the resource tracker is not one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie or a dead process does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
