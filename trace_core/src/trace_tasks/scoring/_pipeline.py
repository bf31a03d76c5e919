"""The one scoring pipeline: one response against one prepared target.

Every way of scoring runs :func:`run`: ``score_trace_response`` (a target
prepared per call by :func:`prepare_target`), compiled instances (a target
prepared once, at validation), ``trace-tasks explain`` and report, batch,
server and trainer adapters. The steps, in order:

1. **extraction**: the final object of the response, under the response's
   literal-reader budget (with the options' recovery and answer-tag policy,
   docs/contracts.md §3.7);
2. **answer**: the predicted answer against the prepared answer target
   (``answer_exact_match_v0``);
3. **annotation**: the owner's parse of the prediction (what is left of the
   same budget), then the current reward id's score hook against the parsed
   target, in the target's :class:`~trace_tasks.plugins.ScoringContext`; a
   prediction that does not parse is shown to the owner's
   ``trace_native_annotation``, if any (a model-native shape sets
   ``annotation_native_format``; only on this failure path);
4. **composition**: the flat result dict (:func:`~trace_tasks.scoring._results.compose_result`).

Preparing a target (the contract gate, the target's parse under its own
literal budget, the image size and context) is its own step, so the lenient
scorer pays for it per call and a compiled instance once.

The frequent case takes fewer calls inside the same steps (``_LEAN``; the
differential test tests/core/test_lean_path.py turns it off and compares every
result): a compact JSON final object is read without entering the literal
budget (JSON reads no literal), an integer or plain-string answer is compared
directly, and the lenient target parse of a family that declares it pure
(``AnnotationTypeSpec.pure_parse``) is remembered by exact content (from a value's second sighting: a GRPO group parses its ground truth
twice, not 8-16 times). Anything unusual takes the general steps.

In the native build (docs/compiled.md) :func:`run` first hands a response scored with the default options
and no trail to ``trace_tasks.scoring._native.score``, which returns the complete result of the commonest
case (the lean ending, a lean answer, a box, point or segment annotation in the scalar or set shape from
plain JSON, as the family's declared kernel) or None; the steps below then score it exactly as in the pure
build. tests/core/test_native_path.py compares the two bit for bit.

Given a :class:`Trail`, the same run also keeps what each step saw: the
extraction, the predicted answer, the parsed values and context, and the
family's :class:`~trace_tasks.plugins.AnnotationExplanation`, asked right
after the score with the very values and context the score hook got (a shape
family's explanation is its scorer run with a trail of matches). Nothing is
extracted, parsed or prepared a second time, so an explanation cannot drift
from the reward; the result is the score hook's, exactly as without a trail.
With a trail built with ``hints=True`` (explain, reports) the run also scores
what the tools' hints need, by the same score hook and never into the result: the parsed prediction read as
normalised 0-1 and 0-1000 coordinates (the owner's ``trace_scale_annotation``,
when the image size is known), and a model-native value rewritten in the
contract's shape (``NativeFormat.converted``).
"""

from __future__ import annotations

import importlib.metadata
import marshal
from collections.abc import Callable
from typing import Any

import attrs

from trace_tasks.errors import AnnotationParseError, OptionError, one_line
from trace_tasks.limits import MAX_LITERAL_BUDGET, MAX_RESPONSE_CHARS, MAX_TARGET_LITERAL_BUDGET
from trace_tasks.plugins import (
    ANSWER_RELAXED_ID,
    FLAT_DRAWINGS,
    AnnotationExplanation,
    AnnotationTypeEntry,
    NativeFormat,
    Registry,
    RewardEntry,
    ScoringContext,
)
from trace_tasks.reading import (
    ANNOTATION_KEYS,
    ANSWER_AND_ANNOTATION_KEYS,
    ANSWER_KEYS,
    LENIENT,
    Extraction,
    FormatCheck,
    ToolCallReading,
    extract,
    is_mapping,
    literal_budget,
    load_json_or_literal,
    plain_final_object,
    read_tool_call,
)
from trace_tasks.scoring._answers import JSON_STARTS, NEVER_MATCHES, answer_target, matches_answer_target
from trace_tasks.scoring._context import Size, _contexts, scoring_context
from trace_tasks.scoring._frames import PIXEL, PREDICTION_FRAMES, frame_scales
from trace_tasks.scoring._image_size import find_image_size, size_from
from trace_tasks.scoring._options import ANNOTATION_ONLY, ANSWER, ANSWER_AND_ANNOTATION, GATED, ScoringOptions
from trace_tasks.scoring._plugin_calls import (
    UNPARSED,
    AnnotationResult,
    PluginBug,
    checked_score,
    native_format,
    parse_value,
    report_plugin_bug,
)
from trace_tasks.scoring._relaxed import relaxed_match
from trace_tasks.scoring._results import _template, compose_result

#: The native build's common path (docs/compiled.md): ``None`` in the pure build, which has no such module.
#: tests/core/test_native_path.py sets it to ``None`` to compare the two.
_native_score: Callable[..., Any] | None
_native_exact: Callable[[Any], bool] | None
_native_prepare: Callable[..., Target | None] | None
_native_parse: Callable[[int, int, Any], Any] | None
_native_restates: Callable[[str], bool] | None
_native_lane: tuple[Callable[..., Any], Callable[[], bool]] | None
try:
    from trace_tasks.scoring._native import check_label as _native_check_label
    from trace_tasks.scoring._native import exact as _native_exact
    from trace_tasks.scoring._native import lane_ready as _native_lane_ready
    from trace_tasks.scoring._native import lane_setup as _native_lane_setup
    from trace_tasks.scoring._native import parse_value as _native_parse
    from trace_tasks.scoring._native import prepare as _native_prepare
    from trace_tasks.scoring._native import scipy_restated as _native_restates
    from trace_tasks.scoring._native import score as _native_score

    _native_lane = (_native_check_label, _native_lane_ready)
except ImportError:
    _native_score = _native_exact = _native_prepare = _native_parse = _native_restates = _native_lane = None

__all__ = [
    "NATIVE_SHAPES",
    "NORMALISED_READINGS",
    "UNPARSED",
    "Target",
    "Trail",
    "frame_problem",
    "holds_exact_values",
    "native_label_lane",
    "native_lane_setup",
    "native_parser",
    "native_reward_codes",
    "native_solves_assignments",
    "prepare_target",
    "required_keys",
    "run",
]

#: The normalised readings a trail scores a parsed prediction under: name -> (x scale, y scale)
#: as multiples of the image width and height.
NORMALISED_READINGS: tuple[tuple[str, float], ...] = (("0-1", 1.0), ("0-1000", 1e-3))

