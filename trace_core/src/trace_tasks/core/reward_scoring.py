"""Generic trace scoring: one response against an instance's typed ground truth.

``score_trace_response`` is the public entry point (seed "Verifiers And
Rewards"). Per call it validates options (cached), extracts the final object
once, matches the answer exactly after typed normalization, gates and scores
the annotation through the owning family (one dict lookup), and composes the
flat result dict. It never raises on model output.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from trace_tasks._fast import is_mapping
from trace_tasks.answers import answers_match
from trace_tasks.distance import half_life_px
from trace_tasks.errors import MissingFamilyError
from trace_tasks.extraction import ANSWER_AND_ANNOTATION_KEYS, ANSWER_KEYS, Extraction, extract, think_text
from trace_tasks.image_size import find_image_size
from trace_tasks.limits import MAX_LITERAL_BUDGET
from trace_tasks.literals import literal_budget
from trace_tasks.options import ANSWER, GATED, ScoringOptions, resolve_mode, resolve_options
from trace_tasks.plugins import OFFICIAL_TYPES, Registry, get_registry
from trace_tasks.shapes import AnnotationParseError
from trace_tasks.specs import ScoringContext

__all__ = ["evaluate_trace_response_format", "extract_trace_prediction", "score_trace_response"]

log = logging.getLogger(__name__)


def _required_keys(mode: str) -> frozenset[str]:
    return ANSWER_KEYS if mode == ANSWER else ANSWER_AND_ANNOTATION_KEYS


def _check_response(response: Any) -> str:
    if not isinstance(response, str):
        raise TypeError(f"response must be a str (the model's decoded text), got {type(response).__name__}")
    return response


def evaluate_trace_response_format(response: str, *, trace_reward_mode: Any = "answer_and_annotation") -> dict[str, Any]:
    """Format diagnostics of a response and the parsed final block.

    Returns ``format`` (1.0 or 0.0), ``structure_ok``, ``json_ok``, ``schema_ok``,
    ``think_text`` (the content of ``<think>...</think>``, if any),
    ``answer_block`` (the final block's text) and ``payload`` (its mapping).
    """
    text = _check_response(response)
    fmt = extract(text, _required_keys(resolve_mode(trace_reward_mode))).format
    return {
        "format": fmt.format,
        "structure_ok": fmt.structure_ok,
        "json_ok": fmt.json_ok,
        "schema_ok": fmt.schema_ok,
        "think_text": think_text(text),
        "answer_block": fmt.answer_block,
        "payload": fmt.payload,
    }


def extract_trace_prediction(response: str) -> tuple[Any, Any, bool]:
    """``(answer, annotation, found)`` recovered from a response for scoring."""
    payload = extract(_check_response(response), ANSWER_AND_ANNOTATION_KEYS).payload
    if payload is None:
        return None, None, False
    return payload.get("answer"), payload.get("annotation"), True


def _score_answer(ext: Extraction, response: str, answer_gt: Any, registry: Registry) -> tuple[float, float]:
    """(answer_reward, answer_parse_ok)."""
    if not is_mapping(answer_gt) or "value" not in answer_gt:
        return 0.0, 0.0
    answer_type = answer_gt.get("type")
    spec = registry.answer_types.get(answer_type.strip()) if isinstance(answer_type, str) else None
    reads_json = spec.reads_json_strings if spec is not None else True
    matched = answers_match(ext.answer(response), answer_gt["value"], reads_json_strings=reads_json)
    return (1.0 if matched else 0.0), 1.0


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


_RESERVED_KEYS = frozenset({"annotation_reward", "annotation_parse_ok"})


def _is_diagnostic_key(key: object) -> bool:
    # A plugin reports annotation_* diagnostics only: it must never overwrite a
    # core key (a plugin returning {"overall": 0.99} would otherwise set the reward).
    return (
        isinstance(key, str)
        and key.startswith("annotation_")
        and key not in _RESERVED_KEYS
        and not key.startswith("annotation_type_")
    )


class _Annotation:
    __slots__ = ("reward", "parse_ok", "type_name", "diagnostics")

    def __init__(self, type_name: str | None = None) -> None:
        self.reward = 0.0
        self.parse_ok = 0.0
        self.type_name = type_name
        self.diagnostics: Mapping[str, float] = {}


def _score_annotation(
    prediction: Any,
    annotation_gt: Any,
    reward_contract: Any,
    opts: ScoringOptions,
    registry: Registry,
    size_sources: tuple[Any, ...],
    literal_left: list[int],
) -> _Annotation:
    if not is_mapping(annotation_gt) or not isinstance(annotation_gt.get("type"), str):
        return _Annotation()
    name = annotation_gt["type"].strip()
    entry = registry.annotation_types.get(name)
    if entry is None:
        if name in OFFICIAL_TYPES and opts.mode != ANSWER:
            raise MissingFamilyError(name, OFFICIAL_TYPES[name])
        return _Annotation()
    result = _Annotation(name)
    side = reward_contract.get("annotation") if is_mapping(reward_contract) else None
    if not is_mapping(side):
        return result
    declared = side.get("type")
    if declared is not None and (not isinstance(declared, str) or declared.strip() != name):
        return result
    if side.get("id") != entry.current_reward_id or prediction is None or "value" not in annotation_gt:
        return result
    reward_entry = registry.reward_ids[entry.current_reward_id]
    try:
        target = entry.parse(annotation_type=name, value=annotation_gt["value"])
        with literal_budget(literal_left):  # model-written strings share the response's budget
            parsed = entry.parse(annotation_type=name, value=prediction)
    except Exception:  # AnnotationParseError, or anything odd a hostile value provokes
        return result
    size = find_image_size(*size_sources)
    context = ScoringContext(half_life_px(size, opts.point_half_life_px), size)
    try:
        score = reward_entry.score(reward_id=reward_entry.reward_id, prediction=parsed, target=target, context=context)
    except AnnotationParseError:  # a limit hit while scoring (too large an assignment): the model's doing
        return result
    except Exception:
        log.exception("trace_tasks: plugin %r failed to score %r; counted as a parse failure", entry.plugin, name)
        return result
    reward = _finite(score.reward)
    result.reward = min(max(reward, 0.0), 1.0)
    result.parse_ok = 1.0
    result.diagnostics = {k: _finite(v) for k, v in score.diagnostics.items() if _is_diagnostic_key(k)}
    return result


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
    image_size: Any = None,
    image_sizes: Any = None,
    metadata: Any = None,
    extra_info: Any = None,
) -> dict[str, float]:
    """Score one model response; returns a flat ``dict[str, float]`` (SPEC.md "The result dict").

    Raises only for caller mistakes: ``ValueError`` for invalid options,
    ``TypeError`` for a non-string response, and
    :class:`~trace_tasks.errors.MissingFamilyError` when an official annotation
    type's family is not installed (answer-and-annotation mode).
    """
    opts = resolve_options(
        trace_reward_mode, answer_weight, annotation_weight, format_weight, trace_annotation_reward_formula, point_half_life_px
    )
    text = _check_response(response)
    registry = get_registry()
    # One literal-reader budget for everything the model wrote (extraction, annotation strings).
    literal_left = [MAX_LITERAL_BUDGET]
    with literal_budget(literal_left):
        ext = extract(text, _required_keys(opts.mode))
    answer_reward, answer_parse_ok = _score_answer(ext, text, answer_gt, registry)
    prediction = ext.payload.get("annotation") if ext.payload is not None else None
    ann = _score_annotation(
        prediction,
        annotation_gt,
        reward_contract,
        opts,
        registry,
        (image_size, image_sizes, metadata, extra_info),
        literal_left,
    )

    aw, nw, fw = opts.answer_weight, opts.annotation_weight, opts.format_weight
    answer_mode = opts.mode == ANSWER
    gated = opts.formula == GATED
    if answer_mode:
        task = answer_reward
    elif gated:
        task = answer_reward * (aw + nw * ann.reward)
    else:
        task = aw * answer_reward + nw * ann.reward
    fmt = ext.format
    format_score = fmt.format
    overall = (1.0 - fw) * task + fw * format_score

    result = {
        "overall": overall,
        "format": format_score,
        "accuracy": answer_reward,
        "answer_reward": answer_reward,
        "annotation_reward": ann.reward,
        "task_reward_raw": task,
        "task_reward_effective": task,
        "task_reward_gated": task,
        "format_weight": fw,
        "trace_reward_mode_answer": 1.0 if answer_mode else 0.0,
        "trace_reward_mode_answer_only": 1.0 if answer_mode else 0.0,
        "trace_reward_mode_answer_and_annotation": 0.0 if answer_mode else 1.0,
        "trace_answer_scoring_exact_json": 1.0,
        "trace_annotation_reward_formula_gated": 1.0 if gated else 0.0,
        "trace_annotation_reward_formula_additive": 0.0 if gated else 1.0,
        "trace_answer_weight": aw,
        "trace_annotation_weight": nw,
        "format_structure_ok": 1.0 if fmt.structure_ok else 0.0,
        "format_json_ok": 1.0 if fmt.json_ok else 0.0,
        "format_schema_ok": 1.0 if fmt.schema_ok else 0.0,
        "answer_parse_ok": answer_parse_ok,
        "annotation_parse_ok": ann.parse_ok,
        "json_found": 1.0 if ext.found else 0.0,
        "zero_reward": 1.0 if task == 0.0 else 0.0,
        "trace_reward": 1.0,
    }
    for type_name, key in registry.type_indicator_keys:
        result[key] = 1.0 if type_name == ann.type_name else 0.0
    result.update(ann.diagnostics)
    return result
