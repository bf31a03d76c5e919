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

from trace_tasks.reading import FINAL_ONLY, LENIENT, OUTSIDE_THINK
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
from trace_tasks.scoring._metrics import ANSWER_ACCURACY, IOU_THRESHOLDS, SIMILARITY_THRESHOLDS, SIZE_MAE, row_metrics, shape_of
from trace_tasks.scoring._options import (
    ADDITIVE,
    ANSWER,
    ANSWER_AND_ANNOTATION,
    FORMULA_ALIASES,
    GATED,
    MAX_POINT_HALF_LIFE_PX,
    MODE_ALIASES,
    OPTION_DEFAULTS,
    RECOVERY_MODES,
    ScoringOptions,
    options_from,
    resolve_answer_tag,
    resolve_formula,
    resolve_mode,
    resolve_options,
    resolve_recovery,
)
from trace_tasks.scoring._pipeline import NORMALISED_READINGS, Target, Trail, prepare_target, required_keys, run
from trace_tasks.scoring._plugin_calls import (
    UNPARSED,
    AnnotationResult,
    PluginBug,
    checked_score,
    is_diagnostic_key,
    parse_value,
    report_plugin_bug,
)
from trace_tasks.scoring._results import (
    CORE_RESULT_KEYS,
    FLAG_KEYS,
    NATIVE_FORMAT_KEY,
    OPT_IN_KEYS,
    OPTION_KEYS,
    REWARD_KEYS,
    compose_result,
    result_keys,
)
from trace_tasks.scoring._schema import format_instructions, response_json_schema

__all__ = [
    "ADDITIVE",
    "ANSWER",
    "ANSWER_ACCURACY",
    "ANSWER_AND_ANNOTATION",
    "CORE_RESULT_KEYS",
    "DEFAULT_HALF_LIFE_PX",
    "FINAL_ONLY",
    "FLAG_KEYS",
    "FORMULA_ALIASES",
    "GATED",
    "HALF_LIFE_MAX_PX",
    "HALF_LIFE_MIN_PX",
    "HALF_LIFE_PER_MILLE",
    "HEIGHT_KEYS",
    "IOU_THRESHOLDS",
    "LENIENT",
    "MAX_POINT_HALF_LIFE_PX",
    "MODE_ALIASES",
    "NATIVE_FORMAT_KEY",
    "NESTED_KEYS",
    "NEVER_MATCHES",
    "NORMALISED_READINGS",
    "OPTION_DEFAULTS",
    "OPTION_KEYS",
    "OPT_IN_KEYS",
    "OUTSIDE_THINK",
    "RECOVERY_MODES",
    "REWARD_KEYS",
    "SIMILARITY_THRESHOLDS",
    "SIZE_MAE",
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
    "format_instructions",
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
    "resolve_answer_tag",
    "resolve_formula",
    "resolve_mode",
    "resolve_options",
    "resolve_recovery",
    "response_json_schema",
    "result_keys",
    "row_metrics",
    "run",
    "scoring_context",
    "shape_of",
    "size_from",
]