#: The lean common path (:func:`run`): the frequent case in fewer calls, the same result.
#: ``False`` forces the general steps everywhere, the native path's too (tests/core/test_lean_path.py compares the two).
_LEAN = True

#: ``Target._parsed`` before the lenient target's first parse.
_PENDING: Any = object()
#: ``Target._size`` before the size sources were searched.
_UNSEARCHED: Any = object()


def required_keys(mode: str) -> frozenset[str]:
    """The keys a schema-valid final object holds in ``mode``."""
    if mode == ANSWER:
        return ANSWER_KEYS
    return ANNOTATION_KEYS if mode == ANNOTATION_ONLY else ANSWER_AND_ANNOTATION_KEYS


class Target:
    """An instance's ground truth, prepared for :func:`run`.

    ``answer`` is the answer target in canonical form (:data:`NEVER_MATCHES`
    when there is none) and ``answer_parse_ok`` whether the ground truth had
    one. ``type_name`` is the annotation type when an installed family owns it
    (its ``annotation_type_<name>`` indicator is set); ``reward`` the current
    reward id's entry when the contract lets the annotation be scored, else
    ``None`` and ``problem`` says why. The parsed target and the image size are
    computed on first use by :func:`run` (a lenient call whose response predicts
    nothing never parses its target).
    """

    # Class-level defaults and no ``__init__``: the lenient scorer builds one target per call,
    # and ``Target()`` then runs no Python frame; each preparation sets only what differs.
    answer: Any = NEVER_MATCHES
    answer_parse_ok = 0.0
    reads_json = True
    type_name: str | None = None
    entry: AnnotationTypeEntry | None = None
    reward: RewardEntry | None = None
    problem = ""
    _value: Any = None
    _parsed: Any = _PENDING
    _sizes: tuple[Any, ...] | None = None
    _size: Any = None
    _context: ScoringContext | None = None
    #: The declared ``model_image_size`` ``(width, height)`` of the ``resized`` frame (``None``: smart_resize).
    model_size: Size | None = None
    #: ``(answer type, raw answer_gt value)`` when the contract names the pinned ``answer_relaxed_match_v0``.
    relaxed: tuple[str, Any] | None = None

    @classmethod
    def compiled(
        cls,
        answer: Any,
        reads_json: bool,
        entry: AnnotationTypeEntry,
        reward: RewardEntry,
        parsed: Any,
        size: Size | None,
        context: ScoringContext,
    ) -> Target:
        """A target validation already prepared: parsed, its size found, its default context built."""
        target = cls()
        target.answer, target.answer_parse_ok, target.reads_json = answer, 1.0, reads_json
        target.type_name, target.entry, target.reward = entry.name, entry, reward
        target._parsed, target._size, target._context = parsed, size, context
        return target

    def with_size(self, size: Size | None) -> Target:
        """This target scored in an image of ``size`` (a caller's size source overrides the instance's)."""
        other = Target()
        other.answer, other.answer_parse_ok, other.reads_json = self.answer, self.answer_parse_ok, self.reads_json
        other.type_name, other.entry, other.reward, other.problem = self.type_name, self.entry, self.reward, self.problem
        other._parsed, other._size, other.model_size = self._parsed, size, self.model_size
        other.relaxed = self.relaxed
        return other

    def context_for(self, half_life_px: float | None) -> ScoringContext:
        """The scoring context of this target under the ``point_half_life_px`` option (a compiled target's own
        context when the option is not given)."""
        context = self._context
        if context is None or half_life_px is not None:
            size = self._size
            context = scoring_context(self.image_size() if size is _UNSEARCHED else size, half_life_px)
        return context

    def image_size(self) -> Size | None:
        """The image size of the target's size sources (``None`` when none gives one)."""
        size = self._size
        if size is _UNSEARCHED:
            sources = self._sizes
            size = self._size = find_image_size(*sources) if sources is not None else None
        return size  # type: ignore[no-any-return]


def prepare_target(
    answer_gt: Any,
    annotation_gt: Any,
    reward_contract: Any,
    opts: ScoringOptions,
    registry: Registry,
    sizes: tuple[Any, Any, Any, Any],
) -> Target:
    """The lenient preparation of raw ground truth: never raises on what it cannot use.

    Ground truth the scorer cannot use gives a target that earns nothing
    (validation, not this, reports it). The one exception is the caller's
    mistake of scoring an official annotation type whose family is not
    installed (or is disabled by ``TRACE_TASKS_PLUGINS`` /
    ``TRACE_TASKS_DISABLE_PLUGINS``), in answer-and-annotation mode:
    :class:`~trace_tasks.errors.MissingFamilyError`.
    ``sizes`` are ``(image_size, image_sizes, metadata, extra_info)``.
    """
    if _native_prepare is not None:  # the native build's restatement of the common case below (or None)
        target = _native_prepare(
            answer_gt, annotation_gt, reward_contract, registry, sizes, Target, _UNSEARCHED, answer_target, ANSWER_RELAXED_ID
        )
        if target is not None:
            return target
    if is_mapping(answer_gt) and "value" in answer_gt:
        answer_type = answer_gt.get("type")
        spec = registry.answer_types.get(answer_type.strip()) if isinstance(answer_type, str) else None
        reads_json = spec.reads_json_strings if spec is not None else True
        target = Target()
        target.answer, target.answer_parse_ok = answer_target(answer_gt["value"], reads_json_strings=reads_json), 1.0
        if not reads_json:
            target.reads_json = False
        target.relaxed = relaxed_answer(answer_gt, reward_contract, registry)
    else:
        target = Target()  # no answer: the defaults never match
    if not is_mapping(annotation_gt) or not isinstance(annotation_gt.get("type"), str):
        target.problem = "annotation_gt has no type"  # constant texts: a lenient call never formats what it may not show
        return target
    name = annotation_gt["type"].strip()
    entry = registry.annotation_types.get(name)
    if entry is None:
        missing = registry.missing_family(name) if opts.trace_reward_mode != ANSWER else None
        if missing is not None:
            raise missing
        target.problem = f"no installed family owns annotation type {name!r}"
        return target
    target.type_name = target_type = name
    side = reward_contract.get("annotation") if is_mapping(reward_contract) else None
    declared = side.get("type") if is_mapping(side) else None
    if not is_mapping(side) or (declared is not None and (not isinstance(declared, str) or declared.strip() != target_type)):
        target.problem = f"the reward contract's annotation side does not name type {name!r}"
        return target
    if side.get("id") != entry.current_reward_id:
        target.problem = f"the reward contract's annotation id is not the current reward id of {name!r}"
        return target
    if "value" not in annotation_gt:
        target.problem = "annotation_gt has no value"
        return target
    target.entry, target.reward = entry, registry.reward_ids[entry.current_reward_id]
    target._value = annotation_gt["value"]
    image_size, image_sizes, metadata, extra_info = sizes
    if image_size is not None or image_sizes is not None or metadata is not None or extra_info is not None:
        target._sizes, target._size = sizes, _UNSEARCHED
    return target


