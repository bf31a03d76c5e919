"""What ``trace-tasks report`` computes from a scores file: pure functions, no HTML, no I/O.

A scores file is what ``trace-tasks score`` writes: one JSON object per line,
``{"id", "line", <every result key>}`` for a scored line or ``{"id", "line",
"error"}`` for a line that could not be scored. The annotation type of a row is
its ``annotation_type_<name>`` indicator at 1.0; failures are read from the
row's flags (``docs/contracts.md`` sections 3.2 and 7), never re-derived.
"""

from __future__ import annotations

import array
import bisect
import heapq
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import attrs

from trace_tasks.runs import (
    MISSING,
    NO_JSON,
    NO_JSON_MEANING,
    NOT_AN_OBJECT,
    NOT_AN_OBJECT_MEANING,
    Line,
    Moments,
    PairedDiffs,
    column_value,
    final_block_not_an_object,
    group_name,
    no_json,
)
from trace_tasks.scoring import NUMBER, OPTIONS

#: The reward components shown per type (key, title).
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("overall", "overall"),
    ("answer_reward", "answer"),
    ("annotation_reward", "annotation"),
    ("format", "format"),
)
#: Histogram bins over [0, 1].
BINS = 10
#: The type of a row whose indicators name none (an unscored line, or an unknown family).
UNKNOWN_TYPE = "(unknown)"
ALL = "all"
TYPE_PREFIX = "annotation_type_"


class ScoresFileError(ValueError):
    """A scores file that cannot be read as ``trace-tasks score`` writes it; the message names the line."""


@attrs.frozen(slots=True)
class Row:
    """One line of a scores file: where it is, what it scored, or why it was not scored."""

    number: int  # line of the scores file
    id: Any
    line: int | None  # line of the scored input (the responses file, or the combined file)
    type: str
    scores: Mapping[str, Any] = attrs.field(factory=dict)
    error: str | None = None

    @property
    def scored(self) -> bool:
        return self.error is None


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def row_type(scores: Mapping[str, Any]) -> str:
    """The annotation type a scores row names: its ``annotation_type`` (``score --columns stable``), else its indicator at 1.0."""
    named = scores.get("annotation_type")
    if isinstance(named, str) and named:
        return named
    for key, value in scores.items():
        if key.startswith(TYPE_PREFIX) and value == 1.0:
            return key[len(TYPE_PREFIX) :]
    return UNKNOWN_TYPE


def parse_row(line: Line, source: str) -> Row:
    """One line of a scores file as a :class:`Row`; :class:`ScoresFileError` naming the line otherwise."""
    where = f"{source} line {line.number}"
    if line.error is not None:
        message = line.error.split(": ", 1)[1] if line.error.startswith("line ") else line.error
        raise ScoresFileError(f"{where}: {message}; is this a file written by 'trace-tasks score'?")
    data = line.value
    if not isinstance(data, Mapping):
        raise ScoresFileError(f"{where}: a scores line is a JSON object, got {type(data).__name__}")
    number = data.get("line")
    input_line = number if isinstance(number, int) and not isinstance(number, bool) else None
    if isinstance(data.get("error"), str):
        return Row(line.number, data.get("id"), input_line, UNKNOWN_TYPE, error=data["error"])
    if not _finite(data.get("overall")):
        raise ScoresFileError(
            f"{where}: neither a scores row (a number 'overall') nor an error row (a string 'error'); "
            "is this a file written by 'trace-tasks score'?"
        )
    return Row(line.number, data.get("id"), input_line, row_type(data), data)


def read_rows(lines: Iterable[Line], source: str) -> list[Row]:
    """Every line of a scores file as a :class:`Row` (the first bad line stops with its error)."""
    return [parse_row(line, source) for line in lines]


def value(row: Row, key: str) -> float:
    """A component of a scored row as a float (0.0 when missing or not a finite number)."""
    found = row.scores.get(key)
    return float(found) if _finite(found) else 0.0


# --- failures ---


def _flag(row: Row, key: str, expected: float) -> bool:
    return row.scores.get(key) == expected


