"""The plugin system: the hook contract, the records hooks exchange, and the registry of what is installed.

* :mod:`trace_tasks.plugins.hookspecs`: the hook specifications (the plugin
  contract), grouped by phase: load time, per response, tools;
* the records plugins return and receive (``AnnotationTypeSpec``,
  ``ScoringContext``, ``AnnotationScore``, ``AnnotationExplanation``, the
  drawables...), re-exported for family authors by :mod:`trace_tasks.family`;
* the registry: entry points loaded once, checked, indexed into dicts
  (:func:`get_registry`), and the user's pins of the current reward ids.

The scoring pipeline and the tools come in through this door; a family author
imports from :mod:`trace_tasks.family` instead.
"""

from trace_tasks.plugins._answer_types import (
    ANSWER_RELAXED_ID,
    ANSWER_REWARD_CONTRACT_ID,
    ANSWER_VERSIONS,
    BUILTIN_ANSWER_TYPES,
)
from trace_tasks.plugins._drawables import (
    DRAWABLES,
    Box,
    Circle,
    Drawable,
    Label,
    Point,
    Polygon,
    Polyline,
    anchor,
    extent_points,
)
from trace_tasks.plugins._markers import PROJECT_NAME, hookimpl
from trace_tasks.plugins._records import (
    SHAPES,
    AnnotationExplanation,
    AnnotationScore,
    AnnotationTypeSpec,
    AnswerTypeSpec,
    ExplainedItem,
    ImageBlind,
    MatchedPair,
    NativeFormat,
    RewardIdSpec,
    ScoringContext,
    lay_out,
)
from trace_tasks.plugins._registry import (
    ALLOW_ENV,
    BLOCK_ENV,
    BUILTIN_PLUGIN_NAME,
    ENTRY_POINT_GROUP,
    OFFICIAL_TYPES,
    PINS_ENV,
    AnnotationTypeEntry,
    PluginInfo,
    Registry,
    RewardEntry,
    build_registry,
    get_registry,
    parse_pins,
    pin_reward_id,
    pinned_reward_ids,
    raise_for_unknown_type,
    register_plugin,
    reset_registry,
    unpin_reward_id,
    unregister_plugin,
)
from trace_tasks.plugins._schema import (
    JSON_SCHEMA_DIALECT,
    ROLE_KEY_SCHEMA,
    SUPPORTED_KEYWORDS,
    schema_problems,
    unsupported_keywords,
)

__all__ = [
    "ALLOW_ENV",
    "ANSWER_RELAXED_ID",
    "ANSWER_REWARD_CONTRACT_ID",
    "ANSWER_VERSIONS",
    "BLOCK_ENV",
    "BUILTIN_ANSWER_TYPES",
    "BUILTIN_PLUGIN_NAME",
    "DRAWABLES",
    "ENTRY_POINT_GROUP",
    "JSON_SCHEMA_DIALECT",
    "OFFICIAL_TYPES",
    "PINS_ENV",
    "PROJECT_NAME",
    "ROLE_KEY_SCHEMA",
    "SHAPES",
    "SUPPORTED_KEYWORDS",
    "AnnotationExplanation",
    "AnnotationScore",
    "AnnotationTypeEntry",
    "AnnotationTypeSpec",
    "AnswerTypeSpec",
    "Box",
    "Circle",
    "Drawable",
    "ExplainedItem",
    "ImageBlind",
    "Label",
    "MatchedPair",
    "NativeFormat",
    "PluginInfo",
    "Point",
    "Polygon",
    "Polyline",
    "Registry",
    "RewardEntry",
    "RewardIdSpec",
    "ScoringContext",
    "anchor",
    "build_registry",
    "extent_points",
    "get_registry",
    "hookimpl",
    "lay_out",
    "parse_pins",
    "pin_reward_id",
    "pinned_reward_ids",
    "raise_for_unknown_type",
    "register_plugin",
    "reset_registry",
    "schema_problems",
    "unpin_reward_id",
    "unregister_plugin",
    "unsupported_keywords",
]