def holds_exact_values(values: tuple[Any, ...]) -> bool:
    """Whether ``values`` hold only values of the exact built-in types a caller's JSON gives (no subclass to convert).

    The native build walks them in C; the pure build asks ``marshal``, which writes exact built-in types only. A
    False answer (a subclass, another type, a structure too deep or too shared to look at quickly) is never wrong:
    the caller then converts each value with the general look.
    """
    if _native_exact is not None:
        return _native_exact(values)
    try:
        marshal.dumps(values)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return False
    return True


def frame_problem(opts: ScoringOptions, target: Target) -> str:
    """Why ``target`` cannot be scored in ``opts``' declared prediction frame ("" when it can, or nothing is declared).

    A caller's mistake, raised as :class:`~trace_tasks.errors.OptionError` by
    ``score_trace_response`` and compiled instances before any response is read:
    the owning family cannot convert coordinates (no ``trace_frame_annotation``,
    or it answers ``None`` for this frame: asked once per type and frame, with
    the parsed target), or the image size is unknown. A target that earns
    nothing anyway (no annotation to score) has no problem here.
    """
    frame = opts.prediction_frame
    entry = target.entry
    if frame == PIXEL or entry is None or target.reward is None:
        return ""
    if entry.frame is None:
        return (
            f"prediction_frame {frame!r}: the family {entry.plugin!r} that owns annotation type {entry.name!r} "
            "cannot convert coordinates (it has no trace_frame_annotation); score it in the 'pixel' frame"
        )
    size = target.image_size()
    if size is None:
        return (
            f"prediction_frame {frame!r} needs the image size to convert predictions to pixels; give image_size "
            "(or a size in image_sizes, metadata or extra_info)"
        )
    try:
        scales = frame_scales(frame, size, target.model_size, opts.resize)
    except OptionError as exc:
        return str(exc)
    key = (id(entry), frame)
    known = _frame_support.get(key)
    if known is not None and known[0] is entry:
        return known[1]
    parsed = target._parsed
    if parsed is _PENDING:
        parsed = target._parsed = _parse_target(entry, target._value)
    if parsed is UNPARSED:
        return ""  # the target earns nothing; asked again with the next one
    try:
        converted = entry.frame(annotation_type=entry.name, value=parsed, scale_x=scales[0], scale_y=scales[1], y_first=scales[2])
    except Exception:
        converted = None
    problem = (
        ""
        if converted is not None
        else f"prediction_frame {frame!r}: the family {entry.plugin!r} that owns annotation type {entry.name!r} "
        "cannot convert its values from this frame (trace_frame_annotation returned None)"
    )
    if len(_frame_support) >= 1024:
        _frame_support.clear()
    _frame_support[key] = (entry, problem)
    return problem


#: Whether an owner converts a type's values from a frame: (id of the type's entry, frame) -> (entry, problem).
_frame_support: dict[tuple[int, str], tuple[AnnotationTypeEntry, str]] = {}


def relaxed_answer(answer_gt: Any, reward_contract: Any, registry: Registry) -> tuple[str, Any] | None:
    """``(answer type, raw value)`` when the contract names ``answer_relaxed_match_v0`` and the user pinned it
    for the answer type (docs/contracts.md §4.1), else ``None`` (exact match, as every contract without it)."""
    side = reward_contract.get("answer") if is_mapping(reward_contract) else None
    if not is_mapping(side) or side.get("id") != ANSWER_RELAXED_ID or not is_mapping(answer_gt):
        return None
    kind = answer_gt.get("type")
    kind = kind.strip() if isinstance(kind, str) else ""
    if registry.current_answer_reward_id(kind) != ANSWER_RELAXED_ID or "value" not in answer_gt:
        return None
    return (kind, answer_gt["value"])


class Trail:
    """What one run saw at each step, kept when :func:`run` is given a trail (explain, reports).

    ``extraction`` and ``predicted_answer`` are the response's reading;
    ``prediction`` the raw predicted annotation (``None`` when there is none),
    ``parsed_prediction`` its parse (:data:`UNPARSED` when it does not parse),
    ``parse_errors`` why it did not; ``target`` the parsed target, ``context`` the scoring context;
    ``explanation`` the family's account of the score (``None`` when there is
    none, and ``problem`` says why in one line).
    ``native`` is the owner's account of a model-native prediction that did not
    parse (``None`` otherwise). With ``hints`` (what explain and reports ask
    for; a trail kept for metrics skips the extra score calls),
    ``native_reward`` is the reward its ``converted`` value would have earned
    (``None`` when there is none) and ``readings`` the annotation reward of the
    parsed prediction read as pixels and as each of :data:`NORMALISED_READINGS`
    (empty without an image size or the owner's ``trace_scale_annotation``).

    Under a declared ``prediction_frame``, ``written_prediction`` is the parse
    as the model wrote it and ``parsed_prediction`` the same value in pixels
    (the one scored and drawn); they are one object in the ``pixel`` frame.
    ``native_read`` says the annotation was read from a model-native shape
    (``annotation_native``). ``reward`` is the annotation reward of the run,
    ``text`` the response and ``options`` the run's options. With ``hints``,
    ``alternatives`` is the annotation reward of each other reading of the same
    prediction (:data:`ALTERNATIVE_READINGS`: every other frame, a native
    shape read as the annotation); :func:`~trace_tasks.scoring.row_mismatches`
    names the ones that would score clearly more.
    """

    __slots__ = (
        "alternatives",
        "context",
        "explanation",
        "extraction",
        "hints",
        "native",
        "native_read",
        "native_reward",
        "options",
        "parse_errors",
        "parsed_prediction",
        "predicted_answer",
        "prediction",
        "problem",
        "readings",
        "reward",
        "target",
        "text",
        "written_prediction",
    )

    def __init__(self, *, hints: bool = False) -> None:
        self.hints = hints
        self.extraction: Extraction | None = None
        self.predicted_answer: Any = None
        self.prediction: Any = None
        self.parsed_prediction: Any = UNPARSED
        self.parse_errors: list[BaseException] = []
        self.target: Any = UNPARSED
        self.context: ScoringContext | None = None
        self.explanation: AnnotationExplanation | None = None
        self.problem = ""
        self.native: NativeFormat | None = None
        self.native_reward: float | None = None
        self.readings: dict[str, float] = {}
        self.written_prediction: Any = UNPARSED
        self.native_read = False
        self.reward = 0.0
        self.text = ""
        self.options: ScoringOptions | None = None
        self.alternatives: dict[str, float] = {}