#: Failure categories: (key, title, what it means, test on a scored row). A row can be in several.
FAILURES: tuple[tuple[str, str, str, Callable[[Row], bool]], ...] = (
    ("no_json", NO_JSON, NO_JSON_MEANING, lambda r: no_json(r.scores)),
    ("bad_json", NOT_AN_OBJECT, NOT_AN_OBJECT_MEANING, lambda r: final_block_not_an_object(r.scores)),
    ("wrong_keys", "wrong keys", "the final mapping's keys are not exactly the required ones (format_json_ok 1, format_schema_ok 0)",
     lambda r: _flag(r, "format_json_ok", 1.0) and _flag(r, "format_schema_ok", 0.0)),
    ("annotation_parse", "annotation parse failure",
     "a mapping was found but the annotation is missing or does not parse (json_found 1, annotation_parse_ok 0)",
     lambda r: _flag(r, "json_found", 1.0) and _flag(r, "annotation_parse_ok", 0.0)),
    ("wrong_answer", "wrong answer", "the answer does not match (answer_reward 0)",
     lambda r: _flag(r, "answer_reward", 0.0)),
)  # fmt: skip


# --- per-type statistics ---


@attrs.frozen(slots=True)
class TypeStats:
    """The rows of one annotation type (or of all): counts, component means, failures."""

    name: str
    rows: int
    scored: int
    means: Mapping[str, float]
    failures: Mapping[str, int]
    #: The standard error of each mean (sample std over sqrt(n)); ``None`` below 2 scored rows.
    stderr: Mapping[str, float | None] = attrs.field(factory=dict)


def histogram(values: Iterable[float], bins: int = BINS) -> list[int]:
    """Counts of ``values`` in ``bins`` equal bins over [0, 1]; 1.0 falls in the last bin, anything outside is clamped."""
    counts = [0] * bins
    for v in values:
        counts[_bin(v, bins)] += 1
    return counts


def _bin(v: float, bins: int = BINS) -> int:
    index = math.floor(v * bins) if math.isfinite(v) else 0
    return min(max(index, 0), bins - 1)


def failure_kind(row: Row) -> str:
    """The first failure category a scored row falls in (:data:`FAILURES` order), ``"none"`` when it is in none."""
    return next((key for key, _, _, test in FAILURES if test(row)), "none")


class Totals:
    """Running totals of some rows: counts, component sums, failure counts and histograms, updated per row."""

    __slots__ = ("failures", "histograms", "rows", "scored", "spread", "sums")

    def __init__(self) -> None:
        self.rows = self.scored = 0
        self.sums = dict.fromkeys([key for key, _ in COMPONENTS], 0.0)
        self.spread = {key: Moments() for key, _ in COMPONENTS}
        self.failures = dict.fromkeys([key for key, *_ in FAILURES], 0)
        self.failures["not_scored"] = 0
        self.histograms = {key: [0] * BINS for key, _ in COMPONENTS}

    def add(self, row: Row, kinds: Sequence[str] = ()) -> None:
        """Count ``row``; ``kinds`` are the failure categories it falls in (computed once by the caller)."""
        self.rows += 1
        if not row.scored:
            self.failures["not_scored"] += 1
            return
        self.scored += 1
        for key, _ in COMPONENTS:
            v = value(row, key)
            self.sums[key] += v
            self.spread[key].add(v)
            self.histograms[key][_bin(v)] += 1
        for kind in kinds:
            self.failures[kind] += 1

    def stats(self, name: str) -> TypeStats:
        means = {key: (self.sums[key] / self.scored if self.scored else 0.0) for key, _ in COMPONENTS}
        stderr = {key: self.spread[key].stderr() for key, _ in COMPONENTS}
        return TypeStats(name, self.rows, self.scored, means, {**self.failures, "rows": self.rows}, stderr)


#: The biggest per-row changes kept each way (improved, worsened) in a paired comparison.
CHANGES_SHOWN = 10
#: A paired row whose overall moved by at most this much is unchanged.
UNCHANGED_TOLERANCE = 1e-9


def _id_text(row_id: Any) -> str:
    return row_id if isinstance(row_id, str) else group_name(row_id)


def pair_keys(row: Row) -> tuple[int, int]:
    """The two join keys of a row, as 64-bit hashes: by (id, line), and by id alone."""
    text = _id_text(row.id)
    return hash((text, row.line)), hash((text, None))


#: How many values a baseline row keeps: one per :data:`COMPONENTS` entry.
_WIDTH = len(COMPONENTS)


