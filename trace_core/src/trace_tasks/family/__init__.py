"""The family-author API: everything a plugin that adds annotation types or reward versions imports.

>>> from trace_tasks.family import Primitive, ShapeFamily, coordinates, is_flat

* building a family from one primitive: :class:`Primitive`, :class:`ShapeFamily`
  (types you own), :class:`ShapeRewards` (reward versions for someone else's
  types), :func:`pairwise`, :func:`scale_xy`, :func:`swap_xy`, :func:`infer_item_schema`;
* reading raw values: :func:`coordinates`, :func:`coordinate`, :func:`is_flat`,
  :func:`make_parser`, :func:`parse_collection`, :func:`parse_map`,
  :func:`from_numpy` (numpy arrays and scalars as plain values); raise
  :class:`AnnotationParseError` for a value of the wrong shape;
* matching and scoring: :func:`match_set` (Hungarian), :func:`match_sequence`,
  :func:`match_aligned` (order-preserving alignment), :class:`AlignedShapeFamily`
  (a family whose sequence reward versions are aligned), :func:`make_aligned_scorer`,
  :class:`Matched`, :func:`assign_pairs`, :func:`assign_groups`,
  :class:`AssignmentBudget`, :func:`make_scorer`, :func:`make_explainer`,
  :func:`soft_similarity`, :func:`half_life_diagnostic`;
* the records hooks exchange: :class:`AnnotationTypeSpec`, :class:`RewardIdSpec`,
  :class:`AnswerTypeSpec`, :class:`ScoringContext`, :class:`AnnotationScore`,
  :class:`AnnotationExplanation`, :class:`ExplainedItem`, :class:`MatchedPair`,
  :class:`NativeFormat`; :func:`schema_problems` and :func:`unsupported_keywords`
  (JSON Schema checks of declared value schemas);
  the drawables :class:`Box`, :class:`Point`, :class:`Polyline`,
  :class:`Polygon`, :class:`Circle`, :class:`Label`; and :data:`hookimpl` for
  a hand-written plugin;
* the test kit: :func:`assert_family_ok`, :func:`check_family`,
  :func:`hostile_values`, :class:`KitProblem`.

Only this module is the family-author API (``docs/plugins.md``); the modules
behind it are internal and may move.
"""

from trace_tasks.errors import AnnotationParseError, FamilyDefinitionError
from trace_tasks.family._alignment import AlignedShapeFamily, make_aligned_scorer, match_aligned
from trace_tasks.family._assignment import AssignmentBudget, assign_groups, assign_pairs
from trace_tasks.family._coordinates import coordinate, coordinates, is_flat
from trace_tasks.family._distance import LN2, half_life_diagnostic, hypot_grid, soft_similarity_grid
from trace_tasks.family._kit import CONTEXT, KitProblem, assert_family_ok, check_family, hostile_values, orphan_problems
from trace_tasks.family._matching import Matched, match_sequence, match_set
from trace_tasks.family._numbers import soft_similarity
from trace_tasks.family._parsing import make_parser, parse_collection, parse_map
from trace_tasks.family._primitives import Matrix, Primitive, pairwise, scale_xy, swap_xy
from trace_tasks.family._scoring import make_explainer, make_scorer
from trace_tasks.family._shapes import ShapeFamily, ShapeRewards, TypeRow, infer_item_schema
from trace_tasks.plugins import (
    DRAWABLES,
    FLAT_DRAWINGS,
    SHAPES,
    AnnotationExplanation,
    AnnotationScore,
    AnnotationTypeSpec,
    AnswerTypeSpec,
    Box,
    Circle,
    Drawable,
    ExplainedItem,
    ImageBlind,
    Label,
    MatchedPair,
    NativeFormat,
    Point,
    Polygon,
    Polyline,
    RewardIdSpec,
    ScoringContext,
    anchor,
    extent_points,
    flat_drawing,
    hookimpl,
    lay_out,
    schema_problems,
    unsupported_keywords,
)
from trace_tasks.reading import from_numpy

__all__ = [
    "CONTEXT",
    "DRAWABLES",
    "FLAT_DRAWINGS",
    "LN2",
    "SHAPES",
    "AlignedShapeFamily",
    "AnnotationExplanation",
    "AnnotationParseError",
    "AnnotationScore",
    "AnnotationTypeSpec",
    "AnswerTypeSpec",
    "AssignmentBudget",
    "Box",
    "Circle",
    "Drawable",
    "ExplainedItem",
    "FamilyDefinitionError",
    "ImageBlind",
    "KitProblem",
    "Label",
    "Matched",
    "MatchedPair",
    "Matrix",
    "NativeFormat",
    "Point",
    "Polygon",
    "Polyline",
    "Primitive",
    "RewardIdSpec",
    "ScoringContext",
    "ShapeFamily",
    "ShapeRewards",
    "TypeRow",
    "anchor",
    "assert_family_ok",
    "assign_groups",
    "assign_pairs",
    "check_family",
    "coordinate",
    "coordinates",
    "extent_points",
    "flat_drawing",
    "from_numpy",
    "half_life_diagnostic",
    "hookimpl",
    "hostile_values",
    "hypot_grid",
    "infer_item_schema",
    "is_flat",
    "lay_out",
    "make_aligned_scorer",
    "make_explainer",
    "make_parser",
    "make_scorer",
    "match_aligned",
    "match_sequence",
    "match_set",
    "orphan_problems",
    "pairwise",
    "parse_collection",
    "parse_map",
    "scale_xy",
    "schema_problems",
    "soft_similarity",
    "soft_similarity_grid",
    "swap_xy",
    "unsupported_keywords",
]