def run(text: str, opts: ScoringOptions, registry: Registry, target: Target, trail: Trail | None = None) -> dict[str, float]:
    """Score ``text`` against ``target``: the flat result dict (docs/contracts.md §7). Never raises."""
    # The native build's common path first (docs/compiled.md): the complete result, or None and the steps
    # below. It knows the contract's reading (lenient recovery, pixels, no tool call) and any weights, formula,
    # mode and half-life; a declared departure in how the response is read, or a pinned answer policy, stays here.
    if (
        _native_score is not None
        and _LEAN
        and trail is None
        and opts.trace_recovery == LENIENT
        and opts.tool_call is None
        and not opts.annotation_native
        and target.relaxed is None
    ):
        native = _native_run(text, opts, registry, target)
        if isinstance(native, dict):
            return native
        read = native  # the extraction the native path made before it declined (and the budget left), or None
    else:
        read = None
    tool = opts.tool_call
    # A declared tool call carries the annotation: the final object holds the answer alone (§3.9).
    keys = required_keys(opts.trace_reward_mode) if tool is None else ANSWER_KEYS
    lean = _LEAN
    # The reading step, unless the native path took it (its call of _extract) before it declined.
    ext, literal_left = read if read is not None else _read(text, opts, keys)
    annotation_only = opts.trace_reward_mode == ANNOTATION_ONLY
    predicted: Any = None if annotation_only else ext.answer(text)  # annotation_only reads no answer
    prepared = target.answer
    kind = type(predicted)
    if annotation_only:
        matched = False
    elif target.relaxed is not None:  # the pinned evaluation policy the contract names (§4.1)
        matched = relaxed_match(predicted, target.relaxed, opts.answer_relative_tolerance)
    elif lean and kind is int and type(prepared) is int:  # an integer answer: its canonical form is itself
        matched = predicted == prepared
    elif lean and kind is str and type(prepared) is str and not (target.reads_json and predicted.lstrip()[:1] in JSON_STARTS):
        matched = predicted.strip().casefold() == prepared  # an option letter or a word: no JSON literal to read
    else:
        matched = matches_answer_target(predicted, prepared, reads_json_strings=target.reads_json)
    if tool is not None:
        with literal_budget(literal_left):
            call = read_tool_call(text, tool)
        ext = _with_call(ext, call, annotation_only)
    ann = AnnotationResult(target.type_name)
    payload = ext.payload
    prediction = payload.get("annotation") if payload is not None else None
    reward = target.reward
    if trail is not None:
        trail.extraction, trail.predicted_answer, trail.prediction = ext, predicted, prediction
        trail.text, trail.options = text, opts
    if reward is not None and (prediction is not None or trail is not None):
        _annotate(ann, opts, target, reward, prediction, literal_left, trail)
    if reward is not None and payload is None and target.entry is not None and target.entry.native is not None:
        bare = _bare_value(ext, text, literal_left)  # no final object at all: perhaps the model's own format
        if bare is not UNPARSED:
            parsed_target = target._parsed if target._parsed is not _PENDING else None
            _native(ann, target.entry, reward, bare, parsed_target, trail.context if trail else None, literal_left, trail)
    if trail is not None:
        trail.reward = ann.reward
        if not trail.problem:
            trail.problem = target.problem
    answer_parse_ok = 0.0 if annotation_only else target.answer_parse_ok  # no answer is read: its keys hold 0
    return compose_result(opts, registry, ext, 1.0 if matched else 0.0, answer_parse_ok, ann)


def _read(text: str, opts: ScoringOptions, keys: frozenset[str]) -> tuple[Extraction, list[int]]:
    """:func:`run`'s reading step: the extraction of ``text`` and the literal budget it left."""
    literal_left = [MAX_LITERAL_BUDGET]  # one budget for everything the model wrote
    # The lean common ending: a compact JSON final object (what ``extract`` tries first). JSON reads no
    # literal, so no budget needs to be in force; anything else takes the general step under the budget.
    tried = _LEAN and opts.trace_recovery == LENIENT and len(text) <= MAX_RESPONSE_CHARS
    ext = plain_final_object(text, keys) if tried else None
    if ext is None:
        with literal_budget(literal_left):
            ext = extract(text, keys, opts.trace_recovery, opts.format_accept_answer_tag, plain_tried=tried)
    return ext, literal_left


def _with_call(ext: Extraction, call: ToolCallReading, annotation_only: bool) -> Extraction:
    """The extraction with the annotation read from the declared tool's last call (docs/contracts.md §3.9).

    In the annotation-only mode the call is the final object: format 1 when the call of the tool is found
    and its declared argument read. In a mode with an answer, the answer is the final object's (already read)
    and format needs both that object (``{"answer": ...}``) and the call; a final object's ``annotation`` is
    never read when a tool call is declared.
    """
    read = call.found and call.value is not None
    source = f"the last {call.form} of the tool" if call.found else ""
    if annotation_only:
        payload = {"annotation": call.value} if read else None
        return Extraction(FormatCheck(call.found, call.found, read, call.text or None, payload), payload, None, source)
    kept = {k: v for k, v in ext.payload.items() if k != "annotation"} if ext.payload is not None else {}
    if read:
        kept["annotation"] = call.value
    fmt = attrs.evolve(ext.format, schema_ok=ext.format.schema_ok and read)
    return attrs.evolve(ext, format=fmt, payload=kept or None, source=ext.source or source)


#: The native path's plan of a reward entry, by the entry's id: (entry, (shape code, kernel code, mean key, half-life key)).
_native_plans: dict[int, tuple[RewardEntry, tuple[int, int, str, str]]] = {}
#: A family's ``native_plan`` names -> the native module's codes (_native.pyx: SCALAR, SET, SEQUENCE, MAP; IOU,
#: SOFT_POINT, SOFT_SEGMENT).
NATIVE_SHAPES = {"scalar": 0, "set": 1, "sequence": 2, "map": 3, "set_map": 4}
_NATIVE_KERNELS = {"iou": 0, "soft_point": 1, "soft_segment": 2}
_NOT_NATIVE = (-1, -1, "", "")
#: The reward modes by the native module's codes (_native.pyx: BOTH, ANSWER_ONLY, ANNOTATION_ALONE).
_NATIVE_MODES = {ANSWER_AND_ANNOTATION: 0, ANSWER: 1, ANNOTATION_ONLY: 2}


