"""Generic trace scoring: one response against an instance's typed ground truth.

``score_trace_response`` is the public entry point (docs/contracts.md §2).
It is the lenient, low-level scorer: it validates the options (cached),
prepares the raw ground truth for this call (ground truth it cannot use gives
zero rewards and diagnostic flags, never an exception) and runs the one
scoring pipeline, :func:`trace_tasks.scoring.run`. Data-facing tools validate
instances first and run the same pipeline on a target prepared once
(:func:`trace_tasks.compile_instance`), so both give the same dict.
"""

from __future__ import annotations

from typing import Any

from trace_tasks.errors import ResponseTypeError
from trace_tasks.plugins import get_registry
from trace_tasks.reading import ANSWER_AND_ANNOTATION_KEYS, extract, think_text
from trace_tasks.scoring import (
    CORE_RESULT_KEYS,
    document_options,
    prepare_target,
    required_keys,
    resolve_answer_tag,
    resolve_mode,
    resolve_options,
    resolve_recovery,
    result_keys,
    run,
)

__all__ = [
    "CORE_RESULT_KEYS",
    "check_response",
    "evaluate_trace_response_format",
    "extract_trace_prediction",
    "result_keys",
    "score_trace_response",
]


def check_response(response: Any) -> str:
    """``response`` itself when it is a ``str``; else :class:`~trace_tasks.errors.ResponseTypeError` (a ``TypeError``)."""
    if not isinstance(response, str):
        raise ResponseTypeError(f"response must be a str (the model's decoded text), got {type(response).__name__}")
    return response


@document_options
def score_trace_response(
    *,
    response: str,
    answer_gt: Any,
    annotation_gt: Any,
    reward_contract: Any,
    trace_reward_mode: Any = "answer_and_annotation",
    answer_weight: float = 0.5,
    annotation_weight: float = 0.5,
    format_weight: float = 0.0,
    trace_annotation_reward_formula: Any = "gated",
    point_half_life_px: Any = None,
    answer_relative_tolerance: Any = 0.05,
    image_size: Any = None,
    image_sizes: Any = None,
    metadata: Any = None,
    extra_info: Any = None,
    trace_recovery: Any = "lenient",
    format_accept_answer_tag: Any = False,
) -> dict[str, float]:
    """Score one model response; returns a flat ``dict[str, float]`` (docs/contracts.md §7).

    The scorer options are the fields of :class:`~trace_tasks.ScoringOptions`, each
    a keyword here with the table's default (listed below, from the table);
    ``trace_recovery`` and ``format_accept_answer_tag`` are opt-in departures from
    the response contract (docs/contracts.md §3.7): the defaults are the contract.
    To score with a :class:`~trace_tasks.ScoringOptions` record, pass
    ``**options.keywords()`` (or use :meth:`~trace_tasks.CompiledInstance.score`,
    which takes the record itself). ``image_size``, ``image_sizes``,
    ``metadata`` and ``extra_info`` are the size sources, searched in that order.

    Raises only for caller mistakes, each a :class:`~trace_tasks.errors.TraceTasksError`:
    :class:`~trace_tasks.errors.OptionError` (also a ``ValueError``) for an
    invalid option, :class:`~trace_tasks.errors.ResponseTypeError` (also a
    ``TypeError``) for a non-string response, and
    :class:`~trace_tasks.errors.MissingFamilyError` when an official annotation
    type's family is not installed or is disabled (answer-and-annotation mode;
    the message names the package to install or the variable to change).
    """
    opts = resolve_options(  # positional, in the options table's order: one cache lookup
        format_weight,
        trace_reward_mode,
        trace_annotation_reward_formula,
        answer_weight,
        annotation_weight,
        point_half_life_px,
        answer_relative_tolerance,
        trace_recovery,
        format_accept_answer_tag,
    )
    text = check_response(response)
    registry = get_registry()
    sizes = (image_size, image_sizes, metadata, extra_info)
    target = prepare_target(answer_gt, annotation_gt, reward_contract, opts, registry, sizes)
    return run(text, opts, registry, target)


def evaluate_trace_response_format(
    response: str, *, trace_reward_mode: Any = "answer_and_annotation", format_accept_answer_tag: Any = False
) -> dict[str, Any]:
    """Format diagnostics of a response and the parsed final block.

    Returns ``format`` (1.0 or 0.0), ``structure_ok``, ``json_ok``, ``schema_ok``,
    ``think_text`` (the content of ``<think>...</think>``, if any),
    ``answer_block`` (the final block's text) and ``payload`` (its mapping).
    ``format_accept_answer_tag`` as in :func:`score_trace_response`.
    """
    text = check_response(response)
    keys = required_keys(resolve_mode(trace_reward_mode))
    fmt = extract(text, keys, answer_tag=resolve_answer_tag(format_accept_answer_tag)).format
    return {
        "format": fmt.format,
        "structure_ok": fmt.structure_ok,
        "json_ok": fmt.json_ok,
        "schema_ok": fmt.schema_ok,
        "think_text": think_text(text),
        "answer_block": fmt.answer_block,
        "payload": fmt.payload,
    }


def extract_trace_prediction(
    response: str, *, trace_recovery: Any = "lenient", format_accept_answer_tag: Any = False
) -> tuple[Any, Any, bool]:
    """``(answer, annotation, found)`` recovered from a response for scoring (options as in :func:`score_trace_response`)."""
    text = check_response(response)
    recovery, answer_tag = resolve_recovery(trace_recovery), resolve_answer_tag(format_accept_answer_tag)
    payload = extract(text, ANSWER_AND_ANNOTATION_KEYS, recovery, answer_tag).payload
    if payload is None:
        return None, None, False
    return payload.get("answer"), payload.get("annotation"), True
