"""A test kit for family authors: is my family safe to train on?

>>> from trace_tasks.family import assert_family_ok
>>> assert_family_ok(types=["circle", "circle_set"])  # in your test suite

:func:`check_family` drives every installed plugin (or the given annotation
types) through the plugin contract, the way the scorer and the tools call it,
and returns what is wrong as :class:`KitProblem` records; :func:`assert_family_ok`
raises ``AssertionError`` listing them. ``trace-tasks plugins --check`` runs the
same checks over everything installed.

Everything is checked at the hook level (the registry's direct callables and
``registry.manager.hook``), never a family's internals, so it applies to a
hand-written plugin as much as to a :class:`~trace_tasks.family.ShapeFamily`.
Per annotation type, with the examples the owner declares
(``AnnotationTypeSpec.examples``) and every reward id registered for the type
(current or not, whoever declared it):

``examples``
    the type declares examples; a ``set`` or ``sequence`` type has one that is
    a list of two or more items (so order can be checked).
``parse``
    every example parses, to something other than ``None``.
``self-score``
    an example scored against itself gets 1.0 (within 1e-12); for a version
    that reads its prediction in its own form (``RewardIdSpec.parse_prediction``,
    a click against a box), each declared ``prediction_examples`` triple gets
    its declared reward instead, and the hostile corpus of its prediction
    examples is read by its parse (such a version never sees the owner's
    values as predictions, and the owner draws only its targets).
``contract``
    every score result is an :class:`~trace_tasks.family.AnnotationScore` with a
    finite reward in [0, 1] and finite ``annotation_*`` diagnostics (what the
    scorer's :func:`~trace_tasks.scoring.checked_score` accepts).
``score``
    a score hook raised on parsed values.
``deterministic``
    scoring the same values twice gives equal results.
``hostile``
    on a built-in corpus of hostile values (NaN, infinities, ``10**400``,
    booleans, ``None``, junk and JSON strings, deep nesting, huge lists, dicts,
    unicode, zero and negative sizes, tiny (1e-300) and huge (1e308) items,
    the examples scaled by 1e-200 and 1e300 or with one coordinate replaced
    by each of those) parse returns a value or raises
    :class:`~trace_tasks.family.AnnotationParseError`, nothing else; values
    that parse are scored against each example, both ways, and against
    themselves and their neighbour in the corpus (two tiny boxes, a tiny and
    a huge one), under every id (``contract`` and ``score`` apply; an
    ``AnnotationParseError`` raised while scoring is a limit and allowed).
``set-order`` / ``key-order``
    reversing or rotating the items of a ``set`` (and of each key of a
    ``set_map``) prediction, or the key order of a ``map``/``set_map``, leaves
    the reward unchanged.
``sequence-order``
    reversing a ``sequence`` example whose items differ changes the reward.
``explain``
    when the id's plugin implements ``trace_explain_annotation``: it returns an
    :class:`~trace_tasks.family.AnnotationExplanation` whose score equals the
    score, and a zero score when nothing parsed (``prediction=None``).
``draw``
    when the owner implements ``trace_draw_annotation``: every explained item
    (or a scalar type's parsed value) draws to a list of
    :mod:`trace_tasks.family` drawables with finite coordinates (``None``
    means the owner cannot draw the item and is not a problem).
``schema``
    when the type declares ``AnnotationTypeSpec.json_schema``: it uses only
    keywords :func:`~trace_tasks.family.schema_problems` checks, every example
    validates against it, and it rejects every value of a wrong shape that
    does not parse (the example inside a list, the example under a key,
    the example with its first array of numbers one short, ``"junk"``,
    ``None``, ``True``): a constrained decoder must not be able to emit those.
``pure-parse``
    when the type declares ``AnnotationTypeSpec.pure_parse`` (the scoring
    pipeline then remembers a ground truth's parse by content): every example
    parses to equal values twice, its parse leaves the raw value as it was,
    and after every score and explain call above each parsed example still
    equals a fresh parse (no hook changed it).
``drawn-as``
    when the type declares ``AnnotationTypeSpec.drawn_as`` (the dataset lint
    then reads coordinates instead of drawing): the owner draws, the type has
    a shape, and every item of every parsed example is a flat tuple of the
    declared length (4 for a box, 2 for a point, an even number from 2 for a
    polyline) that the draw hook draws as exactly
    :func:`~trace_tasks.family.flat_drawing` of it.
``image-blind``
    when the type declares ``AnnotationTypeSpec.image_blind`` (``trace-tasks
    audit``'s whole-image policies): the type has a shape, and the declared
    item for a 640 x 480 image, laid out in it (:func:`~trace_tasks.family.lay_out`;
    a map gets the keys of its first example), parses and scores against every
    example under every id; with ``averaged``, the item is a flat list of numbers.
``frame``
    when the owner implements ``trace_frame_annotation`` (a declared
    ``prediction_frame``): converting an example with ``scale_x=2``,
    ``scale_y=0.5`` (a non-square image) and back gives it again (self-score
    1.0), and so does swapping its pairs twice (``y_first``; an owner may
    answer ``None`` to a y-first frame it cannot take: declaring it is then an
    ``OptionError``, never a silent zero); when the owner
    can also draw and explain, the drawn extent of the converted example is the
    example's with every x doubled and every y halved, and with ``y_first`` its
    x and y exchanged: the family says which numbers are x and which y.
``hook``
    through ``registry.manager.hook`` the parse, score, explain and draw hooks
    return the responsible plugin's answer: every other plugin returns ``None``.
``orphan`` / ``installed``
    a reward id declared for a type no installed plugin owns; a type asked for
    that no installed plugin owns.

Problems print as ``<type>[ <reward id>]: <check>: <message>``, one line each;
at most :data:`MAX_PER_CHECK` are listed per type, id and check, followed by
a "... and N more like the above" line. The kit scores with
:data:`CONTEXT` and takes well under a second for the official families.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from trace_tasks.errors import AnnotationParseError
from trace_tasks.plugins import (
    DRAWABLES,
    FLAT_ITEM_LENGTHS,
    SHAPES,
    AnnotationExplanation,
    AnnotationTypeEntry,
    Registry,
    RewardEntry,
    ScoringContext,
    extent_points,
    flat_drawing,
    get_registry,
    is_flat_item,
    items_of,
    lay_out,
    schema_problems,
    unsupported_keywords,
)
from trace_tasks.scoring import PluginBug, checked_score, is_diagnostic_key

__all__ = ["KitProblem", "assert_family_ok", "check_family", "hostile_values", "orphan_problems"]


#: How far a self-score may be from 1.0, and an explanation's numbers from the score's.
TOLERANCE = 1e-12
#: How far a permuted set's reward may be from the original's (summation order).
ORDER_TOLERANCE = 1e-9
#: At most this many problems of one check are listed per type and reward id.
MAX_PER_CHECK = 3
#: The context the kit scores with.
CONTEXT = ScoringContext(half_life_px=32.0, image_size=(1000.0, 1000.0))


@attrs.frozen(slots=True)
class KitProblem:
    """One thing :func:`check_family` found wrong.

    ``reward_id`` is "" for problems of the type itself (its examples, its
    parser); ``check`` is one of the names listed in the module docstring.
    """

    annotation_type: str
    reward_id: str
    check: str
    message: str

    def __str__(self) -> str:
        where = f"{self.annotation_type} {self.reward_id}" if self.reward_id else self.annotation_type
        return f"{where}: {self.check}: {self.message}"


def _short(value: Any, limit: int = 80) -> str:
    """A one-line repr of at most about ``limit`` characters, cheap even for huge values."""
    try:
        if isinstance(value, str) and len(value) > limit:
            text = repr(value[:limit]) + f"...({len(value)} chars)"
        elif isinstance(value, (list, tuple)) and len(value) > 6:
            head = ", ".join(_short(v, 24) for v in value[:3])
            text = f"[{head}, ... {len(value)} items]"
        elif isinstance(value, Mapping) and len(value) > 6:
            head = ", ".join(f"{_short(k, 16)}: {_short(v, 24)}" for k, v in list(value.items())[:3])
            text = f"{{{head}, ... {len(value)} keys}}"
        else:
            text = repr(value)
    except Exception as exc:  # a hostile __repr__, or nesting too deep to show
        text = f"<{type(value).__name__}: {type(exc).__name__} in repr>"
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text)} chars)"


def _exc(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "?"
    text = " ".join(text.split())
    return f"{type(exc).__name__}: {text if len(text) <= 160 else text[:140] + '...'}"


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and other values without a truthy ==
        return _short(a, 10_000) == _short(b, 10_000)


# --------------------------------------------------------------------------- hostile corpus

_HOSTILE_SCALARS: tuple[Any, ...] = (
    float("nan"),
    float("inf"),
    float("-inf"),
    10**400,
    -(10**400),
    1e308,
    -1e308,
    True,
    False,
    None,
    "1",
    "junk",
    "",
    "\u0661\u0662",
    [],
    {},
)


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _numeric_paths(value: Any, path: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    if depth > 8:
        return
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _numeric_paths(item, (*path, i), depth + 1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _numeric_paths(item, (*path, key), depth + 1)


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        out = dict(value)
        out[head] = _replace(value[head], rest, new)
        return out
    items = list(value)
    items[head] = _replace(items[head], rest, new)
    return tuple(items) if isinstance(value, tuple) else items


def _example_variants(example: Any) -> Iterator[Any]:
    """The example with one coordinate replaced by each hostile scalar, zeroed, negated, or its keys mangled."""
    paths = list(_numeric_paths(example))
    for path in dict.fromkeys([paths[0], paths[-1]] if paths else []):
        for scalar in _HOSTILE_SCALARS:
            yield _replace(example, path, copy.deepcopy(scalar))
    if paths:
        zeroed, negated = example, example
        for path in paths:
            zeroed = _replace(zeroed, path, 0)
            negated = _replace(negated, path, -_get(example, path))
        yield zeroed
        yield negated
        yield _replace(example, paths[0], _get(example, paths[-1]))  # e.g. a zero-width box
    if isinstance(example, Mapping) and example:
        first_key, first = next(iter(example.items()))
        yield {"": first}
        yield {**example, f" {first_key} ": first}  # duplicate after stripping
        yield {first_key: None}
        yield {1: first}
    if isinstance(example, list) and example:
        yield example * max(1, 3000 // len(example))  # huge, capped
        yield [*example, None]
        yield [*example, "junk"]
        yield tuple(example)
        yield [example]
    if isinstance(example, (list, tuple, Mapping)):
        try:
            yield json.dumps(example)
            yield json.dumps(example)[:-1]
        except (TypeError, ValueError):
            pass


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def hostile_values(examples: Sequence[Any] = ()) -> list[Any]:
    """The kit's hostile corpus: generic values, then variants of each example (fresh objects on every call)."""
    values: list[Any] = [copy.deepcopy(v) for v in _HOSTILE_SCALARS]
    values += [
        0,
        -1,
        1.5,
        "null",
        "NaN",
        "1e309",
        "[1, 2",
        "{'a': (1, 2)}",
        '{"a": [1, 2, 3, 4]}',
        "[[0, 0, 1, 1], [2, 2, 3, 3]]",
        "(" * 5000,
        "[" * 200 + "]" * 200,
        "\x00",
        "\U0001f642\u200b\ufeff",
        "\uff11\uff12",
        _deep(200),
        [float("nan")] * 4,
        [float("inf")] * 4,
        [10**400] * 4,
        [True, False, True, False],
        [None, None],
        [0, 0, 0, 0],
        [-1, -1, -1, -1],
        [1, "a", None, [2], {"k": 3}],
        [[0, 0, 1, 1]] * 3000,
        [0] * 5000,
        list(range(3000)),
        {"bboxes": "junk"},
        {"a": {"b": {"c": []}}},
        {"": []},
        {"x": float("nan")},
        {"k": [[0, 0, 1, 1]] * 2},
        {str(i): [i, i] for i in range(50)},
        ((1, 2), (3, 4)),
        # Finite coordinates whose areas, widths or squares underflow to 0 or overflow to inf.
        [0, 0, 1e-200, 1e-200],
        [1e-300, 1e-300, 2e-300, 2e-300],
        [0, 0, 1e308, 1e308],
        [-1e308, -1e308, 1e308, 1e308],
        [1e-300, 2e-300],
        [-1e308, 1e308],
        [0, 0, 1e-200],
        [0, 0, 1e308],
        [[0, 0], [1e-200, 1e-200]],
        [[-1e308, -1e308], [1e308, 1e308]],
        # Mixed scales side by side: tiny against tiny, tiny against huge, huge against ordinary.
        [[0, 0, 1e-200, 1e-200], [1e-300, 1e-300, 2e-300, 2e-300]],
        [[0, 0, 1e-200, 1e-200], [-1e308, -1e308, 1e308, 1e308]],
        [[-1e308, -1e308, 1e308, 1e308], [10, 20, 110, 220]],
        {"a": [0, 0, 1e-200, 1e-200], "b": [-1e308, -1e308, 1e308, 1e308]},
    ]
    for example in examples:
        values.extend(_example_variants(copy.deepcopy(example)))
        # The example at another scale (scored against the example itself: a mixed-scale pair),
        # and, for a list, its first item shrunk and its last one blown up.
        paths = list(_numeric_paths(example))
        for factor in (1e-200, 1e300):
            scaled = copy.deepcopy(example)
            for path in paths:
                scaled = _replace(scaled, path, float(_get(example, path)) * factor)
            values.append(scaled)
        if isinstance(example, list) and len(example) >= 2:
            mixed = copy.deepcopy(example)
            for path in paths:
                if path[0] in (0, len(example) - 1):
                    factor = 1e-200 if path[0] == 0 else 1e300
                    mixed = _replace(mixed, path, float(_get(example, path)) * factor)
            values.append(mixed)
    return values