def native_solves_assignments() -> bool:
    """Whether this build scores sets without importing scipy's solver (``scipy.optimize``: 1.4 billion instructions).

    True in the native build when the installed scipy is a release whose
    solver the native module restates: the common path then never imports
    ``scipy.optimize`` (a response the Python steps score still does, on first
    use). What a process pool preloads follows it. False in the pure build.
    """
    if _native_restates is None or _native_score is None:
        return False
    try:
        version = importlib.metadata.version("scipy")  # the installed release, without importing it
    except importlib.metadata.PackageNotFoundError:
        return False
    return bool(_native_restates(version))


def native_parser(kernel: str, shape: str) -> Callable[[Any], Any] | None:
    """The native build's parse of a ``shape`` value over the item parse ``kernel`` restates, or None.

    ``kernel`` is a primitive's ``Primitive.native`` (``"iou"``, ``"soft_point"``,
    ``"soft_segment"``): the function returns what ``make_parser(shape, primitive)``
    returns for a plain JSON value, or None for any other value, which the
    family's own parser then reads. None in the pure build and for a name the
    native module does not know.
    """
    kernel_code, shape_code = _NATIVE_KERNELS.get(kernel, -1), NATIVE_SHAPES.get(shape, -1)
    if _native_parse is None or kernel_code < 0 or shape_code < 0:
        return None

    def parse(value: Any) -> Any:
        native = _native_parse  # read at each call: tests/core/test_native_path.py sets it to None for Python's parse
        return None if native is None else native(kernel_code, shape_code, value)

    return parse


#: The label lane's rule for each built-in answer type's target (the native module's ``WHOLE``, ``REAL``, ...:
#: tests/core/test_native_path.py compares them), for :func:`native_label_lane`'s plans.
NATIVE_ANSWER_RULES: dict[str, int] = {
    "integer": 0,
    "number": 1,
    "string": 2,
    "option_letter": 3,
    "pi_expression": 3,
    "boolean": 4,
    "index_list": 5,
    "matrix": 6,
}
#: What each native kernel's items draw as (``AnnotationTypeSpec.drawn_as``, one of ``FLAT_DRAWINGS``: boxes, points,
#: polylines, the kernels' order): the lane's lint reads them so.
NATIVE_KERNEL_DRAWINGS: dict[int, str] = dict(enumerate(FLAT_DRAWINGS))


def native_label_lane() -> tuple[Callable[..., Any], Callable[[], bool]] | None:
    """``(check_label, lane_ready)`` of the native build's label lane (``trace_tasks.data._quick``), or None: the
    pure build, or the native path turned off (tests/core/test_native_path.py sets its score to None).

    ``check_label(label, skip, registry)`` is ``(compiled instance, inputs)`` or None; ``lane_ready()``
    says whether :func:`native_lane_setup` gave it what it reads.
    """
    return _native_lane if _native_score is not None and _LEAN else None


def native_lane_setup(
    fields: tuple[str, ...],
    rules: tuple[str, ...],
    size_keys: frozenset[str],
    budget_problem: Callable[[tuple[int, ...]], str | None],
    small_image_px: float,
    instance_class: type,
    plan_of: Callable[[str, str, Registry], tuple[Any, ...] | None],
) -> None:
    """Give the native label lane what it reads of the data room (the compiled fields in order, the lint's
    rule ids in the order of its bits, metadata's size keys, the set-map budget check, ``SMALL_IMAGE_PX``, the
    compiled instance's class, a pair's plan); this room adds the target's class, :func:`scoring_context`
    with the contexts it keeps, and ``size_from``. Nothing in the pure build."""
    if _native_lane is None:
        return
    _native_lane_setup(
        fields,
        rules,
        size_keys,
        size_from,
        budget_problem,
        small_image_px,
        instance_class,
        Target,
        scoring_context,
        _contexts,
        plan_of,
    )


def native_reward_codes(reward: RewardEntry) -> tuple[int, int] | None:
    """``(shape code, kernel code)`` of the native path's scoring of ``reward``, or None when Python scores it."""
    shape, kernel, _, _ = _native_plan(reward)
    return (shape, kernel) if shape >= 0 else None


def _native_plan(reward: RewardEntry) -> tuple[int, int, str, str]:
    """``(shape code, kernel code, mean key, half-life key)`` of ``reward``; shape -1: a scorer the native path does not know."""
    known = _native_plans.get(id(reward))
    if known is not None and known[0] is reward:
        return known[1]
    owner = getattr(reward.score, "__self__", None)
    ask = getattr(owner, "native_plan", None)
    # A version that reads its prediction in its own form (RewardIdSpec.parse_prediction) is Python's.
    plan = ask(reward.reward_id, reward.score) if callable(ask) and reward.parse is None else None
    found = _NOT_NATIVE
    if type(plan) is tuple and len(plan) == 4 and all(type(part) is str for part in plan):
        shape, kernel = NATIVE_SHAPES.get(plan[0], -1), _NATIVE_KERNELS.get(plan[1], -1)
        if shape >= 0 and kernel >= 0:
            found = (shape, kernel, plan[2], plan[3])
    if len(_native_plans) >= 256:
        _native_plans.clear()
    _native_plans[id(reward)] = (reward, found)
    return found


#: The native path's answer for a framed call, by the ids of the reward entry and the annotation entry.
_native_frames: dict[tuple[int, int], tuple[RewardEntry, AnnotationTypeEntry, bool]] = {}


def _native_frame(reward: RewardEntry, entry: AnnotationTypeEntry) -> bool:
    """Whether the owner of ``reward``'s score converts ``entry``'s values from a frame as the native path restates
    it (the owner's ``native_frame``: flat x/y items scaled, swapped first for a y-first frame). Asked once per
    pair of entries (a registry's entries never change; a new registry's are other objects)."""
    known = _native_frames.get((id(reward), id(entry)))
    if known is not None and known[0] is reward and known[1] is entry:
        return known[2]
    ask = getattr(getattr(reward.score, "__self__", None), "native_frame", None)
    found = callable(ask) and ask(entry.frame) is True
    if len(_native_frames) >= 256:
        _native_frames.clear()
    _native_frames[(id(reward), id(entry))] = (reward, entry, found)
    return found


