"""Generic trace scoring: one response against an instance's typed ground truth.

``score_trace_response`` is the public entry point (docs/contracts.md
§2). Per call it validates options (cached), extracts the final object
once, matches the answer exactly after typed normalization, gates and scores
the annotation through the owning family (one dict lookup), and composes the
flat result dict. It never raises on model output.

It is the lenient, low-level scorer: ground truth it cannot use gives zero
rewards and diagnostic flags, never an exception. Data-facing tools validate
instances first and score compiled ones (:mod:`trace_tasks.instances`); both
paths share the pieces below, so a compiled instance scores exactly as this
function does:

* :func:`extract_response`: the extraction of one response, under the
  response's literal-reader budget;
* :func:`parse_prediction` and :func:`score_parsed`: a predicted annotation
  against a target the owner already parsed (with the plugin-bug handling);
* :func:`compose_result`: the flat result dict.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

from trace_tasks.answers import answers_match
from trace_tasks.distance import half_life_px
from trace_tasks.errors import AnnotationParseError, MissingFamilyError
from trace_tasks.extraction import ANSWER_AND_ANNOTATION_KEYS, ANSWER_KEYS, Extraction, extract, think_text
from trace_tasks.image_size import find_image_size
from trace_tasks.limits import MAX_LITERAL_BUDGET, MAX_TARGET_LITERAL_BUDGET
from trace_tasks.literals import literal_budget
from trace_tasks.numpy_values import from_numpy, is_mapping
from trace_tasks.options import ANSWER, GATED, ScoringOptions, resolve_mode, resolve_options
from trace_tasks.plugins import OFFICIAL_TYPES, Registry, RewardEntry, get_registry
from trace_tasks.specs import AnnotationScore, ScoringContext

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


_diagnostic_key_ok: dict[object, bool] = {}
_reported: set[tuple[str, str]] = set()


class PluginBug(Exception):
    """A score hook broke the contract of ``trace_score_annotation``; ``kind`` names how."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def report_plugin_bug(plugin: str, reward_id: str, kind: str, detail: str, exc_info: Any = None) -> None:
    """Log a plugin's broken result at WARNING, once per plugin and kind (a run scores millions)."""
    if (plugin, kind) in _reported:
        return
    _reported.add((plugin, kind))
    log.warning(
        "trace_tasks: plugin %r scoring %r: %s; the response counts as an annotation failure "
        "(logged once per plugin and kind of problem)",
        plugin, reward_id, detail, exc_info=exc_info,
    )  # fmt: skip


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (booleans and non-numbers are not numbers here)."""
    if type(value) is float:
        return value if value - value == 0.0 else None  # NaN and infinities fail
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = from_numpy(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


#: Diagnostic key sets seen, by their tuple of keys: whether every key is the plugin's own.
_key_sets_ok: dict[tuple[Any, ...], bool] = {}
_FLOAT = frozenset((float,))


def _plain_diagnostics(raw: dict[Any, Any]) -> bool:
    """Whether ``raw`` is valid as it is: its own ``annotation_*`` keys, finite floats only.

    The common case, checked in a few C-speed passes (a family reports the same
    keys on every call); anything else goes through the per-key checks.
    """
    keys = tuple(raw)
    ok = _key_sets_ok.get(keys)
    if ok is None:
        ok = all(isinstance(key, str) and _is_diagnostic_key(key) for key in keys)
        if len(_key_sets_ok) >= 1024:  # a plugin inventing keys: keep memory bounded
            _key_sets_ok.clear()
        _key_sets_ok[keys] = ok
    if not ok or not _FLOAT.issuperset(map(type, raw.values())):
        return False
    total = sum(raw.values())
    return total - total == 0.0  # every value finite (a sum that overflows takes the slow path)


def checked_score(score: Any, plugin: str, reward_id: str) -> tuple[float, dict[str, float]]:
    """The reward and diagnostics of a score hook's result, or :class:`PluginBug` when it breaks the contract.

    A valid result is an :class:`AnnotationScore` holding a finite reward in
    [0, 1] and a mapping of finite numbers. Keys that would overwrite a core
    key are dropped (and reported), not fatal.
    """
    if not isinstance(score, AnnotationScore):
        raise PluginBug("result", f"returned {type(score).__name__} instead of an AnnotationScore")
    reward = _number(score.reward)
    if reward is None:
        raise PluginBug("reward", f"reward {score.reward!r} is not a finite number")
    if not 0.0 <= reward <= 1.0:
        raise PluginBug("range", f"reward {reward!r} is outside [0, 1]")
    raw = score.diagnostics
    if type(raw) is dict and _plain_diagnostics(raw):
        return reward, dict(raw)
    if not is_mapping(raw):
        raise PluginBug("diagnostics", f"diagnostics are a {type(raw).__name__}, not a mapping")
    out = {}
    for key, value in raw.items():
        ok = _diagnostic_key_ok.get(key) if isinstance(key, str) else False
        if ok is None:
            ok = _diagnostic_key_ok[key] = _is_diagnostic_key(key)
        if not ok:
            report_plugin_bug(plugin, reward_id, "key", f"diagnostic key {key!r} is not an annotation_* key of its own; dropped")
            continue
        number = _number(value)
        if number is None:
            raise PluginBug("diagnostic value", f"diagnostic {key!r} is {value!r}, not a finite number")
        out[key] = number
    return reward, out


class AnnotationResult:
    """The annotation part of one scored response (reward, parse flag, type one-hot, diagnostics)."""

    __slots__ = ("diagnostics", "parse_ok", "reward", "type_name")

    def __init__(self, type_name: str | None = None) -> None:
        self.reward = 0.0
        self.parse_ok = 0.0
        self.type_name = type_name
        self.diagnostics: Mapping[str, float] = {}


#: What :func:`parse_prediction` returns for a prediction that does not parse.
UNPARSED: Any = object()


def parse_prediction(parse: Callable[..., Any], type_name: str, prediction: Any, literal_left: list[int]) -> Any:
    """The owner's parse of a predicted annotation, or :data:`UNPARSED`.

    Model-written strings share the response's literal-reader budget.
    """
    try:
        with literal_budget(literal_left):
            return parse(annotation_type=type_name, value=prediction)
    except Exception:  # AnnotationParseError, or anything odd a hostile value provokes
        return UNPARSED


def score_parsed(
    result: AnnotationResult, reward_entry: RewardEntry, parsed: Any, target: Any, context: ScoringContext
) -> AnnotationResult:
    """Score a parsed prediction against a parsed target into ``result``; plugin bugs fail the response."""
    plugin, reward_id = reward_entry.plugin, reward_entry.reward_id
    try:
        score = reward_entry.score(reward_id=reward_id, prediction=parsed, target=target, context=context)
        result.reward, result.diagnostics = checked_score(score, plugin, reward_id)
    except AnnotationParseError:  # a limit hit while scoring (too large an assignment): the model's doing
        return result
    except PluginBug as bug:
        report_plugin_bug(plugin, reward_id, bug.kind, str(bug).partition(": ")[2])
        return result
    except Exception as exc:  # a crash in the plugin: its bug, never the caller's exception
        report_plugin_bug(plugin, reward_id, "exception", f"raised {type(exc).__name__}: {exc}", exc_info=True)
        return result
    result.parse_ok = 1.0
    return result


_contexts: dict[tuple[tuple[float, float] | None, float | None], ScoringContext] = {}


def scoring_context(size: tuple[float, float] | None, explicit_half_life: float | None) -> ScoringContext:
    """The :class:`ScoringContext` for an image size and the caller's half-life option (frozen, so shared).

    Built once per distinct pair: a run sees a handful of image sizes, and
    building the record costs more than finding it.
    """
    key = (size, explicit_half_life)
    context = _contexts.get(key)
    if context is None:
        context = ScoringContext(half_life_px(size, explicit_half_life), size)
        if len(_contexts) >= 1024:  # many distinct sizes: keep memory bounded
            _contexts.clear()
        _contexts[key] = context
    return context


def _score_annotation(
    prediction: Any,
    annotation_gt: Any,
    reward_contract: Any,
    opts: ScoringOptions,
    registry: Registry,
    size_sources: tuple[Any, ...],
    literal_left: list[int],
) -> AnnotationResult:
    if not is_mapping(annotation_gt) or not isinstance(annotation_gt.get("type"), str):
        return AnnotationResult()
    name = annotation_gt["type"].strip()
    entry = registry.annotation_types.get(name)
    if entry is None:
        if name in OFFICIAL_TYPES and opts.mode != ANSWER:
            raise MissingFamilyError(name, OFFICIAL_TYPES[name])
        return AnnotationResult()
    result = AnnotationResult(name)
    side = reward_contract.get("annotation") if is_mapping(reward_contract) else None
    if not is_mapping(side):
        return result
    declared = side.get("type")
    if declared is not None and (not isinstance(declared, str) or declared.strip() != name):
        return result
    if side.get("id") != entry.current_reward_id or prediction is None or "value" not in annotation_gt:
        return result
    parse = entry.parse
    try:
        # The caller's literal strings are parsed on every call here: bounded like the model's.
        with literal_budget([MAX_TARGET_LITERAL_BUDGET]):
            target = parse(annotation_type=name, value=annotation_gt["value"])
    except Exception:  # the target does not parse: lenient, no reward (validation reports it)
        return result
    parsed = parse_prediction(parse, name, prediction, literal_left)
    if parsed is UNPARSED:
        return result
    image_size, image_sizes, metadata, extra_info = size_sources
    if image_size is None and image_sizes is None and metadata is None and extra_info is None:
        size = None
    else:
        size = find_image_size(image_size, image_sizes, metadata, extra_info)
    context = scoring_context(size, opts.point_half_life_px)
    return score_parsed(result, registry.reward_ids[entry.current_reward_id], parsed, target, context)


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
#: The options the response was scored with, echoed (constant for a run).
OPTION_KEYS: tuple[str, ...] = (
    "format_weight",
    "trace_reward_mode_answer",
    "trace_reward_mode_answer_only",
    "trace_reward_mode_answer_and_annotation",
    "trace_answer_scoring_exact_json",
    "trace_annotation_reward_formula_gated",
    "trace_annotation_reward_formula_additive",
    "trace_answer_weight",
    "trace_annotation_weight",
)
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


def result_keys(registry: Registry | None = None) -> tuple[str, ...]:
    """The keys every result dict holds, in order: :data:`CORE_RESULT_KEYS`, then one
    ``annotation_type_<name>`` indicator per installed annotation type (official order first).

    Per-type diagnostics (``annotation_pred_size``...) come after these, only
    when an annotation was scored; trainer adapters log exactly these keys.
    """
    registry = registry or get_registry()
    return CORE_RESULT_KEYS + tuple(key for _, key in registry.type_indicator_keys)


_templates: dict[ScoringOptions, tuple[Registry, dict[str, float], dict[str, str]]] = {}


def _template(opts: ScoringOptions, registry: Registry) -> tuple[dict[str, float], dict[str, str]]:
    """The result dict of ``opts`` in docs/contracts.md §7 order with every per-response value at 0.

    Built once per options and registry, so a call copies it and sets a dozen
    values instead of building forty keys.
    """
    cached = _templates.get(opts)
    if cached is not None and cached[0] is registry:
        return cached[1], cached[2]
    answer_mode = 1.0 if opts.mode == ANSWER else 0.0
    gated = 1.0 if opts.formula == GATED else 0.0
    template = dict.fromkeys(result_keys(registry), 0.0)
    template.update(
        {
            "format_weight": opts.format_weight,
            "trace_reward_mode_answer": answer_mode,
            "trace_reward_mode_answer_only": answer_mode,
            "trace_reward_mode_answer_and_annotation": 1.0 - answer_mode,
            "trace_answer_scoring_exact_json": 1.0,
            "trace_annotation_reward_formula_gated": gated,
            "trace_annotation_reward_formula_additive": 1.0 - gated,
            "trace_answer_weight": opts.answer_weight,
            "trace_annotation_weight": opts.annotation_weight,
            "trace_reward": 1.0,
        }
    )
    type_keys = dict(registry.type_indicator_keys)
    if len(_templates) > 256:  # a caller cycling through option values: keep memory bounded
        _templates.clear()
    _templates[opts] = (registry, template, type_keys)
    return template, type_keys


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
    """Score one model response; returns a flat ``dict[str, float]`` (docs/contracts.md §7).

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
    # One literal-reader budget for everything the model wrote (extraction, annotation strings);
    # the same two lines as extract_response, inline on the hot path.
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
    return compose_result(opts, registry, ext, answer_reward, answer_parse_ok, ann)


def extract_response(text: str, opts: ScoringOptions, literal_left: list[int]) -> Extraction:
    """The extraction of one response; ``literal_left`` is the response's literal-reader budget.

    One budget covers everything the model wrote (extraction, annotation strings).
    """
    with literal_budget(literal_left):
        return extract(text, _required_keys(opts.mode))


def compose_result(
    opts: ScoringOptions, registry: Registry, ext: Extraction, answer_reward: float, answer_parse_ok: float, ann: AnnotationResult
) -> dict[str, float]:
    """The flat result dict (docs/contracts.md §7) of one scored response."""
    fw = opts.format_weight
    if opts.mode == ANSWER:
        task = answer_reward
    elif opts.formula == GATED:
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
    return result
