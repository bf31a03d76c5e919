"""Geometry-free collection shapes: scalar, set, sequence, keyed map and set-map.

A family supplies a :class:`Primitive` (how to parse one item and how similar
two items are); this module turns it into the parse and score functions of the
five shapes, so every family matches sets, aligns sequences and penalises
missing or extra map keys the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from trace_tasks._fast import from_numpy, is_mapping
from trace_tasks.assignment import assign_pairs
from trace_tasks.limits import MAX_COLLECTION_ITEMS, MAX_MATRIX_CELLS
from trace_tasks.literals import read_annotation_string
from trace_tasks.markers import hookimpl
from trace_tasks.specs import AnnotationScore, AnnotationTypeSpec, ScoringContext


class AnnotationParseError(ValueError):
    """Raised by a parse hook when a value does not have the declared shape."""


SHAPES = ("scalar", "set", "sequence", "map", "set_map")

Matrix = Callable[[Sequence[Any], Sequence[Any], ScoringContext], Sequence[Sequence[float]]]


@attrs.frozen(slots=True)
class Primitive:
    """One geometric primitive (a box, a point, a segment...).

    ``parse_item`` raises :class:`AnnotationParseError` on a bad item.
    ``is_item`` tells whether a raw value looks like a single item (so a set or
    sequence given one flat item can be read as a one-item collection).
    ``similarity`` returns a finite float in [0, 1]; ``matrix`` returns the
    pairwise similarity of two item lists (rows: predictions): a list of lists
    must hold exactly ``similarity``'s values (the matched ones are summed as the
    reward), while a numpy array only chooses the pairs (their ``similarity`` is
    then summed), so a vectorized matrix may differ in the last bit.
    ``metric`` names the diagnostics (``iou`` or ``similarity``); ``wrapper_key``
    is a mapping key whose list value also counts as a collection (``bboxes``).
    ``extra_diagnostics`` adds per-type fields after the shape's own.
    """

    name: str
    parse_item: Callable[[Any], Any]
    is_item: Callable[[Any], bool]
    similarity: Callable[[Any, Any, ScoringContext], float]
    matrix: Matrix
    metric: str
    wrapper_key: str | None = None
    promote_single: bool = True
    extra_diagnostics: Callable[[ScoringContext], Mapping[str, float]] | None = None


def coordinate(value: Any) -> float:
    """A coordinate: a non-boolean, finite real that fits a float."""
    # Fast paths for the exact built-in types (bool is a subclass of int, so it is
    # not ``int`` here): 2-3x cheaper per coordinate, same result as the general path.
    kind = type(value)
    if kind is float:
        if math.isfinite(value):
            return value
        raise AnnotationParseError("coordinate must be finite")
    if kind is int:
        try:
            return float(value)  # always finite when it fits
        except OverflowError:
            raise AnnotationParseError("coordinate too large for a float") from None
    value = from_numpy(value)  # np.int64 and friends: plain numbers first
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnnotationParseError(f"coordinate must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise AnnotationParseError("coordinate too large for a float") from None
    if not math.isfinite(number):
        raise AnnotationParseError("coordinate must be finite")
    return number


_PLAIN_NUMBERS = frozenset((int, float))


def coordinates(value: Any, count: int) -> tuple[float, ...]:
    """Exactly ``count`` coordinates from a list or tuple."""
    if not isinstance(value, (list, tuple)):
        value = from_numpy(value)  # a target read from parquet: an array of numbers
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise AnnotationParseError(f"expected a list of {count} numbers")
    if _PLAIN_NUMBERS.issuperset(map(type, value)):
        # Fast path, all exact ints and floats (bool is not ``int`` here): C-level
        # conversion and finiteness checks, the same values as ``coordinate``.
        try:
            numbers = tuple(map(float, value))
        except OverflowError:
            raise AnnotationParseError("coordinate too large for a float") from None
        if all(map(math.isfinite, numbers)):
            return numbers
        raise AnnotationParseError("coordinate must be finite")
    return tuple(map(coordinate, value))


def is_flat(value: Any, count: int) -> bool:
    """Whether ``value`` looks like one flat item of ``count`` scalars (not a collection)."""
    return isinstance(value, (list, tuple)) and len(value) == count and not any(
        isinstance(v, (list, tuple, Mapping)) for v in value
    )


def _read(value: Any) -> Any:
    if isinstance(value, str):
        parsed, ok = read_annotation_string(value)
        if not ok:
            raise AnnotationParseError("annotation string is neither JSON nor a literal")
        return parsed
    return from_numpy(value)


def _as_list(value: Any) -> list[Any]:
    value = from_numpy(value)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_COLLECTION_ITEMS:
            raise AnnotationParseError(f"more than {MAX_COLLECTION_ITEMS} items")
        return list(value)
    raise AnnotationParseError("expected a list")


def parse_collection(value: Any, prim: Primitive) -> list[Any]:
    """Parse a set or sequence of ``prim`` items (string, wrapper and single-item forms)."""
    value = _read(value)
    if prim.wrapper_key is not None and is_mapping(value) and prim.wrapper_key in value:
        value = value[prim.wrapper_key]
    if prim.promote_single and prim.is_item(value):
        return [prim.parse_item(value)]
    return [prim.parse_item(item) for item in _as_list(value)]


def parse_map(value: Any, parse_value: Callable[[Any], Any]) -> dict[str, Any]:
    """Parse a keyed map: keys stripped, non-empty, unique after stripping, case kept."""
    value = _read(value)
    if not is_mapping(value):
        raise AnnotationParseError("expected a mapping of role keys")
    if len(value) > MAX_COLLECTION_ITEMS:
        raise AnnotationParseError(f"more than {MAX_COLLECTION_ITEMS} keys")
    out: dict[str, Any] = {}
    for raw_key, raw in value.items():
        key = (raw_key if isinstance(raw_key, str) else str(raw_key)).strip()
        if not key:
            raise AnnotationParseError("empty map key")
        if key in out:
            raise AnnotationParseError(f"duplicate map key {key!r} after stripping")
        out[key] = parse_value(raw)
    return out


def make_parser(shape: str, prim: Primitive) -> Callable[[Any], Any]:
    """The parse function of ``shape`` over ``prim``."""
    if shape == "scalar":
        return lambda value: prim.parse_item(_read(value))
    if shape in ("set", "sequence"):
        return lambda value: parse_collection(value, prim)
    if shape == "map":
        # Map values are scalar items taken as they are: a string value is rejected.
        return lambda value: parse_map(value, prim.parse_item)
    if shape == "set_map":
        return lambda value: parse_map(value, lambda v: parse_collection(v, prim))
    raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")


@attrs.frozen(slots=True)
class Matched:
    """Result of matching one pair of collections."""

    total: float  # sum of matched similarities
    count: int  # number of matched pairs
    denominator: int  # what the total is divided by


def match_set(preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext) -> Matched:
    """One-to-one assignment maximizing total similarity; divided by max(pred, gt, 1)."""
    n, m = len(preds), len(gts)
    if n == 0 or m == 0:
        return Matched(0.0, 0, max(n, m, 1))
    if n * m > MAX_MATRIX_CELLS:
        raise AnnotationParseError(f"assignment of {n}x{m} items exceeds {MAX_MATRIX_CELLS} cells")
    sim = prim.similarity
    if n == 1 and m == 1:
        return Matched(sim(preds[0], gts[0], ctx), 1, 1)
    # A vectorized matrix only chooses the pairs; the total is always the scalar
    # similarity's values (a Python matrix holds exactly those), so every code
    # path gives bit-identical rewards.
    # fsum is exact before its one rounding, so the order of the items (a set has
    # none) cannot change the last bit of the reward.
    matrix = prim.matrix(preds, gts, ctx)
    pairs = assign_pairs(matrix)
    if isinstance(matrix, list):  # already the scalar similarity's own values
        total = math.fsum(matrix[i][j] for i, j in pairs)
    else:
        total = math.fsum(sim(preds[i], gts[j], ctx) for i, j in pairs)
    return Matched(total, min(n, m), max(n, m))


def match_sequence(preds: Sequence[Any], gts: Sequence[Any], prim: Primitive, ctx: ScoringContext) -> Matched:
    """Index-aligned similarity; divided by the longer length."""
    sim = prim.similarity
    total = 0.0
    for p, g in zip(preds, gts):
        total += sim(p, g, ctx)
    return Matched(total, min(len(preds), len(gts)), max(len(preds), len(gts), 1))


def _set_reward(matched: Matched, n: int, m: int) -> float:
    if n == 0 and m == 0:
        return 1.0
    return matched.total / matched.denominator


def _mean(total: float, count: int) -> float:
    return total / count if count else 0.0


def make_scorer(shape: str, prim: Primitive) -> Callable[[Any, Any, ScoringContext], AnnotationScore]:
    """The score function of ``shape`` over ``prim``, with the shape's diagnostics."""
    mean_key = f"annotation_assigned_{prim.metric}_mean"
    extra = prim.extra_diagnostics or (lambda ctx: {})

    def scalar(pred: Any, gt: Any, ctx: ScoringContext) -> AnnotationScore:
        s = prim.similarity(pred, gt, ctx)
        diag = {"annotation_pred_size": 1.0, "annotation_gt_size": 1.0, "annotation_assigned_count": 1.0, mean_key: s}
        return AnnotationScore(s, {**diag, **extra(ctx)})

    def unordered(pred: list[Any], gt: list[Any], ctx: ScoringContext) -> AnnotationScore:
        matched = match_set(pred, gt, prim, ctx)
        diag = {
            "annotation_pred_size": float(len(pred)),
            "annotation_gt_size": float(len(gt)),
            "annotation_assigned_count": float(matched.count),
            mean_key: _mean(matched.total, matched.count),
        }
        return AnnotationScore(_set_reward(matched, len(pred), len(gt)), {**diag, **extra(ctx)})

    def ordered(pred: list[Any], gt: list[Any], ctx: ScoringContext) -> AnnotationScore:
        matched = match_sequence(pred, gt, prim, ctx)
        diag = {
            "annotation_pred_len": float(len(pred)),
            "annotation_gt_len": float(len(gt)),
            "annotation_assigned_count": float(matched.count),
            mean_key: _mean(matched.total, matched.count),
        }
        return AnnotationScore(_set_reward(matched, len(pred), len(gt)), {**diag, **extra(ctx)})

    def keyed(pred: dict[str, Any], gt: dict[str, Any], ctx: ScoringContext, per_key: bool) -> AnnotationScore:
        shared = [k for k in gt if k in pred]
        union = len(pred) + len(gt) - len(shared)
        total = 0.0
        assigned = 0
        mean_sum = 0.0
        mean_keys = 0
        for key in shared:
            if per_key:
                p, g = pred[key], gt[key]
                matched = match_set(p, g, prim, ctx)
                total += _set_reward(matched, len(p), len(g))
                assigned += matched.count
                if matched.count:
                    mean_sum += matched.total / matched.count
                    mean_keys += 1
            else:
                s = prim.similarity(pred[key], gt[key], ctx)
                total += s
                assigned += 1
                mean_sum += s
                mean_keys += 1
        reward = 1.0 if union == 0 else total / union
        diag = {
            "annotation_pred_size": float(len(pred)),
            "annotation_gt_size": float(len(gt)),
            "annotation_assigned_count": float(assigned),
            "annotation_shared_key_count": float(len(shared)),
            "annotation_missing_key_count": float(len(gt) - len(shared)),
            "annotation_extra_key_count": float(len(pred) - len(shared)),
            mean_key: _mean(mean_sum, mean_keys),
        }
        return AnnotationScore(reward, {**diag, **extra(ctx)})

    if shape == "scalar":
        return scalar
    if shape == "set":
        return unordered
    if shape == "sequence":
        return ordered
    if shape == "map":
        return lambda p, g, ctx: keyed(p, g, ctx, per_key=False)
    if shape == "set_map":
        return lambda p, g, ctx: keyed(p, g, ctx, per_key=True)
    raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")