def _native_scales(opts: ScoringOptions, target: Target) -> tuple[float, float, bool] | None:
    """``frame_scales`` of the declared frame, as :func:`_to_pixels` finds them for ``target`` (None: it cannot)."""
    context = target.context_for(opts.point_half_life_px)
    if context.image_size is None:
        return None
    try:
        return frame_scales(opts.prediction_frame, context.image_size, target.model_size, opts.resize)
    except OptionError:
        return None


def _native_run(
    text: str, opts: ScoringOptions, registry: Registry, target: Target
) -> dict[str, float] | tuple[Extraction, list[int]] | None:
    """The native common path's result for ``text``, or what :func:`run`'s Python steps go on from.

    That is None, or the extraction (and literal budget left) of :func:`_extract` when the native path
    called it before it declined.

    Only with the contract's reading of the response and no trail (the caller checks). A compiled target's
    parse is handed over; a lenient target's raw value is read by the native path itself when the response
    predicts something (a value it cannot read there sends the whole response to the Python steps, which
    parse it as always). The scoring context's half-life is asked for only when a distance is computed.
    """
    reward = target.reward
    parsed: Any = None
    raw = False
    shape, kernel, mean_key, extra_key = -2, -1, "", ""
    scales = (1.0, 1.0, False)
    if opts.prediction_frame != PIXEL:  # a declared frame: the owner's conversion, restated, or the Python steps
        if reward is None or target.entry is None or not _native_frame(reward, target.entry):
            return None
        found = _native_scales(opts, target)
        if found is None:
            return None
        scales = found
    if reward is not None:
        shape, kernel, mean_key, extra_key = _native_plan(reward)
        if shape >= 0:
            parsed = target._parsed
            if parsed is _PENDING:
                parsed, raw = target._value, True
            elif parsed is UNPARSED:
                parsed = None
    template, type_keys = _template(opts, registry)
    type_key = type_keys[target.type_name] if target.type_name is not None else None
    assert _native_score is not None
    mode = opts.trace_reward_mode
    result: dict[str, float] | tuple[Extraction, list[int]] | None = _native_score(
        text,
        required_keys(mode),
        _extract,
        opts.format_accept_answer_tag,
        target.answer,
        target.reads_json,
        0.0 if mode == ANNOTATION_ONLY else target.answer_parse_ok,  # no answer is read: its keys hold 0
        type_key,
        shape,
        kernel,
        parsed,
        raw,
        _half_life,
        target,
        opts.point_half_life_px,
        mean_key,
        extra_key,
        template,
        opts.format_weight,
        _NATIVE_MODES[mode],
        opts.trace_annotation_reward_formula == GATED,
        opts.answer_weight,
        opts.annotation_weight,
        *scales,
    )
    return result


def _extract(text: str, keys: frozenset[str], answer_tag: bool) -> tuple[Extraction, list[int]]:
    """:func:`run`'s general extraction step after no plain final object was found (the native path's, in C).

    Returns the extraction and the literal budget it left: a native decline hands both back to :func:`run`.
    """
    literal_left = [MAX_LITERAL_BUDGET]
    with literal_budget(literal_left):
        return extract(text, keys, LENIENT, answer_tag, plain_tried=True), literal_left


def _half_life(target: Target, half_life_px: float | None) -> float:
    """The half-life of ``target``'s scoring context, as :func:`_annotate` finds the context (the native path's)."""
    return target.context_for(half_life_px).half_life_px


def _annotate(
    ann: AnnotationResult,
    opts: ScoringOptions,
    target: Target,
    reward: RewardEntry,
    prediction: Any,
    literal_left: list[int],
    trail: Trail | None,
) -> None:
    """The annotation step: the target's parse on first use, the prediction's parse, the score into ``ann``."""
    entry = target.entry
    assert entry is not None
    parsed_target = target._parsed
    if parsed_target is _PENDING:  # a lenient target, parsed on first use under its own literal budget
        parsed_target = target._parsed = _parse_target(entry, target._value)
        if parsed_target is UNPARSED:
            target.problem = f"the target does not parse as {entry.name}"
    if parsed_target is UNPARSED:
        return
    context = target.context_for(opts.point_half_life_px)
    parsed = UNPARSED
    if prediction is not None:
        why = trail.parse_errors if trail is not None else None
        # A version may read its prediction in its own form (RewardIdSpec.parse_prediction), else the owner's parse.
        parse, plugin = (reward.parse, reward.plugin) if reward.parse is not None else (entry.parse, entry.plugin)
        parsed = parse_value(parse, entry.name, prediction, literal_left, why, plugin)
        if parsed is UNPARSED and opts.annotation_native and entry.native is not None:  # opt-in: the model's own shape
            parsed = _read_native(ann, entry, prediction, parsed_target, literal_left, trail)
    written = parsed
    if parsed is not UNPARSED and opts.prediction_frame != PIXEL:  # a declared frame: the prediction in pixels
        parsed = _to_pixels(entry, opts.prediction_frame, opts, target, parsed, context)
    if trail is not None:
        trail.target, trail.parsed_prediction, trail.context = parsed_target, parsed, context
        trail.written_prediction = written
    if parsed is not UNPARSED:
        _score(ann, reward, parsed, parsed_target, context, trail)
        if trail is not None and trail.hints:
            _readings(entry, reward, parsed, parsed_target, context, trail)
            _alternatives(entry, reward, opts, target, written, parsed_target, context, trail)
        return
    if prediction is not None and entry.native is not None and not ann.native:  # the failure path only
        _native(ann, entry, reward, prediction, parsed_target, context, literal_left, trail)
    if trail is not None:
        _explain(reward, None, parsed_target, context, trail)
        if trail.hints and written is not UNPARSED:  # parsed, but could not be converted: still compare readings
            _alternatives(entry, reward, opts, target, written, parsed_target, context, trail)
        elif trail.hints and trail.native is not None and trail.native.converted is not None:
            _native_alternatives(entry, reward, opts, target, trail.native.converted, parsed_target, context, trail, literal_left)


#: The readings of a prediction a trail with hints scores beside the declared one (never the reward):
#: every prediction frame, a model-native shape read as the annotation (``native``, ``native+<frame>``),
#: and the owners' other spellings (``trace_reread_annotation``; the official box family's ``xywh``).
ALTERNATIVE_READINGS: tuple[str, ...] = (
    *PREDICTION_FRAMES,
    "native",
    *(f"native+{frame}" for frame in PREDICTION_FRAMES),
    "xywh",
)