# --------------------------------------------------------------------------- the checks


class _Report:
    """Problems, at most MAX_PER_CHECK per (type, reward id, check)."""

    def __init__(self) -> None:
        self.problems: list[KitProblem] = []
        self.counts: dict[tuple[str, str, str], int] = {}

    def add(self, annotation_type: str, reward_id: str, check: str, message: str) -> None:
        key = (annotation_type, reward_id, check)
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        if count <= MAX_PER_CHECK:
            self.problems.append(KitProblem(annotation_type, reward_id, check, " ".join(message.split())))

    def finish(self) -> list[KitProblem]:
        out = []
        for i, problem in enumerate(self.problems):
            out.append(problem)
            key = (problem.annotation_type, problem.reward_id, problem.check)
            last = not any((p.annotation_type, p.reward_id, p.check) == key for p in self.problems[i + 1 :])
            if last and self.counts[key] > MAX_PER_CHECK:
                out.append(KitProblem(*key, f"... and {self.counts[key] - MAX_PER_CHECK} more like the above"))
        return out


_Checked = tuple[float, dict[str, float]]
_MISSING = object()


class _TypeCheck:
    """All checks of one annotation type."""

    def __init__(self, registry: Registry, entry: AnnotationTypeEntry, report: _Report) -> None:
        self.registry = registry
        self.entry = entry
        self.name = entry.name
        self.report = report
        self.spec = entry.spec
        self.shape = self.spec.shape if self.spec is not None else ""
        rewards = [registry.reward_ids[rid] for rid in entry.reward_ids if rid in registry.reward_ids]
        # Versions whose prediction is the owner's parse, and versions that read their prediction in their own form
        # (RewardIdSpec.parse_prediction, a click scored against a box): the latter get predictions of their form only.
        self.rewards: list[RewardEntry] = [r for r in rewards if r.parse is None]
        self.own_form: list[RewardEntry] = [r for r in rewards if r.parse is not None]
        self.draw_hook_checked = False

    def problem(self, check: str, message: str, reward_id: str = "") -> None:
        self.report.add(self.name, reward_id, check, message)

    # -- parsing

    def parse(self, value: Any) -> Any:
        return self.entry.parse(annotation_type=self.name, value=value)

    def parse_examples(self) -> list[tuple[Any, Any]]:
        """``(raw, parsed)`` of every example that parses."""
        examples = tuple(self.spec.examples) if self.spec is not None else ()
        if not examples:
            self.problem("examples", "declares no examples (AnnotationTypeSpec.examples): nothing can be checked")
            return []
        parsed: list[tuple[Any, Any]] = []
        for i, raw in enumerate(examples):
            try:
                value = self.parse(copy.deepcopy(raw))
            except Exception as exc:
                self.problem("parse", f"example #{i} {_short(raw)} does not parse: {_exc(exc)}")
                continue
            if value is None:
                self.problem("parse", f"example #{i} {_short(raw)} parses to None (the parse hook must return a value or raise)")
                continue
            parsed.append((raw, value))
            self.hook_parse(raw, value)
        if self.shape in ("set", "sequence") and not any(_list_of(raw, 2) for raw in examples):
            self.problem(
                "examples",
                f"no example of this {self.shape} type is a list of two or more items, so item order cannot be checked",
            )
        return parsed

    # -- the declared JSON Schema

    def check_schema(self) -> None:
        schema = self.spec.json_schema if self.spec is not None else None
        if schema is None:
            return
        unknown = unsupported_keywords(schema)
        if unknown:
            self.problem("schema", f"json_schema uses keywords the kit cannot check: {unknown}")
            return
        examples = tuple(self.spec.examples) if self.spec is not None else ()
        for i, raw in enumerate(examples):
            found = schema_problems(copy.deepcopy(raw), schema, limit=1)
            if found:
                self.problem(
                    "schema", f"example #{i} {_short(raw)} does not validate against the declared json_schema: {found[0]}"
                )
        for value in _wrong_shapes(examples):
            if self._parse_quietly(value) is not _MISSING:
                continue  # it parses: not a wrong shape for this type
            if not schema_problems(value, schema, limit=1):
                self.problem(
                    "schema",
                    f"the declared json_schema accepts {_short(value)}, which does not parse as {self.name}: "
                    "a constrained decoder could emit it",
                )

    # -- scoring

    def score(self, reward: RewardEntry, prediction: Any, target: Any, what: str, *, hostile: bool = False) -> _Checked | None:
        """The checked (reward, diagnostics), or None after reporting why there is none."""
        rid = reward.reward_id
        try:
            result = reward.score(reward_id=rid, prediction=prediction, target=target, context=CONTEXT)
        except AnnotationParseError as exc:
            if not hostile:
                self.problem("score", f"scoring {what} raised {_exc(exc)}", rid)
            return None
        except Exception as exc:
            self.problem("score", f"scoring {what} raised {_exc(exc)}", rid)
            return None
        return self.check_result(result, reward, what)

    def check_result(self, result: Any, reward: RewardEntry, what: str, hook: str = "trace_score_annotation") -> _Checked | None:
        rid = reward.reward_id
        diagnostics = getattr(result, "diagnostics", None)
        if isinstance(diagnostics, Mapping):
            bad = [key for key in diagnostics if not is_diagnostic_key(key)]
            if bad:
                self.problem(
                    "contract",
                    f"{hook} for {what} reports diagnostic keys {_short(bad)}: each must be an annotation_* key "
                    f"of its own (not annotation_reward, annotation_parse_ok or annotation_type_*)",
                    rid,
                )
                return None
        try:
            return checked_score(result, reward.plugin, rid)
        except PluginBug as bug:
            self.problem("contract", f"{hook} for {what}: {str(bug).partition(': ')[2]}", rid)
            return None

    def check_ids(self, parsed: list[tuple[Any, Any]]) -> None:
        for reward in self.rewards:
            self.check_examples(reward, parsed)
        self.check_order(parsed)
        self.check_hostile(parsed)
        self.check_frame(parsed)

    # -- declared coordinate frames

    def convert(self, value: Any, scale_x: float, scale_y: float, y_first: bool, what: str) -> Any:
        """The owner's frame conversion of ``value``, or :data:`_MISSING` (after reporting why, unless a y-first refusal)."""
        assert self.entry.frame is not None
        try:
            got = self.entry.frame(annotation_type=self.name, value=value, scale_x=scale_x, scale_y=scale_y, y_first=y_first)
        except Exception as exc:
            self.problem("frame", f"trace_frame_annotation of {what} raised {_exc(exc)}")
            return _MISSING
        if got is None:
            if not y_first:  # a y-first frame may be refused (a one-dimensional family); scaling may not
                self.problem("frame", f"trace_frame_annotation of {what} returned None for a type the plugin owns")
            return _MISSING
        return got

    def extents(self, value: Any) -> list[tuple[float, float]] | None:
        """The drawn extent points of a parsed value's items, sorted; ``None`` when the owner cannot say."""
        reward = self.rewards[0] if self.rewards else None
        if self.entry.draw is None or reward is None or reward.explain is None:
            return None
        try:
            explanation = reward.explain(reward_id=reward.reward_id, prediction=None, target=value, context=CONTEXT)
            points = [
                (float(x), float(y))
                for item in explanation.unmatched_targets
                for shape in (self.entry.draw(annotation_type=self.name, item=item.value) or ())
                for x, y in extent_points(shape)
            ]
        except Exception:  # the explain and draw checks report these
            return None
        return sorted(points)

    def check_frame(self, parsed: list[tuple[Any, Any]]) -> None:
        if self.entry.frame is None or not self.rewards:
            return
        reward = self.rewards[0]
        for i, (_, t) in enumerate(parsed):
            what = f"example #{i}"
            there = self.convert(t, 2.0, 0.5, False, what)  # powers of two: the round trip is exact
            back = self.convert(there, 0.5, 2.0, False, f"{what} converted") if there is not _MISSING else _MISSING
            swapped = self.convert(t, 1.0, 1.0, True, what)
            twice = self.convert(swapped, 1.0, 1.0, True, f"{what} swapped") if swapped is not _MISSING else _MISSING
            for label, value in (("scaled by (2, 0.5) and back", back), ("swapped twice (y_first)", twice)):
                if value is _MISSING:
                    continue
                got = self.score(reward, value, t, f"{what} {label}")
                if got is not None and abs(got[0] - 1.0) > TOLERANCE:
                    self.problem("frame", f"{what} {label} scores {got[0]!r} against itself, expected 1.0", reward.reward_id)
            before = self.extents(t)
            if before is None:
                continue
            checks = (
                (there, sorted((2.0 * x, 0.5 * y) for x, y in before), "scale_x=2, scale_y=0.5", "x doubled, y halved"),
                (swapped, sorted((y, x) for x, y in before), "y_first", "x and y exchanged"),
            )
            for value, expected, how, meaning in checks:
                if value is _MISSING:
                    continue
                after = self.extents(value)
                close = after is not None and len(after) == len(expected)
                if close and after is not None:
                    close = all(
                        math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
                        for p, q in zip(after, expected, strict=True)
                        for a, b in zip(p, q, strict=True)
                    )
                if not close:
                    self.problem(
                        "frame", f"{what} converted with {how} draws at {_short(after)}, expected {meaning}: {_short(expected)}"
                    )
        for reward in self.own_form:
            self.check_own_form(reward, parsed)

    # -- versions that read their prediction in their own form

    def check_own_form(self, reward: RewardEntry, parsed: list[tuple[Any, Any]]) -> None:
        """A version with ``parse_prediction``: its declared (prediction, target, reward) triples, then hostile values.

        The triples stand in for the self-score: each prediction parses with the version's parse, each target
        with the owner's, and the score is the declared reward (within 1e-12). Hostile values are read by the
        version's parse (the corpus of its prediction examples) and scored against every target example, and
        the owner's hostile survivors are scored as targets of the first prediction example.
        """
        rid = reward.reward_id
        spec = reward.spec
        triples = tuple(spec.prediction_examples) if spec is not None else ()
        if not triples:
            self.problem("examples", "declares parse_prediction but no prediction_examples: nothing can be checked", rid)
            return
        predictions: list[Any] = []
        for i, triple in enumerate(triples):
            try:
                raw_p, raw_t, expected = triple
                p = self.parse_prediction(reward, copy.deepcopy(raw_p))
                t = self.parse(copy.deepcopy(raw_t))
            except Exception as exc:
                self.problem("parse", f"prediction example #{i} {_short(triple)} does not parse: {_exc(exc)}", rid)
                continue
            predictions.append(p)
            what = f"prediction example #{i} {_short(raw_p)} against {_short(raw_t)}"
            first = self.score(reward, p, t, what)
            if first is None:
                continue
            if not isinstance(expected, (int, float)) or abs(first[0] - float(expected)) > TOLERANCE:
                self.problem("self-score", f"{what} scores {first[0]!r}, declared {expected!r}", rid)
            self.deterministic(reward, p, t, what, first)
            self.explain(reward, p, t, what, first)
            self.hook_score(reward, p, t, what, first)
        for j, (_, t) in enumerate(parsed):
            for i, p in enumerate(predictions):
                self.score(reward, p, t, f"prediction example #{i} against example #{j}")
            self.explain_nothing(reward, t, f"no prediction against example #{j}")
        self.own_form_hostile(reward, triples, predictions, [value for _, value in parsed])

    def own_form_hostile(self, reward: RewardEntry, triples: Sequence[Any], predictions: list[Any], targets: list[Any]) -> None:
        """The hostile corpus of the version's prediction examples, read by its parse, against every target."""
        rid = reward.reward_id
        for raw in hostile_values(tuple(t[0] for t in triples if isinstance(t, tuple) and len(t) == 3)):
            shown = _short(raw)
            try:
                value = self.parse_prediction(reward, raw)
            except AnnotationParseError:
                continue
            except Exception as exc:
                self.problem(
                    "hostile", f"parse_prediction of {shown} raised {_exc(exc)}; only AnnotationParseError may escape", rid
                )
                continue
            if value is None:
                self.problem("hostile", f"parse_prediction of {shown} returned None; raise AnnotationParseError instead", rid)
                continue
            for j, target in enumerate(targets):
                self.score(reward, value, target, f"parsed {shown} against example #{j}", hostile=True)
        if predictions:
            for raw in hostile_values(tuple(self.spec.examples) if self.spec is not None else ()):
                value = self._parse_quietly(raw)
                if value is not _MISSING and value is not None:
                    self.score(reward, predictions[0], value, f"prediction example #0 against parsed {_short(raw)}", hostile=True)

    def parse_prediction(self, reward: RewardEntry, value: Any) -> Any:
        assert reward.parse is not None
        return reward.parse(annotation_type=self.name, value=value)

    def check_examples(self, reward: RewardEntry, parsed: list[tuple[Any, Any]]) -> None:
        rid = reward.reward_id
        for i, (raw, t) in enumerate(parsed):
            what = f"example #{i} against itself"
            again = self._parse_quietly(raw)  # a second parse: prediction and target are distinct objects
            p = t if again is _MISSING or again is None else again
            first = self.score(reward, p, t, what)
            if first is None:
                continue
            if abs(first[0] - 1.0) > TOLERANCE:
                self.problem("self-score", f"example #{i} scores {first[0]!r} against itself, expected 1.0", rid)
            self.deterministic(reward, p, t, what, first)
            self.explain(reward, p, t, what, first)
            self.hook_score(reward, p, t, what, first)
        for i, (_, p) in enumerate(parsed):
            for j, (_, t) in enumerate(parsed):
                if i != j:
                    what = f"example #{i} against example #{j}"
                    first = self.score(reward, p, t, what)
                    if first is not None:
                        self.deterministic(reward, p, t, what, first)
                        self.explain(reward, p, t, what, first)
        for j, (_, t) in enumerate(parsed):
            self.explain_nothing(reward, t, f"no prediction against example #{j}")

    def deterministic(self, reward: RewardEntry, p: Any, t: Any, what: str, first: _Checked) -> None:
        second = self.score(reward, p, t, what)
        if second is not None and second != first:
            self.problem("deterministic", f"scoring {what} twice gave {_short(first)} then {_short(second)}", reward.reward_id)

    # -- declared capabilities

    def check_pure_parse(self, parsed: list[tuple[Any, Any]]) -> None:
        """``pure_parse``: equal values from equal content, the raw value untouched, nothing changed by the hooks."""
        if self.spec is None or not self.spec.pure_parse:
            return
        for i, (raw, value) in enumerate(parsed):
            given = copy.deepcopy(raw)
            first, second = self._parse_quietly(given), self._parse_quietly(raw)
            if not _same(given, raw):
                self.problem("pure-parse", f"declares pure_parse, but parsing example #{i} changed the raw value it was given")
            elif not _same(first, second) or not _same(first, value):
                self.problem(
                    "pure-parse",
                    f"declares pure_parse, but example #{i} parsed to {_short(value)} after the score hooks ran and to "
                    f"{_short(first)} fresh: the parse depends on more than the value, or a hook changed a parsed value",
                )

    def check_drawn_as(self, parsed: list[tuple[Any, Any]]) -> None:
        """``drawn_as``: each item of each example is a flat tuple that the draw hook draws as ``flat_drawing`` of it."""
        kind = self.spec.drawn_as if self.spec is not None else ""
        if not kind:
            return
        declares = f"declares drawn_as={kind!r}"
        if self.entry.draw is None:
            self.problem("drawn-as", f"{declares}, but its owner implements no trace_draw_annotation")
            return
        if self.shape not in SHAPES:
            self.problem("drawn-as", f"{declares} but no shape (AnnotationTypeSpec.shape): the lint cannot find its items")
            return
        length = FLAT_ITEM_LENGTHS.get(kind)
        for i, (_, value) in enumerate(parsed):
            for item in items_of(value, self.shape) or ():
                if not is_flat_item(kind, item):
                    wanted = f"{length} coordinates" if length else "an even number of coordinates"
                    self.problem(
                        "drawn-as", f"{declares}, but example #{i} parses to the item {_short(item)}, not a tuple of {wanted}"
                    )
                    return
                try:
                    drawn = self.entry.draw(annotation_type=self.name, item=item)
                except Exception as exc:
                    self.problem("drawn-as", f"{declares}, but drawing example #{i}'s item {_short(item)} raised {_exc(exc)}")
                    return
                expected = flat_drawing(kind, item)
                if not isinstance(drawn, (list, tuple)) or not _same(list(drawn), expected):
                    self.problem(
                        "drawn-as",
                        f"{declares}, but example #{i}'s item {_short(item)} draws as {_short(drawn)}, not {_short(expected)}",
                    )
                    return

    def check_image_blind(self, parsed: list[tuple[Any, Any]]) -> None:
        """``image_blind``: the declared item, laid out in the type's shape, parses and scores."""
        declared = self.spec.image_blind if self.spec is not None else None
        if declared is None:
            return
        if self.shape not in SHAPES:
            self.problem(
                "image-blind", "declares image_blind but no shape (AnnotationTypeSpec.shape): the audit cannot lay it out"
            )
            return
        try:
            item = declared.item(640.0, 480.0)
        except Exception as exc:
            self.problem("image-blind", f"image_blind.item(640.0, 480.0) raised {_exc(exc)}")
            return
        if declared.averaged and not (isinstance(item, (list, tuple)) and item and all(_number(x) for x in item)):
            self.problem("image-blind", f"declares averaged items, but its item {_short(item)} is not a flat list of numbers")
        keys = next((list(value) for _, value in parsed if isinstance(value, Mapping)), ["k"])
        value = lay_out(item, self.shape, keys)
        blind = self._parse_quietly(value)
        if blind is _MISSING or blind is None:
            self.problem("image-blind", f"the image-blind value {_short(value)} for a 640 x 480 image does not parse")
            return
        for reward in self.rewards:
            for j, (_, target) in enumerate(parsed):
                self.score(reward, blind, target, f"the image-blind value against example #{j}")

    # -- order

    def check_order(self, parsed: list[tuple[Any, Any]]) -> None:
        for raw, target in parsed:
            if self.shape in ("set", "sequence") and _list_of(raw, 2):
                if self.shape == "set":
                    for base in [raw, raw[:-1]] if len(raw) > 2 else [raw]:
                        self.same_reward("set-order", base, base[::-1], target, "the set prediction reversed")
                        if len(base) > 2:
                            self.same_reward("set-order", base, base[1:] + base[:1], target, "the set prediction rotated")
                elif raw[::-1] != raw:
                    self.sequence_changes(raw, target)
            if self.shape == "set_map" and isinstance(raw, Mapping):
                moved = {k: (v[::-1] if isinstance(v, list) else v) for k, v in raw.items()}
                self.same_reward("set-order", raw, moved, target, "each key's items reversed")
            if self.shape in ("map", "set_map") and isinstance(raw, Mapping) and len(raw) >= 2:
                moved = dict(reversed(list(raw.items())))
                self.same_reward("key-order", raw, moved, target, "the prediction's keys in reverse order")

    def _parse_quietly(self, raw: Any) -> Any:
        try:
            return self.parse(copy.deepcopy(raw))
        except Exception:
            return _MISSING

    def same_reward(self, check: str, base: Any, moved: Any, target: Any, label: str) -> None:
        p_base, p_moved = self._parse_quietly(base), self._parse_quietly(moved)
        if p_base is _MISSING or p_moved is _MISSING or p_base is None or p_moved is None:
            return  # reported by the parse and hostile checks
        for reward in self.rewards:
            a = self.score(reward, p_base, target, f"{_short(base)} against an example")
            b = self.score(reward, p_moved, target, f"{_short(moved)} against an example")
            if a is not None and b is not None and abs(a[0] - b[0]) > ORDER_TOLERANCE:
                self.problem(
                    check,
                    f"{label} changes the reward from {a[0]!r} to {b[0]!r} ({_short(base)} vs {_short(moved)})",
                    reward.reward_id,
                )

    def sequence_changes(self, raw: list[Any], target: Any) -> None:
        reversed_ = self._parse_quietly(raw[::-1])
        if reversed_ is _MISSING or reversed_ is None:
            return
        for reward in self.rewards:
            got = self.score(reward, reversed_, target, "the reversed example against the example")
            if got is not None and abs(got[0] - 1.0) <= TOLERANCE:
                self.problem(
                    "sequence-order",
                    f"reversing the sequence {_short(raw)} leaves the reward at {got[0]!r}: a sequence must be order-sensitive "
                    f"(declare shape 'set' if order does not matter)",
                    reward.reward_id,
                )

    # -- hostile values

    def check_hostile(self, parsed: list[tuple[Any, Any]]) -> None:
        examples = tuple(self.spec.examples) if self.spec is not None else ()
        targets = [value for _, value in parsed]
        survivors: list[tuple[str, Any]] = []
        for raw in hostile_values(examples):
            shown = _short(raw)
            try:
                value = self.parse(raw)
            except AnnotationParseError:
                continue
            except RecursionError:
                self.problem("hostile", f"parse of {shown} raised RecursionError; raise AnnotationParseError on deep nesting")
                continue
            except Exception as exc:
                self.problem("hostile", f"parse of {shown} raised {_exc(exc)}; only AnnotationParseError may escape")
                continue
            if value is None:
                self.problem("hostile", f"parse of {shown} returned None; raise AnnotationParseError instead")
                continue
            survivors.append((shown, value))
            for reward in self.rewards:
                for j, target in enumerate(targets):
                    self.score(reward, value, target, f"parsed {shown} against example #{j}", hostile=True)
                    self.score(reward, target, value, f"example #{j} against parsed {shown}", hostile=True)
        self.hostile_pairs(survivors)

    def hostile_pairs(self, survivors: list[tuple[str, Any]]) -> None:
        """Hostile values against themselves and their neighbour in the corpus (two tiny boxes, a tiny and a huge one).

        An example always has area, so only these pairs reach a union that
        underflows to zero or an area that overflows; every pair is cheap.
        """
        for i, (shown, value) in enumerate(survivors):
            partners = [survivors[i]] if i + 1 == len(survivors) else [survivors[i], survivors[i + 1]]
            for other_shown, other in partners:
                for reward in self.rewards:
                    self.score(reward, value, other, f"parsed {shown} against parsed {other_shown}", hostile=True)

    # -- explain and draw

    def explain(self, reward: RewardEntry, p: Any, t: Any, what: str, scored: _Checked) -> None:
        if reward.explain is None:
            if self.entry.draw is not None and self.shape == "scalar":
                self.draw(t if reward.parse is not None else p, what)  # a version's own prediction form: the owner's target
            return
        rid = reward.reward_id
        try:
            explanation = reward.explain(reward_id=rid, prediction=p, target=t, context=CONTEXT)
        except Exception as exc:
            self.problem("explain", f"explaining {what} raised {_exc(exc)}", rid)
            return
        if explanation is None:
            return  # this id is not explained by its plugin
        if not isinstance(explanation, AnnotationExplanation):
            self.problem("explain", f"explaining {what} returned {type(explanation).__name__}, not an AnnotationExplanation", rid)
            return
        got = self.check_result(explanation.score, reward, what, "trace_explain_annotation's score")
        if got is None:
            return
        if not _close(got, scored):
            self.problem("explain", f"the explanation of {what} has score {_short(got)}, but scoring gave {_short(scored)}", rid)
        self.draw_explained(explanation, what, own_form=reward.parse is not None)
        self.hook_explain(reward, p, t, what, explanation)

    def explain_nothing(self, reward: RewardEntry, t: Any, what: str) -> None:
        if reward.explain is None:
            return
        rid = reward.reward_id
        try:
            explanation = reward.explain(reward_id=rid, prediction=None, target=t, context=CONTEXT)
        except Exception as exc:
            self.problem("explain", f"explaining {what} (prediction=None) raised {_exc(exc)}", rid)
            return
        if explanation is None:
            return
        if not isinstance(explanation, AnnotationExplanation):
            self.problem("explain", f"explaining {what} returned {type(explanation).__name__}, not an AnnotationExplanation", rid)
            return
        reward_value = getattr(explanation.score, "reward", None)
        if reward_value != 0.0:
            self.problem("explain", f"explaining {what} (prediction=None) gives reward {_short(reward_value)}, expected 0", rid)
        self.draw_explained(explanation, what)

    def draw_explained(self, explanation: AnnotationExplanation, what: str, *, own_form: bool = False) -> None:
        if self.entry.draw is None:
            return
        if own_form:  # the owner draws its type's values; a version's own prediction form is not one of them
            items = [*(pair.target for pair in explanation.pairs), *explanation.unmatched_targets]
        else:
            items = [x for pair in explanation.pairs for x in (pair.prediction, pair.target)]
            items += [*explanation.unmatched_predictions, *explanation.unmatched_targets]
        for item in items:
            self.draw(getattr(item, "value", item), f"item {getattr(item, 'label', '?')!r} of {what}")

    def draw(self, item: Any, what: str) -> None:
        draw = self.entry.draw
        if draw is None:
            return
        try:
            shapes = draw(annotation_type=self.name, item=item)
        except Exception as exc:
            self.problem("draw", f"drawing {what} raised {_exc(exc)}")
            return
        if shapes is None:
            return  # the owner cannot draw this item (a ShapeFamily whose primitive has no ``draw``)
        if not isinstance(shapes, (list, tuple)):
            self.problem("draw", f"drawing {what} returned {type(shapes).__name__}, not a list of trace_tasks.family drawables")
            return
        for shape in shapes:
            if not isinstance(shape, DRAWABLES):
                self.problem("draw", f"drawing {what} returned {_short(shape)}, not a trace_tasks.family drawable")
                return
            if not all(math.isfinite(c) for point in extent_points(shape) for c in point):
                self.problem("draw", f"drawing {what} returned {_short(shape)} with a non-finite coordinate")
                return
        if not self.draw_hook_checked:
            self.draw_hook_checked = True
            got = self._answers("trace_draw_annotation", self.entry.plugin, {"annotation_type": self.name, "item": item}, what)
            if got is not _MISSING and not _same(list(got or ()), list(shapes)):
                self.problem("hook", f"registry.manager.hook.trace_draw_annotation returns {_short(got)} for {what}, "
                             f"not the owner's {_short(shapes)}")  # fmt: skip

    # -- through pluggy

    def _answers(self, hook_name: str, responsible: str, kwargs: Mapping[str, Any], what: str, rid: str = "") -> Any:
        """The pm.hook answer; every other plugin answering (or raising) is reported."""
        hook = getattr(self.registry.manager.hook, hook_name)
        for impl in hook.get_hookimpls():
            plugin = self.registry.manager.get_name(impl.plugin)
            if plugin == responsible:
                continue
            try:
                answer = impl.function(*(kwargs[arg] for arg in impl.argnames))
            except Exception as exc:
                self.problem(
                    "hook", f"plugin {plugin!r} raised {_exc(exc)} from {hook_name} for {what}; it must return None", rid
                )
                continue
            if answer is not None:
                self.problem(
                    "hook",
                    f"plugin {plugin!r} answers {hook_name} for {what} ({_short(answer)}), which {responsible!r} "
                    "is responsible for; it must return None",
                    rid,
                )
        try:
            return hook(**kwargs)
        except Exception as exc:
            self.problem("hook", f"registry.manager.hook.{hook_name} for {what} raised {_exc(exc)}", rid)
            return _MISSING

    def hook_parse(self, raw: Any, expected: Any) -> None:
        got = self._answers(
            "trace_parse_annotation",
            self.entry.plugin,
            {"annotation_type": self.name, "value": copy.deepcopy(raw)},
            f"example {_short(raw)}",
        )
        if got is not _MISSING and not _same(got, expected):
            self.problem("hook", f"registry.manager.hook.trace_parse_annotation returns {_short(got)} for example "
                         f"{_short(raw)}, not the owner's {_short(expected)}")  # fmt: skip

    def hook_score(self, reward: RewardEntry, p: Any, t: Any, what: str, expected: _Checked) -> None:
        kwargs = {"reward_id": reward.reward_id, "prediction": p, "target": t, "context": CONTEXT}
        got = self._answers("trace_score_annotation", reward.plugin, kwargs, what, reward.reward_id)
        if got is _MISSING:
            return
        checked = self.check_result(got, reward, what, "registry.manager.hook.trace_score_annotation")
        if checked is not None and not _close(checked, expected):
            self.problem("hook", f"registry.manager.hook.trace_score_annotation gives {_short(checked)} for {what}, "
                         f"not {_short(expected)}", reward.reward_id)  # fmt: skip

    def hook_explain(self, reward: RewardEntry, p: Any, t: Any, what: str, expected: AnnotationExplanation) -> None:
        kwargs = {"reward_id": reward.reward_id, "prediction": p, "target": t, "context": CONTEXT}
        got = self._answers("trace_explain_annotation", reward.plugin, kwargs, what, reward.reward_id)
        if got is not _MISSING and not _same(got, expected):
            self.problem("hook", f"registry.manager.hook.trace_explain_annotation returns {_short(got)} for {what}, "
                         "not the plugin's own explanation", reward.reward_id)  # fmt: skip


