"""The data warnings of the instances a command reads, counted per rule, for ``score`` and ``report``.

``validate`` prints every warning; the commands that use data only say, up
front, how many of each rule the instances earn (:class:`trace_tasks.data.DatasetLint`,
the same rules, group rules included), and that the scores are as the data says.
Nothing here changes a score.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from trace_tasks.data import CompiledInstance, DatasetLint
from trace_tasks.runs._jsonl import open_binary, read_lines
from trace_tasks.runs._output import STDIO
from trace_tasks.runs._rows import InstanceIndex, Slot


def image_dir(source: str | None) -> str | None:
    """The folder relative ``image`` paths are also tried from: the instances file's (``None`` for standard input)."""
    if source is None or source in (STDIO, "<stdin>"):
        return None
    return os.path.dirname(source) or os.curdir


def counts_text(counts: Mapping[str, int]) -> str:
    """``count-mismatch 1, single-key-map 2`` (rules in name order)."""
    return ", ".join(f"{rule} {count:,}" for rule, count in sorted(counts.items()))


class RunWarnings:
    """The warnings of one run's instances: an instances index, or the instances of streamed lines."""

    def __init__(self) -> None:
        self.lint = DatasetLint()
        self.finished = False

    def add_index(self, index: InstanceIndex) -> None:
        """Every valid instance of the --responses layout's index, in file order (its first line for each id)."""
        for source, line, instance in index.by_id.values():
            if isinstance(instance, CompiledInstance):
                self.lint.image_dir = image_dir(source)
                self.lint.add_compiled(instance, line)
        self.finish()

    def watch(self, slots: Iterable[Slot], source: str | None) -> Iterator[Slot]:
        """``slots`` unchanged, each valid line's instance counted on the way (the combined layout)."""
        self.lint.image_dir = image_dir(source)
        add = self.lint.add_compiled
        for slot in slots:
            if slot.compiled is not None:
                add(slot.compiled, slot.line)
            yield slot

    def finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.lint.finish()

    @property
    def counts(self) -> dict[str, int]:
        return dict(sorted(self.lint.counts.items()))

    def text(self, what: str, name: str) -> str:
        """One line for stderr: the counts per rule, how many instances (or lines) were looked at, what to run."""
        total = sum(self.lint.counts.values())
        checked = self.lint.lines
        if name in (STDIO, "<stdin>"):
            name, command = "<stdin>", "'trace-tasks validate -' on the same input"
        elif os.path.isfile(name):
            command = f"'trace-tasks validate {name}'"
        else:  # a directory or a glob of shards
            command = "'trace-tasks validate' on its files"
        return (
            f"{total:,} warning{'s' * (total != 1)} in {checked:,} {what}{'s' * (checked != 1)} of {name}: "
            f"{counts_text(self.lint.counts)}; the scores are as the data says (a warning never changes one): "
            f"{command} lists each"
        )


def report(warnings: RunWarnings, what: str, name: str, quiet: bool) -> None:
    """``trace-tasks score: warnings: ...`` on stderr when there is any (not with ``--quiet``)."""
    if warnings.lint.counts and not quiet:
        print(f"trace-tasks score: warnings: {warnings.text(what, name)}", file=sys.stderr)


def file_warnings(path: str) -> tuple[Counter[str], int]:
    """The warnings of an instances (or combined) file by rule, and the number of instance lines looked at."""
    lint = DatasetLint(image_dir=image_dir(path))
    with open_binary(path) as fh:
        for line in read_lines(fh, path):
            data: Any = line.value
            if line.error is not None or not isinstance(data, Mapping):
                continue
            if "response" in data:
                data = {k: v for k, v in data.items() if k != "response"}
            lint.add(data, line.number)
    lint.finish()
    return lint.counts, lint.lines


def report_instance_problems(problems: list[str], source: str) -> None:
    """Up front, before any scoring: a broken instances file is the first thing to know."""
    for problem in problems:
        print(f"trace-tasks score: instances: {problem}", file=sys.stderr)
    if problems:
        count = len(problems)
        print(
            f"trace-tasks score: {count} problem{'s' * (count != 1)} in {source}; responses to an "
            "unusable instance get an error line, and the exit code will be 1",
            file=sys.stderr,
        )
