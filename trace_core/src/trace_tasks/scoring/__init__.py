"""Scoring one response: the one pipeline and everything it composes.

:func:`run` is the only orchestration of the scoring steps (extraction,
answer, annotation, composition) in the library; :func:`prepare_target`
prepares raw ground truth per call (the lenient scorer), and a compiled
instance prepares its :class:`Target` once. Beside it: the scorer options,
the exact answer matcher, the image size and point half-life policy, the
checks on what score hooks return, and the result dict's keys.

``score_trace_response`` (:mod:`trace_tasks.core.reward_scoring`), the data
tools, the CLI and the integrations come in through this door.
"""

from trace_tasks.scoring._answers import (
    NEVER_MATCHES,
    answer_target,
    canonical,
    canonical_text,
    matches_answer_target,
    normalized_key,
    read_string_literal,
)
from trace_tasks.scoring._context import (
    DEFAULT_HALF_LIFE_PX,
    HALF_LIFE_MAX_PX,
    HALF_LIFE_MIN_PX,
    HALF_LIFE_PER_MILLE,
    Size,
    half_life_px,
    scoring_context,
)
from trace_tasks.scoring._image_size import HEIGHT_KEYS, NESTED_KEYS, WIDTH_KEYS, find_image_size, size_from
from trace_tasks.scoring._options import (
    ADDITIVE,
    ANSWER,
    ANSWER_AND_ANNOTATION,
    FORMULA_ALIASES,
    GATED,
    MAX_POINT_HALF_LIFE_PX,
    MODE_ALIASES,
    OPTION_DEFAULTS,
    ScoringOptions,
    options_from,
    resolve_formula,
    resolve_mode,
    resolve_options,
)
from trace_tasks.scoring._pipeline import Target, Trail, prepare_target, required_keys, run
from trace_tasks.scoring._plugin_calls import (
    UNPARSED,
    AnnotationResult,
    PluginBug,
    checked_score,
    is_diagnostic_key,
    parse_value,
    report_plugin_bug,
)
from trace_tasks.scoring._results import CORE_RESULT_KEYS, FLAG_KEYS, OPTION_KEYS, REWARD_KEYS, compose_result, result_keys

__all__ = [
    "ADDITIVE",
    "ANSWER",
    "ANSWER_AND_ANNOTATION",
    "CORE_RESULT_KEYS",
    "DEFAULT_HALF_LIFE_PX",
    "FLAG_KEYS",
    "FORMULA_ALIASES",
    "GATED",
    "HALF_LIFE_MAX_PX",
    "HALF_LIFE_MIN_PX",
    "HALF_LIFE_PER_MILLE",
    "HEIGHT_KEYS",
    "MAX_POINT_HALF_LIFE_PX",
    "MODE_ALIASES",
    "NESTED_KEYS",
    "NEVER_MATCHES",
    "OPTION_DEFAULTS",
    "OPTION_KEYS",
    "REWARD_KEYS",
    "UNPARSED",
    "WIDTH_KEYS",
    "AnnotationResult",
    "PluginBug",
    "ScoringOptions",
    "Size",
    "Target",
    "Trail",
    "answer_target",
    "canonical",
    "canonical_text",
    "checked_score",
    "compose_result",
    "find_image_size",
    "half_life_px",
    "is_diagnostic_key",
    "matches_answer_target",
    "normalized_key",
    "options_from",
    "parse_value",
    "prepare_target",
    "read_string_literal",
    "report_plugin_bug",
    "required_keys",
    "resolve_formula",
    "resolve_mode",
    "resolve_options",
    "result_keys",
    "run",
    "scoring_context",
    "size_from",
]