def _to_pixels(
    entry: AnnotationTypeEntry, frame: str, opts: ScoringOptions, target: Target, parsed: Any, context: ScoringContext
) -> Any:
    """``parsed``, written in ``frame``, converted to pixels by its owner; :data:`UNPARSED` when it cannot be."""
    convert, size = entry.frame, context.image_size
    if frame == PIXEL:
        return parsed
    if convert is None or size is None:  # frame_problem refused this before any response; never a guess here
        return UNPARSED
    try:
        scale_x, scale_y, y_first = frame_scales(frame, size, target.model_size, opts.resize)
        value = convert(annotation_type=entry.name, value=parsed, scale_x=scale_x, scale_y=scale_y, y_first=y_first)
    except OptionError:
        return UNPARSED
    except Exception as exc:  # a crash in the plugin: its bug, never the caller's exception
        report_plugin_bug(
            entry.plugin, entry.current_reward_id, "exception", f"trace_frame_annotation raised {type(exc).__name__}: {exc}"
        )
        return UNPARSED
    return UNPARSED if value is None else value


def _read_native(
    ann: AnnotationResult, entry: AnnotationTypeEntry, prediction: Any, target: Any, literal_left: list[int], trail: Trail | None
) -> Any:
    """Under ``annotation_native``: the parse of the owner's rewrite of a model-native prediction, else :data:`UNPARSED`.

    A map read from labels must name only the target's keys: an unknown label is a parse
    failure (a missing or repeated one already gives no rewrite), never a guess.
    """
    native = native_format(entry, prediction, literal_left)
    if native is None:
        return UNPARSED
    if trail is not None:
        trail.native = native
    converted = native.converted
    if converted is None:
        return UNPARSED
    if is_mapping(converted) and (not is_mapping(target) or not set(converted) <= set(target)):
        return UNPARSED
    parsed = parse_value(entry.parse, entry.name, converted, literal_left)
    if parsed is not UNPARSED:
        ann.native = True
        if trail is not None:
            trail.native_read = True
    return parsed


_SCALARS = frozenset((str, int, float, bool, type(None)))
_STRINGS = frozenset((str,))
#: Longest target (marshal bytes) whose parse is remembered, and how many are.
_MAX_TARGET_KEY_BYTES = 1 << 16
_MAX_REMEMBERED_TARGETS = 2048
_MAX_SEEN_VALUES = 4096
#: Lenient targets' parses by exact content: (id of the type's entry, marshal bytes) -> (entry, parse).
_parsed_targets: dict[tuple[int, bytes], tuple[AnnotationTypeEntry, Any]] = {}
#: The ids of target values scored once: a value object seen for the first time is only noted, so instances
#: scored once (a shuffled dataset) pay a dict lookup, no marshal call. An id is only a hint (a new object may
#: reuse a dead one's id: it then costs one marshal call); what is looked up is the content.
_seen_values: dict[int, None] = {}


def _trusted(entry: AnnotationTypeEntry) -> bool:
    """Whether ``entry``'s owner declares its parse pure (``AnnotationTypeSpec.pure_parse``): then it may be remembered."""
    spec = entry.spec
    return spec is not None and spec.pure_parse


