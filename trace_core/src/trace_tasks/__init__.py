"""trace_tasks: trustworthy rewards for RLVR on visual tasks.

>>> from trace_tasks import score_trace_response

Families of annotation types (boxes, points, segments, or your own) are plugins
found through the ``trace_tasks`` entry-point group; see ``docs/plugins.md``.
"""

from __future__ import annotations

import importlib.metadata

from trace_tasks import _moved
from trace_tasks._build import BuildKind, build_kind
from trace_tasks.core.reward_contracts import (
    ANSWER_REWARD_CONTRACT_ID,
    REWARD_CONTRACT_VERSION,
    RewardContract,
    resolve_annotation_reward_contract_id,
    resolve_reward_contract,
    validate_reward_contract_payload,
)
from trace_tasks.core.reward_scoring import (
    CORE_RESULT_KEYS,
    evaluate_trace_response_format,
    extract_trace_prediction,
    result_keys,
    score_trace_response,
)
from trace_tasks.data import (
    WARNING_RULES,
    CompiledInstance,
    DatasetLint,
    DataWarning,
    InstanceCache,
    compile_instance,
    dataset_warnings,
    instance_problems,
    instance_warnings,
    score_instance,
    score_trace_batch,
)
from trace_tasks.errors import (
    AnnotationParseError,
    ContractError,
    FamilyDefinitionError,
    InstanceError,
    MissingFamilyError,
    OptionError,
    PluginConflictError,
    PluginError,
    PluginLoadError,
    PluginValidationError,
    Problem,
    RecordError,
    ResponseTypeError,
    RewardPinError,
    TraceTasksError,
    UnknownRewardIdError,
    UnknownTypeError,
)
from trace_tasks.plugins import (
    AnnotationExplanation,
    AnnotationScore,
    AnnotationTypeSpec,
    AnswerTypeSpec,
    ExplainedItem,
    MatchedPair,
    NativeFormat,
    RewardIdSpec,
    ScoringContext,
    get_registry,
    hookimpl,
    pin_reward_id,
    pinned_reward_ids,
    unpin_reward_id,
)
from trace_tasks.scoring import ScoringOptions, format_instructions, response_json_schema

_moved.install()

try:
    __version__ = importlib.metadata.version("trace-core")
except importlib.metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

# "pure" or "native" (the optional native build, docs/compiled.md). Computed after the imports
# above, which load the scoring pipeline: it imports the native module in a native build.
__build__: BuildKind = build_kind()

__all__ = [
    "ANSWER_REWARD_CONTRACT_ID",
    "CORE_RESULT_KEYS",
    "REWARD_CONTRACT_VERSION",
    "WARNING_RULES",
    "AnnotationExplanation",
    "AnnotationParseError",
    "AnnotationScore",
    "AnnotationTypeSpec",
    "AnswerTypeSpec",
    "CompiledInstance",
    "ContractError",
    "DataWarning",
    "DatasetLint",
    "ExplainedItem",
    "FamilyDefinitionError",
    "InstanceCache",
    "InstanceError",
    "MatchedPair",
    "MissingFamilyError",
    "NativeFormat",
    "OptionError",
    "PluginConflictError",
    "PluginError",
    "PluginLoadError",
    "PluginValidationError",
    "Problem",
    "RecordError",
    "ResponseTypeError",
    "RewardContract",
    "RewardIdSpec",
    "RewardPinError",
    "ScoringContext",
    "ScoringOptions",
    "TraceTasksError",
    "UnknownRewardIdError",
    "UnknownTypeError",
    "compile_instance",
    "dataset_warnings",
    "evaluate_trace_response_format",
    "extract_trace_prediction",
    "format_instructions",
    "get_registry",
    "hookimpl",
    "instance_problems",
    "instance_warnings",
    "pin_reward_id",
    "pinned_reward_ids",
    "resolve_annotation_reward_contract_id",
    "resolve_reward_contract",
    "response_json_schema",
    "result_keys",
    "score_instance",
    "score_trace_batch",
    "score_trace_response",
    "unpin_reward_id",
    "validate_reward_contract_payload",
]