def pairwise(similarity: Callable[[Any, Any, ScoringContext], float]) -> Matrix:
    """A pure-Python similarity matrix from a pair function (fine for small sets)."""

    def matrix(preds: Sequence[Any], gts: Sequence[Any], ctx: ScoringContext) -> list[list[float]]:
        return [[similarity(p, g, ctx) for g in gts] for p in preds]

    return matrix


class ShapeFamily:
    """The four hook implementations of a family whose types are shapes over one primitive.

    ``types`` maps each annotation type to ``(shape, reward_id)``: the collection
    shape (one of :data:`SHAPES`) and its current versioned reward id. A family
    module builds one and exposes its bound methods as the module's hooks, so
    the official families share one implementation instead of four copies.
    """

    def __init__(self, primitive: Primitive, types: Mapping[str, tuple[str, str]]) -> None:
        self.primitive = primitive
        self.types = dict(types)
        self.parsers = {name: make_parser(shape, primitive) for name, (shape, _) in self.types.items()}
        self.scorers = {rid: make_scorer(shape, primitive) for shape, rid in self.types.values()}

    def shape_of(self, annotation_type: str) -> str:
        return self.types[annotation_type][0]

    @hookimpl
    def trace_annotation_types(self) -> list[AnnotationTypeSpec]:
        return [AnnotationTypeSpec(name, (rid,)) for name, (_, rid) in self.types.items()]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        entry = self.types.get(annotation_type)
        return entry[1] if entry else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> Any:
        return self.parsers[annotation_type](value)

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationScore:
        return self.scorers[reward_id](prediction, target, context)