class BaselineIndex:
    """The baseline's scored rows for a per-row join: sorted 64-bit key hashes and the :data:`COMPONENTS` (40 bytes a row a key).

    Joined first by (id, line), else by id when the id is on one baseline row
    only (an id on several rows, as a GRPO group's, joins only by line). A
    key seen twice cannot join.
    """

    def __init__(self) -> None:
        self._by_line: list[array.array[int]] = [array.array("q"), array.array("q")]
        self._values = array.array("d")
        self._sorted: list[tuple[array.array[int], array.array[float]]] = []
        self.rows = 0

    def add(self, row: Row) -> None:
        if not row.scored:
            return
        by_line, by_id = pair_keys(row)
        self._by_line[0].append(by_line)
        self._by_line[1].append(by_id)
        self._values.extend(value(row, key) for key, _ in COMPONENTS)
        self.rows += 1

    def freeze(self) -> None:
        """Sort the keys (ambiguous ones get NaN); call once, after the last :meth:`add`."""
        import numpy as np  # a dependency of the scorer (scipy's assignment); only a --baseline run needs it here

        for keys in self._by_line:
            found = np.frombuffer(keys, dtype=np.int64)
            order = np.argsort(found, kind="stable")
            sorted_keys = found[order]
            values = np.frombuffer(self._values, dtype=np.float64).reshape(-1, _WIDTH)[order]
            if len(sorted_keys) > 1:
                twice = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
                values[twice] = values[twice + 1] = np.nan
            self._sorted.append((array.array("q", sorted_keys.tobytes()), array.array("d", values.tobytes())))
            del found, order, sorted_keys, values
        self._by_line = []
        self._values = array.array("d")

    def lookup(self, row: Row) -> float | None:
        """The baseline ``overall`` of the row joined with ``row`` (None: no single partner)."""
        found = self.lookup_all(row)
        return None if found is None else found[0]

    def lookup_all(self, row: Row) -> tuple[float, ...] | None:
        """The baseline's :data:`COMPONENTS` values (in that order) of the row joined with ``row`` (None: no single partner)."""
        for key, (keys, values) in zip(pair_keys(row), self._sorted, strict=True):
            at = bisect.bisect_left(keys, key)
            if at < len(keys) and keys[at] == key:
                found = values[at * _WIDTH : (at + 1) * _WIDTH]
                if not math.isnan(found[0]):
                    return tuple(found)
        return None


@attrs.frozen(slots=True)
class Change:
    """One row in both runs: where it is, and its overall in each."""

    number: int
    id: Any
    line: int | None
    type: str
    before: float
    now: float

    @property
    def delta(self) -> float:
        return self.now - self.before


@attrs.frozen(slots=True)
class DeltaStats:
    """The paired difference of one reward column in one cell: mean, standard error, bootstrap 95% interval.

    ``interval`` is ``None`` below 2 pairs; ``contains_zero`` is then True (no
    evidence of a change).
    """

    key: str
    n: int
    mean: float
    stderr: float | None
    interval: tuple[float, float] | None

    @property
    def contains_zero(self) -> bool:
        """Whether the interval holds 0: the change cannot be told from noise."""
        return self.interval is None or self.interval[0] <= 0.0 <= self.interval[1]


@attrs.define
class PairedTotals:
    """Per cell (a type, a group, or all), the paired rows: how many improved, worsened or stayed, and their deltas.

    ``improved``/``worsened``/``unchanged`` and ``delta_sum`` are of ``overall``;
    ``diffs`` holds every reward column's paired differences (:data:`COMPONENTS`), for :meth:`delta`.
    """

    paired: int = 0
    improved: int = 0
    worsened: int = 0
    unchanged: int = 0
    delta_sum: float = 0.0
    diffs: dict[str, PairedDiffs] = attrs.field(factory=lambda: {key: PairedDiffs() for key, _ in COMPONENTS})

    def add(self, delta: float, deltas: Sequence[float] | None = None) -> None:
        """One pair: its ``overall`` delta, and every component's (:data:`COMPONENTS` order; default: overall only)."""
        self.paired += 1
        self.delta_sum += delta
        if delta > UNCHANGED_TOLERANCE:
            self.improved += 1
        elif delta < -UNCHANGED_TOLERANCE:
            self.worsened += 1
        else:
            self.unchanged += 1
        for (key, _), d in zip(COMPONENTS, deltas if deltas is not None else (delta,), strict=False):
            self.diffs[key].add(d)

    @property
    def mean_delta(self) -> float:
        return self.delta_sum / self.paired if self.paired else 0.0

    def delta(self, key: str = "overall") -> DeltaStats:
        """The paired difference of a reward column: mean, standard error and seeded bootstrap 95% interval."""
        diffs = self.diffs[key]
        return DeltaStats(key, diffs.n, diffs.mean, diffs.stderr(), diffs.interval())

    def deltas(self) -> dict[str, DeltaStats]:
        """:meth:`delta` of every reward column (:data:`COMPONENTS`)."""
        return {key: self.delta(key) for key, _ in COMPONENTS}


