"""Finding and watching real processes through /proc (Linux), for the tests that kill pool workers."""

from __future__ import annotations

from pathlib import Path


def _parent_and_command(pid: int) -> tuple[int, bytes] | None:
    """``pid``'s parent pid and command line, or None when it is gone (or /proc cannot say)."""
    try:
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return ppid, Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError, ValueError):
        return None


def pool_children(pid: int) -> list[int]:
    """The pool interpreters ``pid`` started, sorted: forked from it, spawned by it, or forked by its fork server.

    A worker forked from ``pid`` is a child with ``pid``'s own command line; a
    spawned one a child running ``spawn_main``; one forked by the fork server a
    child of that server (which, like the resource tracker, is not one).
    """
    table: dict[int, tuple[int, bytes]] = {}
    for entry in Path("/proc").iterdir():
        found = _parent_and_command(int(entry.name)) if entry.name.isdigit() else None
        if found is not None:
            table[int(entry.name)] = found
    own = table.get(pid, (0, b""))[1]
    servers = {child for child, (ppid, cmdline) in table.items() if ppid == pid and b"forkserver" in cmdline}
    children = [
        child
        for child, (ppid, cmdline) in table.items()
        if (ppid == pid and (b"spawn_main" in cmdline or cmdline == own)) or ppid in servers
    ]
    return sorted(children)


def forked_from(pid: int, child: int) -> bool:
    """Whether ``child`` is ``pid``'s own child running ``pid``'s own command line (a copy ``os.fork`` made)."""
    parent, found = _parent_and_command(pid), _parent_and_command(child)
    return parent is not None and found is not None and found == (pid, parent[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie or a dead process does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