def _shortened(value: Any) -> Any:
    """``value`` with its first array of numbers one item short (``None`` when it holds none)."""
    if isinstance(value, list):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return value[:-1]
        for i, item in enumerate(value):
            short = _shortened(item)
            if short is not None:
                return [*value[:i], short, *value[i + 1 :]]
    elif isinstance(value, Mapping):
        for key, item in value.items():
            short = _shortened(item)
            if short is not None:
                return {**value, key: short}
    return None


def _wrong_shapes(examples: Sequence[Any]) -> list[Any]:
    """Values of a wrong shape built from the examples, for the ``schema`` check (fresh objects)."""
    out: list[Any] = ["junk", None, True]
    for example in examples:
        out += [[copy.deepcopy(example)], {"value": copy.deepcopy(example)}]
        short = _shortened(copy.deepcopy(example))
        if short is not None:
            out.append(short)
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _list_of(value: Any, n: int) -> bool:
    return isinstance(value, list) and len(value) >= n


def _close(a: _Checked, b: _Checked) -> bool:
    if abs(a[0] - b[0]) > TOLERANCE or list(a[1]) != list(b[1]):
        return False
    return all(abs(a[1][k] - b[1][k]) <= TOLERANCE for k in a[1])


def orphan_problems(registry: Registry) -> list[KitProblem]:
    """One ``orphan`` problem per reward id declared for an annotation type no installed plugin owns."""
    distributions = {info.name: info.distribution for info in registry.plugins}
    out = []
    for rid, entry in registry.orphan_reward_ids.items():
        dist = distributions.get(entry.plugin)
        who = f"plugin {entry.plugin!r}" + (f" (distribution {dist})" if dist else "")
        advice = registry.family_advice(entry.annotation_type)  # pip install, or the variable that disables it
        hint = f"; load its owner: {advice}" if advice else ""
        out.append(
            KitProblem(
                entry.annotation_type, rid, "orphan",
                f"{who} declares reward id {rid!r} for annotation type {entry.annotation_type!r}, which no installed "
                f"plugin owns: the id cannot score or be pinned{hint}",
            )
        )  # fmt: skip
    return out


