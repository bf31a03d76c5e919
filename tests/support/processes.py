"""Finding and watching real processes through /proc (Linux), for the tests that kill pool workers."""

from __future__ import annotations

from pathlib import Path


def pool_children(pid: int) -> list[int]:
    """The pool interpreters ``pid`` started, sorted: its spawned children, or the workers its fork server forked.

    A spawned worker is a child of ``pid`` running ``spawn_main``; a forked one
    is a child of ``pid``'s fork server (which, like the resource tracker, is not one).
    """
    table: dict[int, tuple[int, bytes]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry.name)] = (ppid, cmdline)
    servers = {child for child, (ppid, cmdline) in table.items() if ppid == pid and b"forkserver" in cmdline}
    found = [child for child, (ppid, cmdline) in table.items() if (ppid == pid and b"spawn_main" in cmdline) or ppid in servers]
    return sorted(found)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie or a dead process does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
