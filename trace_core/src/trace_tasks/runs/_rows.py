"""Turning input lines into scoring work: one :class:`Slot` per input line.

Two layouts:

* **combined**: each line is an instance with its ``response`` field;
* **joined**: an instances file indexed by ``id`` (held in memory) and a
  responses file of ``{"id": ..., "response": ...}`` lines, streamed; several
  responses may share one instance.

Every instance is validated and compiled through an
:class:`~trace_tasks.data.InstanceCache` (each distinct content once). A
line that cannot be scored (an invalid instance among them, with all its
problems) becomes a slot with an ``error`` naming the line number and the
problem, so no line is ever lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from trace_tasks.data import CompiledInstance, InstanceCache, InstanceError, TrainInstance
from trace_tasks.runs._columns import stable_record
from trace_tasks.runs._jsonl import Line, dumps
from trace_tasks.runs._metrics import ANSWER_KEY, METRICS_KEY
from trace_tasks.runs._mismatches import MISMATCHES_KEY
from trace_tasks.runs._summary import TALLIED, Summary

#: A scored row as a pool worker sends it back: its output line (without the newline), and the scores the summary reads.
RowText = tuple[str, dict[str, Any]]


@attrs.frozen(slots=True)
class Slot:
    """One input line: either a response to score against its compiled instance, or an error.

    ``item`` holds the keyword arguments of ``score_trace_response`` (for a
    process pool or Ray); ``compiled`` scores the same in this process.
    """

    line: int
    id: Any
    item: dict[str, Any] | None = None
    annotation_type: str = ""
    error: str | None = None
    compiled: CompiledInstance | None = None
    #: The input's columns kept in the output row (``score --keep``), under ``"extra"``; ``None``: none asked for.
    extra: dict[str, Any] | None = None
    #: The kept columns this line (or its instance) has: a column found on no line is an error of the run.
    found: tuple[str, ...] = ()
    #: The columns of a combined line that are no instance field and not kept: ignored, named in one warning.
    ignored: tuple[str, ...] = ()


def build(data: Mapping[str, Any], cache: InstanceCache, record: str | None = None) -> CompiledInstance | InstanceError:
    """The compiled instance of a record (each distinct content compiled once), or the error listing its problems."""
    try:
        return cache.compile(data, record=record)
    except InstanceError as exc:
        return exc


def _row_id(data: Any) -> Any:
    return data.get("id") if isinstance(data, Mapping) else None


def _response(data: Mapping[str, Any]) -> str | None:
    """The response text, or None when missing or not a string."""
    response = data.get("response")
    return response if isinstance(response, str) else None


def _response_problem(data: Mapping[str, Any]) -> str:
    if "response" not in data:
        return "$.response: required field missing"
    return f"$.response: must be a string (the decoded model output), got {type(data['response']).__name__}"


def _slot(
    line: int,
    instance: CompiledInstance,
    response: str,
    row_id: Any,
    extra: dict[str, Any] | None = None,
    found: tuple[str, ...] = (),
) -> Slot:
    item = {"response": response, **instance.scoring_kwargs()}
    return Slot(line, row_id, item, instance.annotation_type, compiled=instance, extra=extra, found=found)


#: The fields of an instance: a kept column of that name stays in the instance too (``--keep metadata``).
_INSTANCE_KEYS = frozenset(field.name for field in attrs.fields(TrainInstance))


def instance_part(data: Mapping[str, Any], keep: tuple[str, ...] = ()) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The instance an input line holds, and the columns left out of it (``score``, ``validate``, ``explain`` alike).

    A combined line (it has a ``response``) is its instance fields: every other
    column is left out (a trainer dump's ``step``; the kept ones are the
    user's, the others ignored with a warning). A line of an instances file
    loses only the ``keep`` columns that are no instance field: any other
    unknown field stays, for validation to name it.
    """
    if "response" in data:
        return {k: v for k, v in data.items() if k in _INSTANCE_KEYS}, tuple(
            k for k in data if k not in _INSTANCE_KEYS and k != "response" and k not in keep
        )
    dropped = frozenset(keep) - _INSTANCE_KEYS
    return {k: v for k, v in data.items() if k not in dropped}, ()


#: What :func:`column_value` returns for a column a row does not have.
MISSING: Any = object()


def column_value(data: Any, column: str) -> Any:
    """The value of ``column`` in a row: a key of that name, else a dotted path (``metadata.task``); :data:`MISSING` when absent."""
    if not isinstance(data, Mapping):
        return MISSING
    if column in data:
        return data[column]
    if "." not in column:
        return MISSING
    node: Any = data
    for step in column.split("."):
        if not isinstance(node, Mapping) or step not in node:
            return MISSING
        node = node[step]
    return node