def check_family(registry: Registry | None = None, types: Iterable[str] | str | None = None) -> list[KitProblem]:
    """Check annotation types (default: every installed one) through the plugin contract; returns the problems.

    ``registry`` defaults to the process-wide one (:func:`trace_tasks.get_registry`,
    which includes plugins registered in-process); ``types`` names the
    annotation types to check. Reward ids declared for a type no installed
    plugin owns are reported too (check ``orphan``). An empty list means the
    family passed.
    """
    registry = registry if registry is not None else get_registry()
    report = _Report()
    if types is None:
        names = list(registry.annotation_types)
        orphans = orphan_problems(registry)
    else:
        names = [types] if isinstance(types, str) else list(dict.fromkeys(types))
        orphans = [p for p in orphan_problems(registry) if p.annotation_type in names]
        orphaned = {e.annotation_type for e in registry.orphan_reward_ids.values()}
        for name in [n for n in names if n not in registry.annotation_types]:
            advice = registry.family_advice(name)
            hint = f" ({advice})" if advice else ""
            if name not in orphaned:
                report.add(name, "", "installed", f"no installed plugin owns annotation type {name!r}{hint}")
        names = [n for n in names if n in registry.annotation_types]
    for problem in orphans:
        report.add(problem.annotation_type, problem.reward_id, problem.check, problem.message)
    for name in names:
        check = _TypeCheck(registry, registry.annotation_types[name], report)
        parsed = check.parse_examples()
        check.check_schema()
        check.check_ids(parsed)
        check.check_image_blind(parsed)
        check.check_drawn_as(parsed)
        check.check_pure_parse(parsed)  # last: after every hook has seen the parsed values
    return report.finish()


def assert_family_ok(registry: Registry | None = None, types: Iterable[str] | str | None = None) -> None:
    """Run :func:`check_family` and raise ``AssertionError`` listing every problem, one per line."""
    problems = check_family(registry, types)
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        raise AssertionError(f"{len(problems)} family problem{'s' if len(problems) != 1 else ''}:\n{lines}")