@attrs.frozen
class Paired:
    """A per-row comparison with the baseline: totals per type (and :data:`ALL`), the biggest changes each way."""

    by_type: Mapping[str, PairedTotals]
    unpaired: int  # scored rows of this run with no single partner in the baseline
    baseline_rows: int  # scored rows of the baseline
    improved: Sequence[Change]
    worsened: Sequence[Change]
    #: With ``group_by``: the same per value of the column (then :data:`ALL`); empty without.
    by_group: Mapping[str, PairedTotals] = attrs.field(factory=dict)


class Aggregate:
    """Everything ``report`` shows of a scores file, updated one row at a time: memory bounded by the options.

    Held: per type (and per ``group_by`` value) a :class:`Totals`; the
    ``worst`` lowest-overall rows of each (type, failure kind) in a heap; a
    reservoir of ``sample`` rows (seeded); the first scored row; with
    ``keep_lines``, each scored row's input line, overall and options (for the
    metrics re-scoring); with ``baseline``, the per-row join's totals and the
    :data:`CHANGES_SHOWN` biggest changes each way.
    """

    def __init__(
        self,
        *,
        worst: int = 0,
        sample: int = 0,
        seed: int = 0,
        group_by: str | None = None,
        keep_lines: bool = False,
        baseline: BaselineIndex | None = None,
    ) -> None:
        self.totals: dict[str, Totals] = {}
        self.all = Totals()
        self.group_by = group_by
        self.groups: dict[str, Totals] = {}
        self.groups_all = Totals()
        self.column_seen = False
        self.first_scored: Row | None = None
        self._worst_count = max(worst, 0)
        self._worst: dict[tuple[str, str], list[tuple[float, int, Row]]] = {}
        self._sample_count = max(sample, 0)
        self._sample: list[Row] = []
        self._rng = random.Random(seed)
        self.keep_lines = keep_lines
        self.lines: dict[int, tuple[Any, Mapping[str, Any]]] = {}
        self._options: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        self._baseline = baseline
        self._paired: dict[str, PairedTotals] = {}
        self._paired_groups: dict[str, PairedTotals] = {}
        self._unpaired = 0
        self._improved: list[tuple[float, int, Change]] = []
        self._worsened: list[tuple[float, int, Change]] = []

    def add(self, row: Row) -> None:
        kinds = [key for key, _, _, test in FAILURES if test(row)] if row.scored else []
        self.all.add(row, kinds)
        totals = self.totals.get(row.type)
        if totals is None:
            totals = self.totals[row.type] = Totals()
        totals.add(row, kinds)
        seen = self.all.rows - 1  # rows before this one
        if seen < self._sample_count:
            self._sample.append(row)
        elif self._sample_count:
            at = self._rng.randrange(seen + 1)
            if at < self._sample_count:
                self._sample[at] = row
        if not row.scored:
            return
        if self.first_scored is None:
            self.first_scored = row
        overall = value(row, "overall")
        if self._worst_count:
            heap = self._worst.setdefault((row.type, kinds[0] if kinds else "none"), [])
            item = (-overall, -row.number, row)  # a max-heap of the lowest: the top is the one to drop
            if len(heap) < self._worst_count:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
        name = None
        if self.group_by is not None:
            found = column_value(row.scores.get("extra"), self.group_by)
            self.column_seen = self.column_seen or found is not MISSING
            name = group_name(None if found is MISSING else found)
            group = self.groups.get(name)
            if group is None:
                group = self.groups[name] = Totals()
            group.add(row, kinds)
            self.groups_all.add(row, kinds)
        if self.keep_lines and row.line is not None:
            options = run_options(row)
            key = tuple(options.items())
            self.lines[row.line] = (row.scores.get("overall"), self._options.setdefault(key, options))
        if self._baseline is not None:
            self._pair(row, overall, name)

    def _pair(self, row: Row, overall: float, group: str | None) -> None:
        assert self._baseline is not None
        found = self._baseline.lookup_all(row)
        if found is None:
            self._unpaired += 1
            return
        before = found[0]
        delta = overall - before
        deltas = [value(row, key) - was for (key, _), was in zip(COMPONENTS, found, strict=True)]
        cells = [(self._paired, row.type), (self._paired, ALL)]
        if group is not None:
            cells += [(self._paired_groups, group), (self._paired_groups, ALL)]
        for table, name in cells:
            totals = table.get(name)
            if totals is None:
                totals = table[name] = PairedTotals()
            totals.add(delta, deltas)
        if delta > UNCHANGED_TOLERANCE or delta < -UNCHANGED_TOLERANCE:
            heap = self._improved if delta > 0 else self._worsened
            item = (abs(delta), -row.number, Change(row.number, row.id, row.line, row.type, before, overall))
            if len(heap) < CHANGES_SHOWN:
                heapq.heappush(heap, item)
            elif item[:2] > heap[0][:2]:
                heapq.heapreplace(heap, item)

    # --- what the page shows ---

    def type_table(self) -> list[TypeStats]:
        """One :class:`TypeStats` per annotation type (sorted by name), then :data:`ALL`."""
        return [*(self.totals[name].stats(name) for name in sorted(self.totals)), self.all.stats(ALL)]

    def group_table(self) -> list[TypeStats]:
        """One :class:`TypeStats` per value of the ``group_by`` column (scored rows only), then :data:`ALL`."""
        return [*(self.groups[name].stats(name) for name in sorted(self.groups)), self.groups_all.stats(ALL)]

    def histograms(self) -> dict[str, dict[str, list[int]]]:
        """Per type with a scored row, per component: the histogram of the scored rows' values."""
        return {
            name: {key: list(counts) for key, counts in self.totals[name].histograms.items()}
            for name in sorted(self.totals)
            if self.totals[name].scored
        }

    def worst(self) -> list[Row]:
        """The lowest-overall scored rows, taken in turn across types, and within a type across failure kinds.

        Each (type, failure kind) keeps its rows by ``overall`` (ties: file
        order); within a type the failure kinds take turns (the kind with the
        lowest row first), then the types take turns the same way, so neither
        a type nor a kind whose rows all tie at 0 can fill the section alone.
        """
        per_type: dict[str, list[list[Row]]] = {}
        for (name, _), heap in self._worst.items():
            per_type.setdefault(name, []).append([row for _, _, row in sorted(heap, reverse=True)])
        groups = [_take_turns(lists, self._worst_count) for lists in per_type.values()]
        return _take_turns(groups, self._worst_count)

    def sample(self) -> list[Row]:
        """The reservoir's rows (the same seed gives the same rows), in file order."""
        return sorted(self._sample, key=lambda r: r.number)

    def paired(self) -> Paired | None:
        """The per-row comparison (None without a baseline)."""
        if self._baseline is None:
            return None
        names = [*sorted(set(self._paired) - {ALL}), ALL]
        groups = [*sorted(set(self._paired_groups) - {ALL}), ALL] if self._paired_groups else []
        return Paired(
            {name: self._paired.get(name, PairedTotals()) for name in names},
            self._unpaired,
            self._baseline.rows,
            [c for *_, c in sorted(self._improved, key=lambda i: (-i[0], -i[1]))],
            [c for *_, c in sorted(self._worsened, key=lambda i: (-i[0], -i[1]))],
            {name: self._paired_groups[name] for name in groups},
        )


