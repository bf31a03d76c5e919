"""What the report learns of a scores file beside :class:`~trace_tasks.cli.report._data.Aggregate`, streamed the same way.

* :class:`Binary`: which reward components of a type only ever hold 0 or 1
  (an answer, a format gate): those are drawn as a share, not a histogram.
* :class:`CorrectWorst`: among the rows whose answer is correct
  (``answer_reward`` 1), the lowest ``annotation_reward`` of each type ("correct
  answer, worst annotation"): the rows ranked by ``overall`` alone are all
  wrong answers at 0, and teach less.
"""

from __future__ import annotations

import heapq

from trace_tasks.cli.report._data import COMPONENTS, Row, value


class Binary:
    """Per type, the components whose every scored value is exactly 0 or 1."""

    def __init__(self) -> None:
        self._not_binary: dict[str, set[str]] = {}

    def add(self, row: Row) -> None:
        if not row.scored:
            return
        seen = self._not_binary.setdefault(row.type, set())
        for key, _ in COMPONENTS:
            if key not in seen and row.scores.get(key) not in (0, 1):  # True/1.0/0.0 compare equal, as JSON writes them
                seen.add(key)

    def binary(self) -> dict[str, frozenset[str]]:
        """Per type with a scored row: the components that are 0/1 only."""
        keys = {key for key, _ in COMPONENTS}
        return {name: frozenset(keys - seen) for name, seen in self._not_binary.items()}


class CorrectWorst:
    """The ``count`` rows of each type with a correct answer and the lowest annotation reward (ties: file order)."""

    def __init__(self, count: int) -> None:
        self.count = max(count, 0)
        self._heaps: dict[str, list[tuple[float, int, Row]]] = {}

    def add(self, row: Row) -> None:
        if not self.count or not row.scored or row.scores.get("answer_reward") != 1:
            return
        heap = self._heaps.setdefault(row.type, [])
        item = (-value(row, "annotation_reward"), -row.number, row)  # a max-heap of the lowest
        if len(heap) < self.count:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)

    def rows(self) -> list[Row]:
        """Up to ``count`` rows taken in turn from each type (lowest annotation reward first; the type with the lowest first)."""
        per_type = sorted(
            ([row for _, _, row in sorted(heap, reverse=True)] for heap in self._heaps.values() if heap),
            key=lambda rows: (value(rows[0], "annotation_reward"), rows[0].number),
        )
        picked: list[Row] = []
        depth = 0
        while len(picked) < self.count and any(depth < len(rows) for rows in per_type):
            for rows in per_type:
                if depth < len(rows) and len(picked) < self.count:
                    picked.append(rows[depth])
            depth += 1
        return picked
