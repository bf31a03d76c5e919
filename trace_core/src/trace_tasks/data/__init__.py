"""Data tools: instance records, validation, compiled instances, and batches.

Everything that reads instances from data goes through here: the typed
records and their one cattrs converter, :func:`instance_problems` (every
problem of an instance, once), :func:`instance_warnings` and
:class:`DatasetLint` (the authoring rules a valid instance, or a dataset,
breaks: warnings by rule id), :func:`compile_instance` (a validated instance
whose target the scoring pipeline prepared once; :func:`from_handover` rebuilds
one in another process from its ``handover()``; :func:`quick_compile`, the
native build's one call for the reward server's common label), :class:`InstanceCache`,
:func:`score_instance` (one response to one instance record) and
:func:`score_trace_batch`. The CLI and the integrations come in through this door.
"""

from trace_tasks.data._batch import (
    INSTANCE_FIELDS,
    MIN_ITEMS_PER_WORKER,
    RECORD_FIELDS,
    SCORE_KEYWORDS,
    BatchResult,
    score_instance,
    score_keywords,
    score_trace_batch,
    shutdown_batch_pools,
    watch_parent,
)
from trace_tasks.data._cache import InstanceCache, entry_cost
from trace_tasks.data._compiled import CompiledInstance, Handover, compile_instance, from_handover, mode_problem
from trace_tasks.data._lint import (
    WARNING_RULES,
    DatasetLint,
    DataWarning,
    InstanceReport,
    dataset_warnings,
    instance_report,
    instance_warnings,
)
from trace_tasks.data._quick import quick_compile
from trace_tasks.data._records import (
    AnnotationGT,
    AnswerGT,
    TraceInstance,
    TrainInstance,
    build_instance,
    converter,
    format_exception,
    instance_from_dict,
    instance_to_dict,
    iter_jsonl,
    open_text,
)
from trace_tasks.data._validation import instance_problems
from trace_tasks.errors import InstanceError, Problem

__all__ = [
    "INSTANCE_FIELDS",
    "MIN_ITEMS_PER_WORKER",
    "RECORD_FIELDS",
    "SCORE_KEYWORDS",
    "WARNING_RULES",
    "AnnotationGT",
    "AnswerGT",
    "BatchResult",
    "CompiledInstance",
    "DataWarning",
    "DatasetLint",
    "Handover",
    "InstanceCache",
    "InstanceError",
    "InstanceReport",
    "Problem",
    "TraceInstance",
    "TrainInstance",
    "build_instance",
    "compile_instance",
    "converter",
    "dataset_warnings",
    "entry_cost",
    "format_exception",
    "from_handover",
    "instance_from_dict",
    "instance_problems",
    "instance_report",
    "instance_to_dict",
    "instance_warnings",
    "iter_jsonl",
    "mode_problem",
    "open_text",
    "quick_compile",
    "score_instance",
    "score_keywords",
    "score_trace_batch",
    "shutdown_batch_pools",
    "watch_parent",
]