def _take_turns(groups: Sequence[Sequence[Row]], count: int) -> list[Row]:
    """Up to ``count`` rows taken in turn from ``groups`` (each in order), the group with the lowest first row first."""
    ordered = sorted((g for g in groups if g), key=lambda g: (value(g[0], "overall"), g[0].number))
    picked: list[Row] = []
    depth = 0
    while len(picked) < count and any(depth < len(g) for g in ordered):
        for group in ordered:
            if depth < len(group) and len(picked) < count:
                picked.append(group[depth])
        depth += 1
    return picked


def aggregate(rows: Iterable[Row], **options: Any) -> Aggregate:
    """An :class:`Aggregate` of ``rows`` (options as its constructor's)."""
    found = Aggregate(**options)
    for row in rows:
        found.add(row)
    return found


def failure_counts(rows: Iterable[Row]) -> dict[str, int]:
    """How many scored rows fall in each failure category, plus ``not_scored`` (error lines) and ``rows``."""
    return dict(aggregate(rows).all.stats(ALL).failures)


def stats(name: str, rows: Sequence[Row]) -> TypeStats:
    """Counts, means of the :data:`COMPONENTS` over the scored rows, and failure counts."""
    return aggregate(rows).all.stats(name)


def type_table(rows: Iterable[Row]) -> list[TypeStats]:
    """One :class:`TypeStats` per annotation type, then :data:`ALL`."""
    return aggregate(rows).type_table()


