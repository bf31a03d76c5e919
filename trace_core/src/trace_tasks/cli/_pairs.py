"""Which predicted item was matched to which target, for ``trace-tasks explain``.

The scorer only returns totals; this recomputes the pairs with the family's own
:class:`~trace_tasks.shapes.Primitive` (its similarity and matrix) and the
core's :func:`~trace_tasks.assignment.assign_pairs`, so the table shows exactly
the assignment the reward was built from. It stays generic: the primitive is
found as an attribute of the plugin object the registry loaded (the official
families expose ``BOX``, ``POINT`` and ``SEGMENT``), and the collection shape
comes from the plugin's ``TYPES`` table when it has one, else from the type
name's suffix (``_set_map``, ``_map``, ``_set``, ``_sequence``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from trace_tasks.assignment import assign_pairs
from trace_tasks.plugins import Registry
from trace_tasks.shapes import SHAPES, Primitive
from trace_tasks.specs import ScoringContext

SUFFIX_SHAPES = (("_set_map", "set_map"), ("_map", "map"), ("_set", "set"), ("_sequence", "sequence"))


@attrs.frozen(slots=True)
class Item:
    """One parsed primitive (a flat tuple of alternating x, y) and its label."""

    label: str
    value: Any


@attrs.frozen(slots=True)
class Pair:
    pred: Item
    target: Item
    score: float


@attrs.frozen(slots=True)
class Assignment:
    """The matched pairs, and the items left over on either side."""

    metric: str  # "iou" or "similarity"
    shape: str
    pairs: tuple[Pair, ...]
    unmatched_preds: tuple[Item, ...]
    unmatched_targets: tuple[Item, ...]


def find_primitive(registry: Registry, annotation_type: str) -> tuple[Primitive, str] | None:
    """The primitive and collection shape of ``annotation_type``, or None when not discoverable."""
    entry = registry.annotation_types.get(annotation_type)
    if entry is None:
        return None
    plugin = registry.manager.get_plugin(entry.plugin)
    if plugin is None:
        return None
    found = [value for name in dir(plugin) if isinstance(value := getattr(plugin, name, None), Primitive)]
    if not found:
        return None
    shape = _shape(plugin, annotation_type)
    base = annotation_type[: -len(suffix)] if (suffix := _suffix(annotation_type)) else annotation_type
    named = [p for p in found if p.name == base]
    return (named or found)[0], shape


def _suffix(annotation_type: str) -> str:
    return next((s for s, _ in SUFFIX_SHAPES if annotation_type.endswith(s)), "")


def _shape(plugin: object, annotation_type: str) -> str:
    table = getattr(plugin, "TYPES", None)
    if isinstance(table, Mapping):
        row = table.get(annotation_type)
        if isinstance(row, (tuple, list)) and row and row[0] in SHAPES:
            return str(row[0])
    suffix = _suffix(annotation_type)
    return dict(SUFFIX_SHAPES)[suffix] if suffix else "scalar"


def _match(
    preds: Sequence[Item], targets: Sequence[Item], prim: Primitive, ctx: ScoringContext, ordered: bool
) -> tuple[list[Pair], list[Item], list[Item]]:
    if ordered:
        index_pairs = [(i, i) for i in range(min(len(preds), len(targets)))]
    elif preds and targets:
        matrix = prim.matrix([p.value for p in preds], [t.value for t in targets], ctx)
        index_pairs = sorted(assign_pairs(matrix))
    else:
        index_pairs = []
    pairs = [Pair(preds[i], targets[j], prim.similarity(preds[i].value, targets[j].value, ctx)) for i, j in index_pairs]
    used_p = {i for i, _ in index_pairs}
    used_t = {j for _, j in index_pairs}
    return (
        pairs,
        [p for i, p in enumerate(preds) if i not in used_p],
        [t for j, t in enumerate(targets) if j not in used_t],
    )


def _items(values: Sequence[Any], prefix: str) -> list[Item]:
    return [Item(f"{prefix}#{i}", v) for i, v in enumerate(values)]


def _all_items(shape: str, value: Any) -> list[Item]:
    if shape == "scalar":
        return [Item("", value)]
    if shape in ("set", "sequence"):
        return _items(value, "")
    if shape == "map":
        return [Item(key, item) for key, item in value.items()]
    return [item for key, items in value.items() for item in _items(items, key)]


def assignment(prim: Primitive, shape: str, pred: Any, target: Any, ctx: ScoringContext) -> Assignment:
    """The pairs of parsed ``pred`` and ``target`` for a collection ``shape``.

    ``pred=None`` (nothing predicted, or a prediction that did not parse) leaves
    every target unmatched.
    """
    if pred is None:
        return Assignment(prim.metric, shape, (), (), tuple(_all_items(shape, target)))
    pairs: list[Pair] = []
    extra: list[Item] = []
    missing: list[Item] = []
    if shape == "scalar":
        pairs = [Pair(Item("", pred), Item("", target), prim.similarity(pred, target, ctx))]
    elif shape in ("set", "sequence"):
        pairs, extra, missing = _match(_items(pred, ""), _items(target, ""), prim, ctx, ordered=shape == "sequence")
    else:  # map and set_map: keys first, then one item (map) or a set (set_map) per shared key
        for key in target:
            if key not in pred:
                missing += _items(target[key], key) if shape == "set_map" else [Item(key, target[key])]
            elif shape == "map":
                pairs.append(Pair(Item(key, pred[key]), Item(key, target[key]), prim.similarity(pred[key], target[key], ctx)))
            else:
                p, e, m = _match(_items(pred[key], key), _items(target[key], key), prim, ctx, ordered=False)
                pairs += p
                extra += e
                missing += m
        for key in pred:
            if key not in target:
                extra += _items(pred[key], key) if shape == "set_map" else [Item(key, pred[key])]
    return Assignment(prim.metric, shape, tuple(pairs), tuple(extra), tuple(missing))
