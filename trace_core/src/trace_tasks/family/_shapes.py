"""Families made of one primitive: :class:`ShapeFamily` and :class:`ShapeRewards`.

A family supplies a :class:`~trace_tasks.family.Primitive` (how to parse
one item, how similar two items are, how to draw one); these classes turn it
into every hook of the plugin contract for the five collection shapes
(scalar, set, sequence, map, set_map), so all families match sets, align
sequences and penalise missing or extra keys the same way, and explain and
draw their scores for free.

* :class:`ShapeFamily` owns annotation types (parse, default reward id, draw)
  and scores its own reward ids; an entry point may name the instance itself.
* :class:`ShapeRewards` adds reward versions for types another plugin owns
  (``bbox_giou_v1`` for ``bbox``), scoring the owner's parsed values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

from trace_tasks.errors import FamilyDefinitionError
from trace_tasks.family._parsing import make_parser
from trace_tasks.family._primitives import Primitive
from trace_tasks.family._scoring import make_explainer, make_scorer
from trace_tasks.plugins import (
    SHAPES,
    AnnotationExplanation,
    AnnotationScore,
    AnnotationTypeSpec,
    Drawable,
    RewardIdSpec,
    ScoringContext,
    hookimpl,
)

__all__ = ["ShapeFamily", "ShapeRewards", "TypeRow"]

#: ``(shape, reward id)`` or ``(shape, (default id, other id, ...))``.
TypeRow = tuple[str, Union[str, Sequence[str]]]


def _check_shape(shape: str) -> str:
    if shape not in SHAPES:
        raise FamilyDefinitionError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    return shape


class _ShapeScoring:
    """Score and explain hooks for reward ids that are shapes over a primitive."""

    def __init__(self, rewards: Mapping[str, tuple[str, str, Primitive]]) -> None:
        #: reward id -> (annotation type, shape, primitive)
        self.rewards = dict(rewards)
        self.scorers = {rid: make_scorer(_check_shape(shape), prim) for rid, (_, shape, prim) in self.rewards.items()}
        self.explainers = {rid: make_explainer(shape, prim, self.scorers[rid]) for rid, (_, shape, prim) in self.rewards.items()}

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationScore | None:
        scorer = self.scorers.get(reward_id)
        return scorer(prediction, target, context) if scorer is not None else None

    @hookimpl
    def trace_explain_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationExplanation | None:
        explainer = self.explainers.get(reward_id)
        return explainer(prediction, target, context) if explainer is not None else None


class ShapeFamily(_ShapeScoring):
    """Every hook of a family whose annotation types are shapes over one primitive.

    ``types`` maps each annotation type to ``(shape, reward_id)``, or to
    ``(shape, (default_id, other_id, ...))`` to offer several versions with the
    first as the default. ``versions`` maps a reward id to the primitive that
    scores it when that is not ``primitive`` (a v1 with another similarity).
    An entry point may name the instance (``bbox = "trace_plugins_bbox.plugin:family"``).
    """

    def __init__(
        self, primitive: Primitive, types: Mapping[str, TypeRow], *, versions: Mapping[str, Primitive] | None = None
    ) -> None:
        self.primitive = primitive
        versions = dict(versions or {})
        #: annotation type -> (shape, reward ids, default first)
        self.types: dict[str, tuple[str, tuple[str, ...]]] = {}
        for name, (shape, ids) in types.items():
            self.types[name] = (_check_shape(shape), (ids,) if isinstance(ids, str) else tuple(ids))
        unknown = set(versions) - {rid for _, ids in self.types.values() for rid in ids}
        if unknown:
            raise FamilyDefinitionError(f"versions names reward ids no type offers: {sorted(unknown)}")
        super().__init__(
            {rid: (name, shape, versions.get(rid, primitive)) for name, (shape, ids) in self.types.items() for rid in ids}
        )
        self.parsers = {name: make_parser(shape, primitive) for name, (shape, _) in self.types.items()}

    def shape_of(self, annotation_type: str) -> str:
        return self.types[annotation_type][0]

    def _examples(self, shape: str) -> tuple[Any, ...]:
        items = list(self.primitive.examples)
        if not items:
            return ()
        if shape == "scalar":
            return tuple(items)
        if shape in ("set", "sequence"):
            return (items,)
        if shape == "map":
            return ({f"k{i}": item for i, item in enumerate(items)},)
        return ({"a": items, "b": items[:1]},)

    def _parsed_value(self, shape: str) -> str:
        item = self.primitive.parsed_item or f"one parsed {self.primitive.name}"
        return {
            "scalar": item,
            "set": f"list of {item}",
            "sequence": f"list of {item}, in order",
            "map": f"dict of stripped str key -> {item}",
            "set_map": f"dict of stripped str key -> list of {item}",
        }[shape]

    @hookimpl
    def trace_annotation_types(self) -> list[AnnotationTypeSpec]:
        return [
            AnnotationTypeSpec(name, ids, shape=shape, examples=self._examples(shape), parsed_value=self._parsed_value(shape))
            for name, (shape, ids) in self.types.items()
        ]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        row = self.types.get(annotation_type)
        return row[1][0] if row is not None else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> Any:
        parser = self.parsers.get(annotation_type)
        return parser(value) if parser is not None else None

    @hookimpl
    def trace_draw_annotation(self, annotation_type: str, item: Any) -> Sequence[Drawable] | None:
        if annotation_type not in self.types or self.primitive.draw is None:
            return None
        return list(self.primitive.draw(item))


class ShapeRewards(_ShapeScoring):
    """Reward versions for annotation types another plugin owns, as shapes over a primitive.

    ``rewards`` maps each new reward id to ``(annotation_type, shape)``; the
    primitive needs only ``similarity``, ``matrix`` and ``metric``: its items
    are the owner's parsed items (see the parsed-value table in
    ``docs/plugins.md``). The ids are declared through ``trace_reward_ids`` and
    become current only when the user pins them.
    """

    def __init__(self, primitive: Primitive, rewards: Mapping[str, tuple[str, str]], *, description: str = "") -> None:
        self.primitive = primitive
        self.description = description
        super().__init__({rid: (name, shape, primitive) for rid, (name, shape) in rewards.items()})

    @hookimpl
    def trace_reward_ids(self) -> list[RewardIdSpec]:
        return [RewardIdSpec(rid, name, self.description) for rid, (name, _, _) in self.rewards.items()]