def _exact_json(value: Any) -> bool:
    """Whether ``value`` holds only exact lists, tuples, str-keyed dicts, strings, numbers, booleans and None.

    Then its marshal bytes are its exact content: each type has its own code (1, 1.0 and true differ, floats
    bit for bit), and no other object (a subclass, a numpy array written as its buffer's bytes) can give them.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list or kind is tuple:
            if not _SCALARS.issuperset(map(type, item)):
                stack.extend(item)
        elif kind is dict:
            if not _STRINGS.issuperset(map(type, item)):
                return False
            stack.extend(item.values())
        elif kind not in _SCALARS:
            return False
    return True


def _parse_target(entry: AnnotationTypeEntry, value: Any) -> Any:
    """The lenient target's parse (under its own literal budget), remembered by exact content when the owner declares it pure.

    A GRPO group scores one ground truth 8-16 times through ``score_trace_response``: its parse is the same every
    time when the owner declares it pure (``AnnotationTypeSpec.pure_parse``: it depends on the value only, and no
    score hook changes its result), so from the value object's second sighting on it is looked up. The key is the
    value's marshal bytes, kept only for values :func:`_exact_json` accepts, so equal bytes are equal content of
    the same exact types; anything else (numpy values, subclasses, a family that declares nothing) is parsed every
    time.
    """
    if not _LEAN or not _trusted(entry):
        return parse_value(entry.parse, entry.name, value, [MAX_TARGET_LITERAL_BUDGET])
    ident = id(value)
    if ident not in _seen_values:  # the first sighting of this object: noted only
        if len(_seen_values) >= _MAX_SEEN_VALUES:
            _seen_values.clear()
        _seen_values[ident] = None
        return parse_value(entry.parse, entry.name, value, [MAX_TARGET_LITERAL_BUDGET])
    try:
        blob = marshal.dumps(value, 2)  # version 2: no references, the same bytes whatever the sharing
    except (ValueError, TypeError, OverflowError, RecursionError):  # unmarshallable, or nested too deep
        blob = b""
    if not blob or len(blob) > _MAX_TARGET_KEY_BYTES:
        return parse_value(entry.parse, entry.name, value, [MAX_TARGET_LITERAL_BUDGET])
    key = (id(entry), blob)
    known = _parsed_targets.get(key)
    if known is not None and known[0] is entry:
        return known[1]
    parsed = parse_value(entry.parse, entry.name, value, [MAX_TARGET_LITERAL_BUDGET])
    if _exact_json(value):
        if len(_parsed_targets) >= _MAX_REMEMBERED_TARGETS:
            _parsed_targets.clear()
        _parsed_targets[key] = (entry, parsed)
    return parsed


def _bare_value(ext: Extraction, text: str, literal_left: list[int]) -> Any:
    """What a response without a payload holds as its final value: its final block's, or its whole text when that
    is one bracketed list (a model's native grounding output), else :data:`UNPARSED`. Only on the failure path."""
    block = ext.format.answer_block
    if block is None:
        stripped = text.strip()
        if not (stripped.startswith("[") and stripped.endswith("]")):
            return UNPARSED
        block = stripped
    with literal_budget(literal_left):
        value, ok = load_json_or_literal(block)
    return value if ok and value is not None and not is_mapping(value) else UNPARSED


def _native(
    ann: AnnotationResult,
    entry: AnnotationTypeEntry,
    reward: RewardEntry,
    value: Any,
    target: Any,
    context: ScoringContext | None,
    literal_left: list[int],
    trail: Trail | None,
) -> None:
    """The failure path of a prediction that did not parse: is it a model-native shape its owner knows?

    Sets ``ann.native`` (the result's ``annotation_native_format``); with a trail,
    also what the owner's rewritten value would have scored (never the reward).
    """
    native = native_format(entry, value, literal_left)
    if native is None:
        return
    ann.native = True
    if trail is None:
        return
    trail.native = native
    if not trail.hints or native.converted is None or target is None or target is UNPARSED or context is None:
        return
    converted = parse_value(reward.parse or entry.parse, entry.name, native.converted, literal_left)
    if converted is not UNPARSED:
        trail.native_reward = _reward_of(reward, converted, target, context)


def _reward_of(reward: RewardEntry, prediction: Any, target: Any, context: ScoringContext) -> float | None:
    """The checked reward of one more score call, for a tool's hint; ``None`` when the hook fails."""
    try:
        score = reward.score(reward_id=reward.reward_id, prediction=prediction, target=target, context=context)
        return checked_score(score, reward.plugin, reward.reward_id)[0]
    except Exception:  # a limit, or a bug the ordinary score call already reports
        return None


def _readings(
    entry: AnnotationTypeEntry, reward: RewardEntry, parsed: Any, target: Any, context: ScoringContext, trail: Trail
) -> None:
    """With a trail: the reward of the parsed prediction read as pixels and as normalised coordinates.

    Asked of the owner's ``trace_scale_annotation`` (tools only), with the image size.
    """
    scale = entry.scale
    size = context.image_size
    if scale is None or size is None:
        return
    width, height = size
    found: dict[str, float] = {}
    for name, factor in NORMALISED_READINGS:
        try:
            scaled = scale(annotation_type=entry.name, value=parsed, scale_x=width * factor, scale_y=height * factor)
        except Exception:  # the owner cannot scale this value: no reading
            continue
        if scaled is None:
            continue
        got = _reward_of(reward, scaled, target, context)
        if got is not None:
            found[name] = got
    pixels = _reward_of(reward, parsed, target, context) if found else None
    if pixels is not None:  # readings only when there is something to compare
        trail.readings.update({"pixels": pixels, **found})


def _alternatives(
    entry: AnnotationTypeEntry,
    reward: RewardEntry,
    opts: ScoringOptions,
    target: Target,
    written: Any,
    parsed_target: Any,
    context: ScoringContext,
    trail: Trail,
) -> None:
    """With a hints trail: the reward of the parsed prediction, as written, read in every other frame, and of the
    raw prediction's other spellings its owner knows (``trace_reread_annotation``: ``xywh``), in the declared frame."""
    prefix = "native+" if trail.native_read else ""
    reread = entry.reread
    if reread is not None and trail.prediction is not None and not trail.native_read:
        try:
            others = reread(annotation_type=entry.name, value=trail.prediction) or {}
        except Exception:  # a bug in the family's tool capability: no reading
            others = {}
        for name, value in others.items():
            converted = _to_pixels(entry, opts.prediction_frame, opts, target, value, context)
            got = None if converted is UNPARSED else _reward_of(reward, converted, parsed_target, context)
            if got is not None:
                trail.alternatives[str(name)] = got
    for frame in PREDICTION_FRAMES:
        if frame == opts.prediction_frame:
            continue
        value = _to_pixels(entry, frame, opts, target, written, context)
        if value is UNPARSED:
            continue
        got = _reward_of(reward, value, parsed_target, context)
        if got is not None:
            trail.alternatives[prefix + frame] = got


def _native_alternatives(
    entry: AnnotationTypeEntry,
    reward: RewardEntry,
    opts: ScoringOptions,
    target: Target,
    converted: Any,
    parsed_target: Any,
    context: ScoringContext,
    trail: Trail,
    literal_left: list[int],
) -> None:
    """With a hints trail: what a model-native value rewritten in the contract's shape scores, in every frame.

    ``native`` is the reading in the declared frame, ``native+<frame>`` in another one.
    """
    if is_mapping(converted) and (not is_mapping(parsed_target) or not set(converted) <= set(parsed_target)):
        return
    written = parse_value(entry.parse, entry.name, converted, literal_left)
    if written is UNPARSED:
        return
    for frame in PREDICTION_FRAMES:
        value = _to_pixels(entry, frame, opts, target, written, context)
        if value is UNPARSED:
            continue
        got = _reward_of(reward, value, parsed_target, context)
        if got is not None:
            trail.alternatives["native" if frame == opts.prediction_frame else f"native+{frame}"] = got


def _score(
    ann: AnnotationResult, reward: RewardEntry, parsed: Any, target: Any, context: ScoringContext, trail: Trail | None
) -> None:
    """The annotation step: the score hook's checked result into ``ann``; plugin bugs fail the response."""
    plugin, reward_id = reward.plugin, reward.reward_id
    try:
        score = reward.score(reward_id=reward_id, prediction=parsed, target=target, context=context)
        ann.reward, ann.diagnostics = checked_score(score, plugin, reward_id)
    except AnnotationParseError:  # a limit hit while scoring (too large an assignment): the model's doing
        return
    except PluginBug as bug:
        report_plugin_bug(plugin, reward_id, bug.kind, str(bug).partition(": ")[2])
        return
    except Exception as exc:  # a crash in the plugin: its bug, never the caller's exception
        report_plugin_bug(plugin, reward_id, "exception", f"raised {type(exc).__name__}: {exc}", exc_info=True)
        return
    finally:
        if trail is not None:
            _explain(reward, parsed, target, context, trail)
    ann.parse_ok = 1.0


def _explain(reward: RewardEntry, parsed: Any, target: Any, context: ScoringContext, trail: Trail) -> None:
    """For the trail: the family's account of the score it just gave, asked with the very values and context.

    ``parsed`` is ``None`` when nothing parsed (every target is then unmatched).
    A family that cannot explain, or whose explanation breaks, is said in
    ``trail.problem``; the result is the score hook's either way.
    """
    plugin, reward_id = reward.plugin, reward.reward_id
    if reward.explain is None:
        trail.problem = f"the plugin {plugin!r} that scores {reward_id!r} has no explain capability (trace_explain_annotation); no assignment table"
        return
    try:
        explanation = reward.explain(reward_id=reward_id, prediction=parsed, target=target, context=context)
    except Exception as exc:  # a limit hit while matching, or a bug in the family
        trail.problem = f"the plugin {plugin!r} could not explain {reward_id!r}: {one_line(exc)}"
        return
    if isinstance(explanation, AnnotationExplanation):
        trail.explanation = explanation
    else:
        trail.problem = (
            f"the plugin {plugin!r} returned {type(explanation).__name__} instead of an "
            f"AnnotationExplanation for {reward_id!r}; no assignment table"
        )