def group_table(rows: Iterable[Row], column: str) -> list[TypeStats]:
    """One :class:`TypeStats` per value of a kept column (``score --keep``/``--group-by``: the row's ``extra``), then :data:`ALL`.

    Values are named as ``score --group-by`` names them; only scored rows are
    grouped (an error row's line holds no score to read).
    """
    return aggregate(rows, group_by=column).group_table()


def has_column(rows: Iterable[Row], column: str) -> bool:
    """Whether any scored row keeps ``column`` under ``extra`` (a key, or a dotted path into a kept value)."""
    return aggregate(rows, group_by=column).column_seen


def histograms(rows: Iterable[Row]) -> dict[str, dict[str, list[int]]]:
    """Per type, per component: the histogram of the scored rows' values."""
    return aggregate(rows).histograms()


def worst(rows: Sequence[Row], count: int) -> list[Row]:
    """The ``count`` scored rows with the lowest ``overall`` (ties: file order)."""
    scored = [row for row in rows if row.scored]
    return sorted(scored, key=lambda r: (value(r, "overall"), r.number))[: max(count, 0)]


def worst_spread(rows: Iterable[Row], count: int) -> list[Row]:
    """The ``count`` lowest-overall scored rows taken in turn across types and failure kinds (:meth:`Aggregate.worst`)."""
    return aggregate(rows, worst=count).worst()


def sample(rows: Iterable[Row], count: int, seed: int) -> list[Row]:
    """``count`` rows drawn at random with ``seed`` (reservoir sampling: the same seed gives the same rows), in file order."""
    return aggregate(rows, sample=count, seed=seed).sample()


# --- comparing two runs ---


@attrs.frozen(slots=True)
class Delta:
    """One type in two runs: counts and component means now and in the baseline (None when absent)."""

    name: str
    rows: tuple[int, int]
    now: Mapping[str, float] | None
    before: Mapping[str, float] | None

    def change(self, key: str) -> float | None:
        """``now - before`` for a component, None when the type is missing from one run."""
        if self.now is None or self.before is None:
            return None
        return self.now[key] - self.before[key]


def deltas(current: Sequence[TypeStats], baseline: Sequence[TypeStats]) -> list[Delta]:
    """Per type (the union of both runs, sorted, then :data:`ALL`): the means of both runs."""
    now = {s.name: s for s in current}
    before = {s.name: s for s in baseline}
    names = [*sorted((set(now) | set(before)) - {ALL}), ALL]
    out = []
    for name in names:
        a, b = now.get(name), before.get(name)
        out.append(Delta(
            name, (a.rows if a else 0, b.rows if b else 0),
            dict(a.means) if a and a.scored else None, dict(b.means) if b and b.scored else None,
        ))  # fmt: skip
    return out


def options_differences(now: Mapping[str, Any], before: Mapping[str, Any]) -> list[str]:
    """The scorer options two runs differ in, as ``key: X here, Y in the baseline`` (their first scored rows' echoes)."""
    return [
        f"{key}: {now.get(key)!r} here, {before.get(key)!r} in the baseline" for key in now if now.get(key) != before.get(key)
    ]


def run_options(row: Row) -> dict[str, Any]:
    """The scoring options a row was scored with, from its echoes (``docs/contracts.md`` section 7).

    The half-life is the row's own resolved ``annotation_point_half_life_px``
    when it reports one, so an explanation uses the scorer's context. The
    opt-in policies (``trace_recovery``, ``format_accept_answer_tag``) are read
    from their indicators, present only when a row was scored with them.
    """
    s = row.scores
    options: dict[str, Any] = {}
    for option in OPTIONS:  # decoded from the echo the options table spells
        got = option.decode(s)
        if option.cli == NUMBER:
            if got is None:  # no echo (score --columns stable): the option's default
                options[option.name] = option.default
            else:
                options[option.name] = float(got) if _finite(got) else (0.0 if option.echo else None)
        else:
            options[option.name] = option.default if got is None else got
    half_life = s.get("annotation_point_half_life_px")  # not an echo: the context the family reports
    options["point_half_life_px"] = float(half_life) if _finite(half_life) and half_life > 0 else None
    return options
