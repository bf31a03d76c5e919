"""When most lines of a run fail: the most common error, its count, and what likely went wrong.

A run of 2,504 failed lines that prints only ``0 scored, 2504 failed`` is a
dead end; almost always the cause is one of a few mix-ups (no ``--responses``,
INPUT and ``--responses`` swapped, a column that is no instance field). Errors
are counted by their kind: the message without its line number and with quoted
values (ids, field names' values) blanked, so one mistake is one kind. The
kinds are bounded (:data:`MAX_ERROR_KINDS`), so memory stays constant.
"""

from __future__ import annotations

import re

#: Distinct error kinds counted in a run; later new kinds are counted together as :data:`OTHER`.
MAX_ERROR_KINDS = 64
OTHER = "(other errors)"

_LINE = re.compile(r"^line \d+: ")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'")


def error_kind(message: str) -> str:
    """An error message as its kind: no leading ``line N:``, quoted values as ``'...'``."""
    return _QUOTED.sub("'...'", _LINE.sub("", message, count=1))


class ErrorKinds:
    """How many failed lines each kind of error has (at most :data:`MAX_ERROR_KINDS` kinds)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, message: str) -> None:
        kind = error_kind(message)
        counts = self.counts
        if kind not in counts and len(counts) >= MAX_ERROR_KINDS:
            kind = OTHER
        counts[kind] = counts.get(kind, 0) + 1

    def merge(self, other: ErrorKinds) -> None:
        for kind, count in other.counts.items():
            if kind not in self.counts and len(self.counts) >= MAX_ERROR_KINDS:
                kind = OTHER
            self.counts[kind] = self.counts.get(kind, 0) + count

    def most_common(self) -> tuple[str, int] | None:
        """The kind with the most lines (ties: the first seen), or ``None`` when nothing failed."""
        if not self.counts:
            return None
        return max(self.counts.items(), key=lambda item: item[1])


def likely_fix(kind: str, joined: bool) -> str:
    """What the user most likely has to change, given the most common error kind and the layout."""
    if not joined and "$.response: required field missing" in kind:
        return (
            "the lines hold no 'response': if INPUT is a file of instances, give the model's outputs "
            "with --responses FILE ({id, response} lines)"
        )
    if not joined and re.search(r"\$\.(answer_gt|annotation_gt|reward_contract): required field missing", kind):
        return (
            "the lines are no instances: if INPUT is the responses file, give the instances as INPUT "
            "and this file with --responses"
        )
    if joined and ("no instance with id" in kind or "a response needs the string id" in kind or "$.response" in kind):
        return (
            "the responses do not join the instances: are INPUT and --responses swapped? INPUT is the "
            "instances, --responses the {id, response} lines, and both use the same ids"
        )
    if "extra fields found" in kind or "unknown keys" in kind:
        return "a column is no instance field: carry it to the output with --keep COLUMN, or remove it"
    return "see the 'error' field of the output rows (jq -c 'select(.error)')"


def failure_note(kinds: ErrorKinds, lines: int, errors: int, joined: bool) -> str | None:
    """The note printed when most lines failed (more than half), else ``None``."""
    found = kinds.most_common()
    if found is None or errors * 2 <= lines:
        return None
    kind, count = found
    return (
        f"most lines failed ({errors} of {lines}); the most common error ({count} lines): {kind}\n"
        f"likely fix: {likely_fix(kind, joined)}"
    )
