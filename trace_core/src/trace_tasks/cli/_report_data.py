"""What ``trace-tasks report`` computes from a scores file: pure functions, no HTML, no I/O.

A scores file is what ``trace-tasks score`` writes: one JSON object per line,
``{"id", "line", <every result key>}`` for a scored line or ``{"id", "line",
"error"}`` for a line that could not be scored. The annotation type of a row is
its ``annotation_type_<name>`` indicator at 1.0; failures are read from the
row's flags (``docs/contracts.md`` sections 3.2 and 7), never re-derived.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import attrs

from trace_tasks.cli._failure_kinds import (
    NO_JSON,
    NO_JSON_MEANING,
    NOT_AN_OBJECT,
    NOT_AN_OBJECT_MEANING,
    final_block_not_an_object,
    no_json,
)
from trace_tasks.cli._jsonl import Line
from trace_tasks.cli._summary import group_name
from trace_tasks.scoring import RECOVERY_MODES

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
    """The annotation type a scores row names with its ``annotation_type_<name>`` indicator at 1.0."""
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


def failure_counts(rows: Iterable[Row]) -> dict[str, int]:
    """How many scored rows fall in each failure category, plus ``not_scored`` (error lines) and ``rows``."""
    counts = dict.fromkeys([key for key, *_ in FAILURES], 0)
    counts["not_scored"] = counts["rows"] = 0
    for row in rows:
        counts["rows"] += 1
        if not row.scored:
            counts["not_scored"] += 1
            continue
        for key, _, _, test in FAILURES:
            counts[key] += test(row)
    return counts


# --- per-type statistics ---


@attrs.frozen(slots=True)
class TypeStats:
    """The rows of one annotation type (or of all): counts, component means, failures."""

    name: str
    rows: int
    scored: int
    means: Mapping[str, float]
    failures: Mapping[str, int]


def by_type(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows grouped by annotation type, types sorted by name (unscored rows under :data:`UNKNOWN_TYPE`)."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.type, []).append(row)
    return {name: groups[name] for name in sorted(groups)}


def stats(name: str, rows: Sequence[Row]) -> TypeStats:
    """Counts, means of the :data:`COMPONENTS` over the scored rows, and failure counts."""
    scored = [row for row in rows if row.scored]
    means = {key: (math.fsum(value(r, key) for r in scored) / len(scored) if scored else 0.0) for key, _ in COMPONENTS}
    return TypeStats(name, len(rows), len(scored), means, failure_counts(rows))


def type_table(rows: Sequence[Row]) -> list[TypeStats]:
    """One :class:`TypeStats` per annotation type, then :data:`ALL`."""
    return [*(stats(name, group) for name, group in by_type(rows).items()), stats(ALL, rows)]


def group_table(rows: Sequence[Row], column: str) -> list[TypeStats]:
    """One :class:`TypeStats` per value of a kept column (``score --keep``/``--group-by``: the row's ``extra``), then :data:`ALL`.

    Values are named as ``score --group-by`` names them; only scored rows are
    grouped (an error row's line holds no score to read).
    """
    groups: dict[str, list[Row]] = {}
    for row in rows:
        if not row.scored:
            continue
        extra = row.scores.get("extra")
        found = extra.get(column) if isinstance(extra, Mapping) else None
        groups.setdefault(group_name(found), []).append(row)
    return [*(stats(name, groups[name]) for name in sorted(groups)), stats(ALL, [r for r in rows if r.scored])]


def has_column(rows: Sequence[Row], column: str) -> bool:
    """Whether any scored row keeps ``column`` under ``extra``."""
    return any(isinstance(r.scores.get("extra"), Mapping) and column in r.scores["extra"] for r in rows if r.scored)


# --- histograms ---


def histogram(values: Iterable[float], bins: int = BINS) -> list[int]:
    """Counts of ``values`` in ``bins`` equal bins over [0, 1]; 1.0 falls in the last bin, anything outside is clamped."""
    counts = [0] * bins
    for v in values:
        index = math.floor(v * bins) if math.isfinite(v) else 0
        counts[min(max(index, 0), bins - 1)] += 1
    return counts


def histograms(rows: Sequence[Row]) -> dict[str, dict[str, list[int]]]:
    """Per type, per component: the histogram of the scored rows' values."""
    return {
        name: {key: histogram(value(r, key) for r in group if r.scored) for key, _ in COMPONENTS}
        for name, group in by_type(rows).items()
        if any(r.scored for r in group)
    }


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


# --- which cases to show ---


def worst(rows: Sequence[Row], count: int) -> list[Row]:
    """The ``count`` scored rows with the lowest ``overall`` (ties: file order)."""
    scored = [row for row in rows if row.scored]
    return sorted(scored, key=lambda r: (value(r, "overall"), r.number))[: max(count, 0)]


def worst_spread(rows: Sequence[Row], count: int) -> list[Row]:
    """The ``count`` lowest-overall scored rows taken in turn from each annotation type.

    Each type's rows are ordered by ``overall`` (ties: file order); the types
    take turns, the type with the lowest row first, so a type whose rows all
    tie at 0 cannot fill the section alone.
    """
    groups = [
        sorted(group, key=lambda r: (value(r, "overall"), r.number)) for group in by_type([r for r in rows if r.scored]).values()
    ]
    groups.sort(key=lambda group: (value(group[0], "overall"), group[0].number))
    picked: list[Row] = []
    depth = 0
    while len(picked) < count and any(depth < len(group) for group in groups):
        for group in groups:
            if depth < len(group) and len(picked) < count:
                picked.append(group[depth])
        depth += 1
    return picked


def options_differences(now: Mapping[str, Any], before: Mapping[str, Any]) -> list[str]:
    """The scorer options two runs differ in, as ``key: X here, Y in the baseline`` (their first scored rows' echoes)."""
    return [
        f"{key}: {now.get(key)!r} here, {before.get(key)!r} in the baseline" for key in now if now.get(key) != before.get(key)
    ]


def sample(rows: Sequence[Row], count: int, seed: int) -> list[Row]:
    """``count`` rows drawn at random with ``seed`` (the same seed gives the same rows), in file order."""
    picked = random.Random(seed).sample(range(len(rows)), min(max(count, 0), len(rows)))
    return [rows[i] for i in sorted(picked)]


def run_options(row: Row) -> dict[str, Any]:
    """The scoring options a row was scored with, from its echoes (``docs/contracts.md`` section 7).

    The half-life is the row's own resolved ``annotation_point_half_life_px``
    when it reports one, so an explanation uses the scorer's context. The
    opt-in policies (``trace_recovery``, ``format_accept_answer_tag``) are read
    from their indicators, present only when a row was scored with them.
    """
    s = row.scores
    half_life = s.get("annotation_point_half_life_px")
    recovery = next((mode for mode in RECOVERY_MODES if s.get(f"trace_recovery_{mode}") == 1.0), "lenient")
    return {
        "trace_recovery": recovery,
        "format_accept_answer_tag": s.get("format_accept_answer_tag") == 1.0,
        "trace_reward_mode": "answer_and_annotation" if s.get("trace_reward_mode_answer_and_annotation") == 1.0 else "answer",
        "answer_weight": value(row, "trace_answer_weight"),
        "annotation_weight": value(row, "trace_annotation_weight"),
        "format_weight": value(row, "format_weight"),
        "trace_annotation_reward_formula": "additive" if s.get("trace_annotation_reward_formula_additive") == 1.0 else "gated",
        "point_half_life_px": float(half_life) if _finite(half_life) and half_life > 0 else None,
    }