def kept_columns(data: Any, keep: tuple[str, ...], instance: Any = None) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The ``keep`` columns of an input row, and those found; ``(None, ())`` when none are kept.

    A column (a key or a dotted path) is read from the row, or, when the row
    lacks it, from ``instance`` (the joined instance's data); ``None`` where neither has it.
    """
    if not keep:
        return None, ()
    values: dict[str, Any] = {}
    found: list[str] = []
    for column in keep:
        value = column_value(data, column)
        if value is MISSING and instance is not None:
            value = column_value(instance, column)
        if value is MISSING:
            values[column] = None
        else:
            values[column] = value
            found.append(column)
    return values, tuple(found)


def combined_slots(lines: Iterable[Line], cache: InstanceCache | None = None, keep: tuple[str, ...] = ()) -> Iterator[Slot]:
    """Slots for lines that each hold an instance and its ``response`` (instances compiled through ``cache``).

    The instance is the line's instance fields; its other columns (a trainer
    dump's ``step``, ``uid``, ``data_source``) are no part of it: kept under
    ``extra`` when ``keep`` names them, else ignored and listed in the slot's
    ``ignored`` (the run names them in one warning).
    """
    cache = cache if cache is not None else InstanceCache()
    kept = frozenset(keep)
    for line in lines:
        extra, found = kept_columns(line.value, keep)
        if line.error is not None:
            yield Slot(line.number, None, error=line.error, extra=extra)
            continue
        data = line.value
        row_id = _row_id(data)
        if not isinstance(data, Mapping):
            yield Slot(
                line.number,
                None,
                error=f"line {line.number}: $: a line must be a JSON object, got {type(data).__name__}",
                extra=extra,
            )
            continue
        response = _response(data)
        if response is None:
            yield Slot(line.number, row_id, error=f"line {line.number}: {_response_problem(data)}", extra=extra, found=found)
            continue
        fields = {k: v for k, v in data.items() if k in _INSTANCE_KEYS}
        ignored = (
            ()
            if len(fields) + 1 == len(data)
            else tuple(k for k in data if k not in _INSTANCE_KEYS and k != "response" and k not in kept)
        )
        instance = build(fields, cache)
        if isinstance(instance, InstanceError):
            message = f"line {line.number}: {instance.message}"
            yield Slot(line.number, row_id, error=message, extra=extra, found=found, ignored=ignored)
            continue
        slot = _slot(line.number, instance, response, row_id, extra, found)
        yield attrs.evolve(slot, ignored=ignored) if ignored else slot


@attrs.define
class InstanceIndex:
    """Compiled instances by id (or the reason an id cannot be used), and every problem of the file.

    ``problems`` lists, in file order, lines that are not JSON, lines without a
    usable id, duplicate ids and every problem of every invalid instance, each
    as ``SOURCE line N: PATH: MESSAGE``; ``trace-tasks score`` prints them before
    scoring and exits with 1 when there is any.
    """

    source: str
    #: id -> (source, line of its first instance, the compiled instance or why it cannot be used)
    by_id: dict[str, tuple[str, int, CompiledInstance | str]] = attrs.field(factory=dict)
    problems: list[str] = attrs.field(factory=list)
    cache: InstanceCache = attrs.field(factory=InstanceCache)

    @classmethod
    def load(cls, lines: Iterable[Line], source: str) -> InstanceIndex:
        index = cls(source)
        index.add_all(lines, source)
        return index

    def add_all(self, lines: Iterable[Line], source: str) -> None:
        """Index the instances of one file (``source`` names it in problems: several files may go into one index)."""
        for line in lines:
            self._add(line, source)

    def _add(self, line: Line, source: str) -> None:
        row_id = self.check_line(line, source)
        if row_id is None or self.is_duplicate(row_id, source, line.number):
            return
        self.enter(row_id, source, line.number, build(line.value, self.cache))

    def check_line(self, line: Line, source: str) -> str | None:
        """The id of a line that can be an instance; else ``None``, its problem recorded."""
        if line.error is not None:
            self.problems.append(f"{source}: {line.error}")
            return None
        row_id = _row_id(line.value)
        if not isinstance(row_id, str):
            self.problems.append(f"{source} line {line.number}: $.id: an instance needs a string id to be joined with responses")
            return None
        return row_id

    def is_duplicate(self, row_id: str, source: str, number: int) -> bool:
        """True (and recorded: the id then names the duplication) when ``row_id`` was indexed before."""
        if row_id not in self.by_id:
            return False
        first_source, first, _ = self.by_id[row_id]
        where = f"{source} line {number}"
        if first_source == source:
            message = f"duplicate id {row_id!r} in {source} (lines {first} and {number})"
        else:
            message = f"duplicate id {row_id!r} ({first_source} line {first} and {where})"
        self.problems.append(f"{where}: {message}")
        self.by_id[row_id] = (first_source, first, message)
        return True

    def enter(self, row_id: str, source: str, number: int, instance: CompiledInstance | InstanceError | str) -> None:
        """Index one instance (an invalid one as the problems its responses will name); a string is such a reason already."""
        if isinstance(instance, InstanceError):
            where = f"{source} line {number}"
            self.problems.extend(f"{where}: {problem}" for problem in instance.problems)
            instance = "; ".join(str(p) for p in instance.problems)
        self.by_id[row_id] = (source, number, instance)


def joined_slots(lines: Iterable[Line], index: InstanceIndex, keep: tuple[str, ...] = ()) -> Iterator[Slot]:
    """Slots for response lines, each joined by ``id`` to an instance of ``index``.

    ``keep``: columns carried to the output row, read from the response line or, when it lacks one, its instance.
    """
    for line in lines:
        data = line.value
        key = data.get("id") if isinstance(data, Mapping) else None
        entry = index.by_id.get(key) if isinstance(key, str) else None
        joined = entry[2].data if entry is not None and isinstance(entry[2], CompiledInstance) else None
        extra, found = kept_columns(data, keep, joined)
        if line.error is not None:
            yield Slot(line.number, None, error=line.error, extra=extra)
            continue
        n = line.number
        if not isinstance(data, Mapping):
            yield Slot(
                n, None, error=f"line {n}: $: a response line must be a JSON object, got {type(data).__name__}", extra=extra
            )
            continue
        row_id = data.get("id")
        response = _response(data)
        if not isinstance(row_id, str):
            yield Slot(n, row_id, error=f"line {n}: $.id: a response needs the string id of its instance", extra=extra)
        elif response is None:
            yield Slot(n, row_id, error=f"line {n}: {_response_problem(data)}", extra=extra, found=found)
        elif entry is None:
            yield Slot(n, row_id, error=f"line {n}: no instance with id {row_id!r} in {index.source}", extra=extra)
        else:
            instance_source, instance_line, instance = entry
            if isinstance(instance, str):
                yield Slot(
                    n,
                    row_id,
                    error=f"line {n}: instance {row_id!r} ({instance_source} line {instance_line}) is invalid: {instance}",
                    extra=extra,
                    found=found,
                )
            else:
                yield _slot(n, instance, response, row_id, extra, found)


def output_record(slot: Slot, scores: dict[str, Any] | None, summary: Summary) -> dict[str, Any]:
    """The output row of one slot (``{"id", "line", **scores}`` or ``{"id", "line", "error"}``), counted in ``summary``.

    Kept input columns (``score --keep``) come last, under ``"extra"``, so they never clash with a score key;
    a summary with ``group_by`` also counts the row under its value of that column. A row scored with its
    field metrics (:data:`~trace_tasks.runs._metrics.METRICS_KEY`) has them taken off and counted too.
    """
    _count_columns(slot, summary)
    if slot.error is not None:
        summary.add_error(slot.error)
        return _row(slot.id, slot.line, {"error": slot.error}, slot.extra)
    assert scores is not None
    if "error" in scores:  # the scorer refused the item (a caller mistake such as a missing family)
        message = f"line {slot.line}: {scores['error']}"
        summary.add_error(message)
        return _row(slot.id, slot.line, {"error": message}, slot.extra)
    metrics = scores.pop(METRICS_KEY, None)
    mismatches = scores.pop(MISMATCHES_KEY, None)
    answer = scores.pop(ANSWER_KEY, None)
    _count_scores(slot, scores, summary)
    if metrics is not None:
        summary.add_metrics(slot.annotation_type, slot.id, scores["overall"], metrics, scores, answer)
    if mismatches is not None:
        summary.mismatches.add(slot.annotation_type, mismatches)
    return _row(slot.id, slot.line, scores, slot.extra)


def _row(row_id: Any, line: int, middle: Mapping[str, Any], extra: Any) -> dict[str, Any]:
    """An output row: ``id`` and ``line``, the scores (or the error), and the kept columns last, under ``extra``."""
    return {"id": row_id, "line": line, **middle, **({} if extra is None else {"extra": extra})}


def row_text(head: tuple[Any, int, Any], scores: dict[str, Any], stable: bool) -> RowText | dict[str, Any]:
    """A pool worker's scored row as text: the ``dumps`` of :func:`output_record`'s row (``stable``: after
    ``--columns stable``) and the scores the summary reads (:data:`~trace_tasks.runs._summary.TALLIED`).

    ``head``: the slot's ``(id, line, extra)``. A refusal (``{"error": ...}``) stays a dict: its line names the
    input line, as :func:`output_record` writes it. Not for a row scored with its field metrics.
    """
    if "error" in scores:
        return scores
    row_id, line, extra = head
    record = _row(row_id, line, scores, extra)
    text = dumps(stable_record(record) if stable else record)
    return text, {key: scores[key] for key in TALLIED if key in scores}


def counted_text(slot: Slot, row: RowText, summary: Summary) -> str:
    """The output line of a slot a pool worker scored into text (:func:`row_text`), counted in ``summary`` as
    :func:`output_record` counts it."""
    text, tally = row
    _count_columns(slot, summary)
    _count_scores(slot, tally, summary)
    return text


def _count_columns(slot: Slot, summary: Summary) -> None:
    if slot.found:
        summary.found_columns.update(slot.found)
    if slot.ignored:
        summary.ignored_columns.update(slot.ignored)


def _count_scores(slot: Slot, scores: Mapping[str, Any], summary: Summary) -> None:
    summary.add_scores(slot.annotation_type, scores)
    if summary.group_by is not None and slot.extra is not None:
        summary.add_group(slot.extra.get(summary.group_by), scores)
