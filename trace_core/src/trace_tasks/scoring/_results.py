"""The result dict: its keys in order (docs/contracts.md §7) and its composition from one run.

The keys are listed once here; trainer adapters log exactly :func:`result_keys`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trace_tasks.plugins import Registry, get_registry
from trace_tasks.reading import Extraction
from trace_tasks.scoring._options import (
    ANNOTATION_ONLY,
    ANSWER,
    GATED,
    MODEL_READINGS,
    OPTIONS,
    POLICIES,
    TOOL_CALLS,
    ScoringOptions,
)
from trace_tasks.scoring._plugin_calls import AnnotationResult

_native_columns: Callable[[list[Any], tuple[str, ...]], Any] | None
try:  # the native build's restatement of columns (docs/compiled.md); the pure build has no such module
    from trace_tasks.scoring._native import columns as _native_columns_found

    _native_columns = _native_columns_found
except ImportError:
    _native_columns = None

#: Per-response rewards, first in every result dict (docs/contracts.md §7).
REWARD_KEYS: tuple[str, ...] = (
    "overall",
    "format",
    "accuracy",
    "answer_reward",
    "annotation_reward",
    "task_reward_raw",
    "task_reward_effective",
    "task_reward_gated",
)
#: The options the response was scored with, echoed (constant for a run): the echo keys of the
#: options table's rows (:data:`~trace_tasks.scoring.OPTIONS`) that are not opt-in, in table order.
OPTION_KEYS: tuple[str, ...] = tuple(echo.key for row in OPTIONS if not row.opt_in for echo in row.echo if not echo.only)
#: The echoes present only for some values of their option (``Echo.only``; the ``annotation_only``
#: mode's ``trace_reward_mode_annotation_only``): ``(option name, echo)``, appended last when in force.
VALUE_ECHOES = tuple((row.name, echo) for row in OPTIONS for echo in row.echo if echo.only)
#: Per-response diagnostic flags, each exactly 0.0 or 1.0.
FLAG_KEYS: tuple[str, ...] = (
    "format_structure_ok",
    "format_json_ok",
    "format_schema_ok",
    "answer_parse_ok",
    "annotation_parse_ok",
    "json_found",
    "zero_reward",
)
#: The keys every result dict starts with, in order; the ``annotation_type_<name>``
#: indicators of the installed families follow, then the scored type's own
#: diagnostics. The one list of them in the library (:func:`result_keys`).
CORE_RESULT_KEYS: tuple[str, ...] = (*REWARD_KEYS, *OPTION_KEYS, *FLAG_KEYS, "trace_reward")


#: The indicators of the opt-in departures from the contract (docs/contracts.md §3.7), present
#: only when the options depart from it (an opt-in row of the options table not at its default,
#: such as ``trace_recovery`` other than ``lenient``): then every opt-in row's echo follows the
#: ``annotation_type_<name>`` one-hot.
OPT_IN_KEYS: tuple[str, ...] = tuple(echo.key for row in OPTIONS if row.opt_in and row.group == POLICIES for echo in row.echo)
#: The indicators of a declared prediction frame and of native reading (docs/contracts.md, "Coordinate
#: frames"), present only when one is in force (``prediction_frame`` other than ``pixel``, or
#: ``annotation_native``): then all of them follow the opt-in keys, the frame's one-hot first.
MODEL_READING_KEYS: tuple[str, ...] = tuple(
    echo.key for row in OPTIONS if row.opt_in and row.group == MODEL_READINGS for echo in row.echo
)
#: The indicator of a declared tool call (docs/contracts.md §3.9), present only when one is declared:
#: after the model reading keys.
TOOL_CALL_KEYS: tuple[str, ...] = tuple(
    echo.key for row in OPTIONS if row.opt_in and row.group == TOOL_CALLS for echo in row.echo
)
#: Reported after everything else when a prediction that did not parse has a model-native
#: shape its owner recognises (``trace_native_annotation``), or was read as the annotation
#: under ``annotation_native``: always 1.0 when present.
NATIVE_FORMAT_KEY = "annotation_native_format"


def result_keys(registry: Registry | None = None, opts: ScoringOptions | None = None) -> tuple[str, ...]:
    """The keys every result dict holds, in order: :data:`CORE_RESULT_KEYS`, then one
    ``annotation_type_<name>`` indicator per installed annotation type (official order first),
    then :data:`OPT_IN_KEYS` when ``opts`` depart from the contract (docs/contracts.md §3.7), then
    :data:`MODEL_READING_KEYS` when ``opts`` declare a prediction frame or native reading.

    Per-type diagnostics (``annotation_pred_size``...) come after these, only
    when an annotation was scored, and :data:`NATIVE_FORMAT_KEY` only when a
    prediction that did not parse has a model-native shape; trainer adapters
    log exactly these keys.
    """
    registry = registry or get_registry()
    keys = CORE_RESULT_KEYS + tuple(key for _, key in registry.type_indicator_keys)
    if opts is None:
        return keys
    if opts.departs:
        keys += OPT_IN_KEYS
    if opts.reads_model:
        keys += MODEL_READING_KEYS
    if opts.tool_call is not None:
        keys += TOOL_CALL_KEYS
    return keys + tuple(echo.key for name, echo in VALUE_ECHOES if getattr(opts, name) in echo.when)


_templates: dict[ScoringOptions, tuple[Registry, dict[str, float], dict[str, str]]] = {}


def _template(opts: ScoringOptions, registry: Registry) -> tuple[dict[str, float], dict[str, str]]:
    """The result dict of ``opts`` in docs/contracts.md §7 order with every per-response value at 0.

    Built once per options and registry, so a call copies it and sets a dozen
    values instead of building forty keys.
    """
    cached = _templates.get(opts)
    if cached is not None and cached[0] is registry:
        return cached[1], cached[2]
    template = dict.fromkeys(result_keys(registry, opts), 0.0)
    shown = {"": True, POLICIES: opts.departs, MODEL_READINGS: opts.reads_model, TOOL_CALLS: opts.tool_call is not None}
    for row in OPTIONS:  # the option echo, as the options table spells it; an opt-in group's only when in force
        if row.echo and (not row.opt_in or shown.get(row.group, False)):
            value = getattr(opts, row.name)
            for echo in row.echo:
                if not echo.only or value in echo.when:
                    template[echo.key] = echo.of(value)
    template["trace_reward"] = 1.0
    type_keys = dict(registry.type_indicator_keys)
    if len(_templates) > 256:  # a caller cycling through option values: keep memory bounded
        _templates.clear()
    _templates[opts] = (registry, template, type_keys)
    return template, type_keys


def compose_result(
    opts: ScoringOptions, registry: Registry, ext: Extraction, answer_reward: float, answer_parse_ok: float, ann: AnnotationResult
) -> dict[str, float]:
    """The flat result dict (docs/contracts.md §7) of one scored response."""
    fw = opts.format_weight
    mode = opts.trace_reward_mode
    if mode == ANSWER:
        task = answer_reward
    elif mode == ANNOTATION_ONLY:  # nothing to gate on: the formula and the weights do not apply
        task = ann.reward
    elif opts.trace_annotation_reward_formula == GATED:
        task = answer_reward * (opts.answer_weight + opts.annotation_weight * ann.reward)
    else:
        task = opts.answer_weight * answer_reward + opts.annotation_weight * ann.reward
    fmt = ext.format
    format_score = 1.0 if fmt.schema_ok else 0.0

    template, type_keys = _template(opts, registry)
    result = template.copy()  # every key in its place; only what this response changes is set
    result["overall"] = (1.0 - fw) * task + fw * format_score
    result["format"] = format_score
    result["accuracy"] = result["answer_reward"] = answer_reward
    result["annotation_reward"] = ann.reward
    result["task_reward_raw"] = result["task_reward_effective"] = result["task_reward_gated"] = task
    result["format_structure_ok"] = 1.0 if fmt.structure_ok else 0.0
    result["format_json_ok"] = 1.0 if fmt.json_ok else 0.0
    result["format_schema_ok"] = format_score
    result["answer_parse_ok"] = answer_parse_ok
    result["annotation_parse_ok"] = ann.parse_ok
    result["json_found"] = 1.0 if ext.payload is not None else 0.0
    result["zero_reward"] = 1.0 if task == 0.0 else 0.0
    if ann.type_name is not None:
        result[type_keys[ann.type_name]] = 1.0
    if ann.diagnostics:
        result.update(ann.diagnostics)
    if ann.native:  # a failed parse (no diagnostics), or a native value read under annotation_native
        result[NATIVE_FORMAT_KEY] = 1.0
    return result


def columns(results: Sequence[Mapping[str, Any]], keys: tuple[str, ...]) -> tuple[list[float], dict[str, list[float]]]:
    """Results stacked as a trainer logs them: each result's ``overall`` clipped to [0, 1], and each key's values.

    ``(overall, logs)``: ``logs`` maps each of ``keys`` to its values over ``results`` in order, as floats, 0.0
    where a result lacks the key (an empty dict stands for a refused row). OpenRLHF's reward function returns
    them as ``rewards`` and ``extra_logs``. The native build restates the loop in C (the same values, bit for
    bit: tests/core/test_native_path.py): a request's loop over its keys is most of what the OpenRLHF request shape
    adds to scoring (benchmarks/bench_server.py).
    """
    if _native_columns is not None and type(results) is list:
        found = _native_columns(results, keys if type(keys) is tuple else tuple(keys))
        if found is not None:
            return found  # type: ignore[no-any-return]
    logs: dict[str, list[float]] = {key: [] for key in keys}
    overall: list[float] = []
    for result in results:
        for key in keys:
            logs[key].append(float(result.get(key, 0.0)))
        overall.append(min(max(float(result.get("overall", 0.0)), 0.0), 1.0))
    return overall, logs
