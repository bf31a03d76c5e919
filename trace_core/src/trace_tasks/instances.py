"""Validated, compiled instances: one validation of an instance, in one place.

:func:`instance_problems` checks everything an instance must satisfy to be
scored honestly against the installed families, and reports every problem with
its ``$``-path and what to fix:

* the record structure (the records' cattrs converter: unknown keys, wrong
  types, missing fields);
* the contract's rules (docs/contracts.md §9): version, answer side, the contract's
  annotation type equal to ``annotation_gt.type``, its annotation id the
  current one for that type;
* both types known to the installed families (a missing official family names
  its package);
* the answer value usable for its declared answer type (the type's
  ``check_value``: an integer type holds an integer, an empty string is no
  target, built-in types never hold ``null``);
* the target annotation parsing with its owner's parse hook (zero-area boxes,
  non-numeric or non-finite coordinates fail);
* the image size, when given (``image_size``, or size keys in ``metadata``),
  usable: two finite numbers > 0.

:func:`compile_instance` validates and keeps what validation computed: the
parsed target, the owner's parse and score entries, the answer's canonical
form, the image size and the point half-life. :meth:`CompiledInstance.score`
then gives exactly :func:`trace_tasks.score_trace_response`'s dict for the same
inputs without parsing the ground truth again, and
:meth:`CompiledInstance.score_group` scores a GRPO group (one instance, N
responses). :class:`InstanceCache` compiles by content, bounded, so a group of
rollouts (or a dataset visited every epoch) pays for its ground truth once.

``score_trace_response`` stays the lenient low-level scorer (broken ground
truth gives zero reward, never an exception); tools that read instances from
data use this module (``docs/contracts.md §12.3``, "Which function to call").
"""

from __future__ import annotations

import collections
import json
import pickle
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import cattrs

from trace_tasks.answers import answer_target, matches_answer_target
from trace_tasks.core.reward_contracts import contract_problems
from trace_tasks.core.reward_scoring import (
    UNPARSED,
    AnnotationResult,
    _check_response,
    compose_result,
    extract_response,
    parse_prediction,
    score_parsed,
    score_trace_response,
    scoring_context,
)
from trace_tasks.distance import half_life_px
from trace_tasks.errors import MissingFamilyError, RecordError, suggest
from trace_tasks.image_size import HEIGHT_KEYS, NESTED_KEYS, WIDTH_KEYS, size_from
from trace_tasks.limits import MAX_LITERAL_BUDGET, MAX_TARGET_LITERAL_BUDGET
from trace_tasks.literals import literal_budget
from trace_tasks.numpy_values import is_mapping
from trace_tasks.options import ScoringOptions, resolve_options
from trace_tasks.plugins import OFFICIAL_TYPES, AnnotationTypeEntry, Registry, RewardEntry, get_registry
from trace_tasks.records import TraceInstance, TrainInstance, converter
from trace_tasks.specs import AnswerTypeSpec, ScoringContext

__all__ = ["CompiledInstance", "InstanceCache", "InstanceError", "Problem", "compile_instance", "instance_problems"]

Size = tuple[float, float]
_SIZE_KEYS = frozenset(NESTED_KEYS + WIDTH_KEYS + HEIGHT_KEYS)
_CONTRACT_KEYS = ("reward_contract_version", "answer", "annotation")


@attrs.frozen(slots=True)
class Problem:
    """One problem: the JSON path (``$.annotation_gt.type``) and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InstanceError(RecordError):
    """An instance that cannot be scored honestly; ``problems`` lists every problem.

    The message is ``invalid instance: PATH: MESSAGE; PATH: MESSAGE...``, after
    the record's name when one is given (``record``). ``path`` is the first
    problem's path. A :class:`~trace_tasks.errors.RecordError`, hence a ``ValueError``.
    """

    def __init__(self, problems: Sequence[Problem], *, record: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        listed = "; ".join(str(p) for p in self.problems) or "no problem recorded"
        super().__init__(f"invalid instance: {listed}", record=record)
        self.path = self.problems[0].path if self.problems else "$"

    def __reduce__(self) -> Any:  # picklable across process pools and Ray
        return (_rebuild_error, (self.problems, self.record))


def _rebuild_error(problems: tuple[Problem, ...], record: str | None) -> InstanceError:
    return InstanceError(problems, record=record)


# --------------------------------------------------------------------------- validation


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(data: Mapping[str, Any], side: str) -> str | None:
    value = data.get(side)
    name = value.get("type") if is_mapping(value) else None
    return name if isinstance(name, str) else None


def _format_exception(exc: BaseException, type_: Any) -> str:
    # cattrs' default says only "invalid value for type"; keep the hooks' own messages.
    if isinstance(exc, KeyError):
        return "required field missing"
    return str(exc) or f"invalid value ({type(exc).__name__})"


_GT_KEYS = frozenset({"type", "value"})
_NUMBER_TYPES = (int, float)


def _plain_gt(value: Any) -> bool:
    return type(value) is dict and value.keys() == _GT_KEYS and type(value["type"]) is str and bool(value["type"].strip())


def _plainly_structured(data: Mapping[str, Any], cls: type[TraceInstance], contract_ok: bool) -> bool:
    """True when ``data`` is a plain JSON-like record the converter certainly accepts.

    A narrower test than the converter's rules (exact ``dict``/``str``/number
    types only), so the common valid record skips cattrs; anything else goes
    through the converter, which gives the messages.
    """
    if type(data) is not dict or not contract_ok:
        return False
    fields = _record_fields(cls)
    if not data.keys() <= fields[0] or not fields[1] <= data.keys():
        return False
    if not (_plain_gt(data["answer_gt"]) and _plain_gt(data["annotation_gt"]) and type(data["reward_contract"]) is dict):
        return False
    for name in ("id", "prompt", "image"):
        value = data.get(name)
        if value is not None and type(value) is not str:
            return False
    size = data.get("image_size")
    if size is not None and not (
        type(size) in (list, tuple)
        and len(size) == 2
        and all(type(side) in _NUMBER_TYPES for side in size)  # exact types: no bool
    ):
        return False
    metadata = data.get("metadata")
    return metadata is None or (type(metadata) is dict and all(type(key) is str for key in metadata))


_fields_cache: dict[type, tuple[frozenset[str], frozenset[str]]] = {}


def _record_fields(cls: type[TraceInstance]) -> tuple[frozenset[str], frozenset[str]]:
    """(every field name, the required ones) of a record class."""
    fields = _fields_cache.get(cls)
    if fields is None:
        every = attrs.fields(cls)
        fields = _fields_cache[cls] = (
            frozenset(f.name for f in every),
            frozenset(f.name for f in every if f.default is attrs.NOTHING),
        )
    return fields


def _structure(data: Mapping[str, Any], cls: type[TraceInstance], contract_ok: bool = False) -> list[Problem]:
    """Problems structuring ``data`` with the records converter, each with its path."""
    if _plainly_structured(data, cls, contract_ok):
        return []
    try:
        converter.structure(dict(data), cls)
        return []
    except cattrs.BaseValidationError as exc:
        problems = []
        for text in cattrs.transform_error(exc, path="$", format_exception=_format_exception):
            message, _, path = text.rpartition(" @ ")
            problems.append(Problem(path or "$", message or text))
        return problems
    except (ValueError, TypeError) as exc:
        return [Problem("$", str(exc))]


def _close_names(name: str, known: Mapping[str, Any]) -> str:
    lowered = name.lower()
    if lowered != name and lowered in known:
        return f" (did you mean {lowered!r}? type names are lower case)"
    return suggest(name, known)


class _Parts:
    """What validation found on the way, for :func:`compile_instance`."""

    __slots__ = ("annotation_type", "answer_spec", "answer_type", "entry", "size_image", "size_meta", "target")

    def __init__(self) -> None:
        self.answer_type: str | None = None
        self.answer_spec: AnswerTypeSpec | None = None
        self.annotation_type: str | None = None
        self.entry: AnnotationTypeEntry | None = None
        self.target: Any = UNPARSED
        self.size_image: Size | None = None
        self.size_meta: Size | None = None


def _check_types(data: Mapping[str, Any], registry: Registry, parts: _Parts, problems: list[Problem]) -> None:
    answer_type = _type_name(data, "answer_gt")
    if answer_type is not None and answer_type.strip():
        name = answer_type.strip()
        parts.answer_type = name
        parts.answer_spec = registry.answer_types.get(name)
        if parts.answer_spec is None:
            known = registry.answer_types
            problems.append(
                Problem(
                    "$.answer_gt.type",
                    f"unknown answer type {answer_type!r}{_close_names(name, known)}; registered: {', '.join(sorted(known))}",
                )
            )
    annotation_type = _type_name(data, "annotation_gt")
    if annotation_type is None or not annotation_type.strip():
        return  # the structure check reports it
    name = annotation_type.strip()
    parts.annotation_type = name
    parts.entry = registry.annotation_types.get(name)
    if parts.entry is not None:
        return
    if name in OFFICIAL_TYPES:
        problems.append(Problem("$.annotation_gt.type", str(MissingFamilyError(name, OFFICIAL_TYPES[name]))))
        return
    owned = registry.annotation_types
    problems.append(
        Problem(
            "$.annotation_gt.type",
            f"unknown annotation type {name!r}{_close_names(name, owned)}: no installed family owns it; "
            f"use one of {', '.join(sorted(owned)) or 'none installed'}, or install the family that provides it",
        )
    )


def _check_contract(data: Mapping[str, Any], parts: _Parts, problems: list[Problem]) -> None:
    if "reward_contract" not in data:
        return  # the structure check reports the missing field
    payload = data["reward_contract"]
    annotation_known = parts.entry is not None
    for problem in contract_problems(
        payload, answer_type=_type_name(data, "answer_gt"), annotation_type=_type_name(data, "annotation_gt")
    ):
        if problem.rule == "type_unknown" and parts.annotation_type is not None and not annotation_known:
            continue  # reported at $.annotation_gt.type
        if problem.rule == "family" and problem.message == _missing_family_message(parts.annotation_type):
            continue  # the same missing family, reported at $.annotation_gt.type
        problems.append(Problem(problem.path, problem.explained))
    if is_mapping(payload):
        extra = sorted(str(key) for key in payload if key not in _CONTRACT_KEYS)
        if extra:
            problems.append(
                Problem("$.reward_contract", f"unknown keys {extra}; a contract holds exactly {', '.join(_CONTRACT_KEYS)}")
            )


def _missing_family_message(name: str | None) -> str | None:
    if name is None or name not in OFFICIAL_TYPES:
        return None
    return str(MissingFamilyError(name, OFFICIAL_TYPES[name]))


def _check_answer_value(data: Mapping[str, Any], parts: _Parts, problems: list[Problem]) -> None:
    spec = parts.answer_spec
    answer = data.get("answer_gt")
    if spec is None or spec.check_value is None or not is_mapping(answer) or "value" not in answer:
        return
    try:
        message = spec.check_value(answer["value"])
    except Exception as exc:  # a family's checker failing is its bug; the value is still suspect
        message = f"the {spec.name!r} answer type's value check failed: {type(exc).__name__}: {exc}"
    if message:
        problems.append(Problem("$.answer_gt.value", message))


def _check_target(data: Mapping[str, Any], parts: _Parts, problems: list[Problem]) -> None:
    entry = parts.entry
    annotation = data.get("annotation_gt")
    if entry is None or not is_mapping(annotation) or "value" not in annotation:
        return
    name = entry.name
    try:
        # Under the lenient scorer's budget for the caller's literal strings, so a valid
        # instance scores the same compiled as through score_trace_response.
        with literal_budget([MAX_TARGET_LITERAL_BUDGET]):
            parts.target = entry.parse(annotation_type=name, value=annotation["value"])
    except Exception as exc:  # AnnotationParseError, or whatever a broken value provokes
        detail = str(exc) or type(exc).__name__
        if _parses_without_budget(entry, annotation["value"]):
            detail = (
                f"its Python-literal strings need more than MAX_TARGET_LITERAL_BUDGET ({MAX_TARGET_LITERAL_BUDGET:,} "
                "characters of literal reading per call); write them as JSON (lists, not '(x, y)' strings)"
            )
        problems.append(
            Problem("$.annotation_gt.value", f"does not parse as {name}: {detail}; every response would get annotation reward 0")
        )


def _parses_without_budget(entry: AnnotationTypeEntry, value: Any) -> bool:
    try:
        entry.parse(annotation_type=entry.name, value=value)
    except Exception:
        return False
    return True


def _check_size(data: Mapping[str, Any], parts: _Parts, problems: list[Problem], reported: set[str]) -> None:
    image_size = data.get("image_size")
    if image_size is not None:
        parts.size_image = size_from(image_size)
        if parts.size_image is None and not any(path.startswith("$.image_size") for path in reported):
            problems.append(
                Problem("$.image_size", f"must be [width, height], both finite numbers > 0, got {_shown(image_size)}")
            )
    metadata = data.get("metadata")
    if metadata is not None:
        parts.size_meta = size_from(metadata)
        if (
            parts.size_meta is None
            and parts.size_image is None
            and is_mapping(metadata)
            and any(key in _SIZE_KEYS for key in metadata)
        ):
            keys = sorted(str(key) for key in metadata if key in _SIZE_KEYS)
            problems.append(
                Problem(
                    "$.metadata",
                    f"has image size keys {keys} but no usable size: give [width, height] (or width and height), "
                    "finite numbers > 0; without one the point half-life falls back to 32 px",
                )
            )


def _check(data: Any, cls: type[TraceInstance], registry: Registry) -> tuple[list[Problem], _Parts]:
    parts = _Parts()
    if not isinstance(data, Mapping):
        return [Problem("$", f"an instance must be a JSON object, got {type(data).__name__}")], parts
    problems: list[Problem] = []
    _check_types(data, registry, parts, problems)
    _check_contract(data, parts, problems)
    contract_ok = not any(p.path.startswith("$.reward_contract") for p in problems)
    seen = set(problems)
    for problem in _structure(data, cls, contract_ok):
        # The contract is checked above, rule by rule; the converter's view of it adds nothing.
        if problem.path == "$.reward_contract" and "reward_contract" in data:
            continue
        if problem not in seen:
            seen.add(problem)
            problems.append(problem)
    _check_answer_value(data, parts, problems)
    _check_target(data, parts, problems)
    _check_size(data, parts, problems, {p.path for p in problems})
    return problems, parts


@attrs.frozen(slots=True)
class InstanceReport:
    """Validation with what it parsed on the way: every problem, and the target and image size when found.

    ``target`` is the owner's parse of ``annotation_gt.value`` (``None`` when it
    did not parse or its type is unknown); ``annotation_type`` the stripped type
    name; ``image_size`` the size the scorer would find in the instance. Used by
    ``trace-tasks validate`` for its image-frame check.
    """

    problems: tuple[Problem, ...]
    annotation_type: str | None = None
    target: Any = None
    parsed: bool = False
    image_size: Size | None = None


def instance_report(data: Any, *, cls: type[TraceInstance] = TrainInstance) -> InstanceReport:
    """:func:`instance_problems`, plus the parsed target and the image size."""
    problems, parts = _check(data, cls, get_registry())
    parsed = parts.target is not UNPARSED
    return InstanceReport(
        tuple(problems),
        parts.annotation_type if parts.entry is not None else None,
        parts.target if parsed else None,
        parsed,
        parts.size_image or parts.size_meta,
    )


def instance_problems(data: Any, *, cls: type[TraceInstance] = TrainInstance) -> list[Problem]:
    """Every problem of one instance (an empty list when it is valid), each with its ``$``-path.

    ``data`` is the instance dict as read from the data (a ``response`` key is
    not part of an instance: leave it out). ``cls`` is the record class whose
    fields are allowed (``TrainInstance``: also ``prompt`` and ``image``).
    """
    return _check(data, cls, get_registry())[0]


def compile_instance(data: Mapping[str, Any], *, record: str | None = None) -> CompiledInstance:
    """Validate ``data`` (a ``TrainInstance`` dict) and compile it for scoring.

    Raises :class:`InstanceError` listing every problem (``record`` names the
    record in the message, e.g. ``"instances.jsonl line 3"``).
    """
    registry = get_registry()
    problems, parts = _check(data, TrainInstance, registry)
    if problems:
        raise InstanceError(problems, record=record)
    return CompiledInstance._build(data, parts, registry)


# --------------------------------------------------------------------------- compiled instances

_DEFAULT_MODE = "answer_and_annotation"
_DEFAULT_FORMULA = "gated"


@attrs.frozen(slots=True, eq=False, repr=False)
class CompiledInstance:
    """A validated instance with its ground truth prepared once; build it with :func:`compile_instance`.

    ``data`` is the instance as given (for reporting; treat it as read-only),
    ``target`` the target annotation as its owner parsed it, ``annotation_entry``
    and ``reward_entry`` the owner's parse entry and the current reward's score
    entry, ``answer_spec`` the answer type, ``image_size`` the size found in the
    instance's own ``image_size`` or ``metadata`` (``None`` when none) and
    ``half_life_px`` the point half-life it gives (when no option overrides it).
    """

    data: Mapping[str, Any]
    answer_spec: AnswerTypeSpec
    annotation_entry: AnnotationTypeEntry
    reward_entry: RewardEntry
    target: Any
    image_size: Size | None
    half_life_px: float
    _answer: Any
    _size_image: Size | None
    _size_meta: Size | None
    _context: ScoringContext
    _registry: Registry

    @classmethod
    def _build(cls, data: Mapping[str, Any], parts: _Parts, registry: Registry) -> CompiledInstance:
        assert parts.answer_spec is not None and parts.entry is not None and parts.target is not UNPARSED
        spec, entry = parts.answer_spec, parts.entry
        size = parts.size_image or parts.size_meta
        context = ScoringContext(half_life_px(size), size)
        return cls(
            data,
            spec,
            entry,
            registry.reward_ids[entry.current_reward_id],
            parts.target,
            size,
            context.half_life_px,
            answer_target(data["answer_gt"]["value"], reads_json_strings=spec.reads_json_strings),
            parts.size_image,
            parts.size_meta,
            context,
            registry,
        )

    @property
    def answer_type(self) -> str:
        return self.answer_spec.name

    @property
    def annotation_type(self) -> str:
        return self.annotation_entry.name

    def __repr__(self) -> str:
        return f"CompiledInstance(id={self.data.get('id')!r}, answer_type={self.answer_type!r}, annotation_type={self.annotation_type!r})"

    def scoring_kwargs(self) -> dict[str, Any]:
        """The instance's keyword arguments of ``score_trace_response`` (what :meth:`score` equals)."""
        data = self.data
        return {
            "answer_gt": data["answer_gt"],
            "annotation_gt": data["annotation_gt"],
            "reward_contract": data["reward_contract"],
            "image_size": data.get("image_size"),
            "metadata": data.get("metadata"),
        }

    def score(
        self,
        response: str,
        *,
        trace_reward_mode: Any = _DEFAULT_MODE,
        answer_weight: float = 0.5,
        annotation_weight: float = 0.5,
        format_weight: float = 0.0,
        trace_annotation_reward_formula: Any = _DEFAULT_FORMULA,
        point_half_life_px: Any = None,
        image_size: Any = None,
        image_sizes: Any = None,
        metadata: Any = None,
        extra_info: Any = None,
    ) -> dict[str, float]:
        """Score one response: exactly ``score_trace_response(response=response, **instance fields, **options)``.

        The options are ``score_trace_response``'s, with its defaults and errors
        (``ValueError`` for an invalid option, ``TypeError`` for a non-string
        response). ``image_size`` and ``metadata`` given here replace the
        instance's own (``None`` keeps them); ``image_sizes`` and ``extra_info``
        are further size sources, in the scorer's order.
        """
        opts = resolve_options(
            trace_reward_mode,
            answer_weight,
            annotation_weight,
            format_weight,
            trace_annotation_reward_formula,
            point_half_life_px,
        )
        text = _check_response(response)
        sizes = (
            None
            if image_size is None and image_sizes is None and metadata is None and extra_info is None
            else (image_size, image_sizes, metadata, extra_info)
        )
        registry = get_registry()
        if registry is not self._registry:
            return self._lenient(
                text,
                opts,
                sizes,
                point_half_life_px,
                trace_reward_mode,
                answer_weight,
                annotation_weight,
                format_weight,
                trace_annotation_reward_formula,
            )
        return self._score(text, opts, registry, sizes)

    def score_group(
        self,
        responses: Sequence[str],
        *,
        trace_reward_mode: Any = _DEFAULT_MODE,
        answer_weight: float = 0.5,
        annotation_weight: float = 0.5,
        format_weight: float = 0.0,
        trace_annotation_reward_formula: Any = _DEFAULT_FORMULA,
        point_half_life_px: Any = None,
        image_size: Any = None,
        image_sizes: Any = None,
        metadata: Any = None,
        extra_info: Any = None,
    ) -> list[dict[str, float]]:
        """Score a group of responses to this instance (a GRPO group), in order; options as for :meth:`score`.

        Options are validated once, and every response is checked to be a
        string before any is scored.
        """
        if isinstance(responses, (str, bytes)):
            raise TypeError("responses must be a sequence of strings (the group's decoded outputs), not one string")
        opts = resolve_options(
            trace_reward_mode,
            answer_weight,
            annotation_weight,
            format_weight,
            trace_annotation_reward_formula,
            point_half_life_px,
        )
        texts = [_check_response(response) for response in responses]
        sizes = (
            None
            if image_size is None and image_sizes is None and metadata is None and extra_info is None
            else (image_size, image_sizes, metadata, extra_info)
        )
        registry = get_registry()
        if registry is not self._registry:
            return [
                self._lenient(
                    text,
                    opts,
                    sizes,
                    point_half_life_px,
                    trace_reward_mode,
                    answer_weight,
                    annotation_weight,
                    format_weight,
                    trace_annotation_reward_formula,
                )
                for text in texts
            ]
        score = self._score
        return [score(text, opts, registry, sizes) for text in texts]

    def _score(self, text: str, opts: ScoringOptions, registry: Registry, sizes: tuple[Any, ...] | None) -> dict[str, float]:
        # The lenient scorer's steps (reward_scoring), with the ground-truth work already done.
        literal_left = [MAX_LITERAL_BUDGET]
        ext = extract_response(text, opts, literal_left)
        reads_json = self.answer_spec.reads_json_strings
        answer_reward = 1.0 if matches_answer_target(ext.answer(text), self._answer, reads_json_strings=reads_json) else 0.0
        entry = self.annotation_entry
        ann = AnnotationResult(entry.name)
        payload = ext.payload
        prediction = payload.get("annotation") if payload is not None else None
        if prediction is not None:
            parsed = parse_prediction(entry.parse, entry.name, prediction, literal_left)
            if parsed is not UNPARSED:
                score_parsed(ann, self.reward_entry, parsed, self.target, self._context_for(opts, sizes))
        return compose_result(opts, registry, ext, answer_reward, 1.0, ann)

    def _context_for(self, opts: ScoringOptions, sizes: tuple[Any, ...] | None) -> ScoringContext:
        if sizes is None:
            if opts.point_half_life_px is None:
                return self._context
            return scoring_context(self.image_size, opts.point_half_life_px)
        return scoring_context(self._find_size(*sizes), opts.point_half_life_px)

    def _find_size(self, image_size: Any, image_sizes: Any, metadata: Any, extra_info: Any) -> Size | None:
        """``find_image_size(image_size, image_sizes, metadata, extra_info)`` with the instance's own sizes reused."""
        size = size_from(image_size) if image_size is not None else self._size_image
        if size is None and image_sizes is not None:
            size = size_from(image_sizes)
        if size is None:
            size = size_from(metadata) if metadata is not None else self._size_meta
        if size is None and extra_info is not None:
            size = size_from(extra_info)
        return size

    def _lenient(self, text: str, opts: ScoringOptions, sizes: tuple[Any, ...] | None, *raw_options: Any) -> dict[str, float]:
        # The plugins were reloaded since compiling (a new pin, a family added): the prepared
        # target may belong to another registry, so score the instance as given.
        kwargs = self.scoring_kwargs()
        hl, mode, aw, nw, fw, formula = raw_options
        if sizes is not None:
            image_size, image_sizes, metadata, extra_info = sizes
            if image_size is not None:
                kwargs["image_size"] = image_size
            if metadata is not None:
                kwargs["metadata"] = metadata
            kwargs["image_sizes"], kwargs["extra_info"] = image_sizes, extra_info
        return score_trace_response(
            response=text,
            trace_reward_mode=mode,
            answer_weight=aw,
            annotation_weight=nw,
            format_weight=fw,
            trace_annotation_reward_formula=formula,
            point_half_life_px=hl,
            **kwargs,
        )


# --------------------------------------------------------------------------- cache


def _content_key(data: Any) -> str:
    """The canonical JSON of an instance: equal content, equal key (key order ignored; 1, 1.0 and true differ)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _fast_key(data: Any) -> bytes | None:
    """The instance's pickle: a cheap exact key for the same content built the same way (``None`` if none).

    Writing JSON costs about four times as much (every float goes through
    ``repr``), so a repeated instance is found through its pickle first; equal
    pickles always have equal canonical JSON.
    """
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None


class InstanceCache:
    """Compiled instances by content: a bounded LRU keyed by the instance's canonical JSON.

    A GRPO group of 8-16 rollouts, or a dataset seen every epoch, pays for its
    ground truth once. Invalid instances are remembered too: :meth:`compile`
    raises the same :class:`InstanceError` again (naming the new ``record``).
    An instance that is not JSON-serialisable (numpy values, sets) is compiled
    without the cache. The cache empties itself when the plugin registry is
    rebuilt. Safe to share between threads.

    Lookups go through the instance's pickle first (cheap, exact for content
    built the same way), then its canonical JSON (key order ignored).
    """

    def __init__(self, maxsize: int = 4096) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 0:
            raise ValueError(f"maxsize must be a non-negative integer, got {maxsize!r}")
        self.maxsize = maxsize
        self._entries: collections.OrderedDict[str, CompiledInstance | tuple[Problem, ...]] = collections.OrderedDict()
        self._fast: collections.OrderedDict[bytes, str] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._registry: Registry | None = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._fast.clear()

    def _lookup(self, fast: bytes | None, key: str | None, registry: Registry) -> tuple[str | None, Any]:
        """(the canonical key when known, the cached entry or None); call with the lock held."""
        if self._registry is not registry:
            self._entries.clear()
            self._fast.clear()
            self._registry = registry
        if key is None and fast is not None:
            key = self._fast.get(fast)
            if key is not None:
                self._fast.move_to_end(fast)
        entry = self._entries.get(key) if key is not None else None
        if entry is not None:
            self._entries.move_to_end(key)  # type: ignore[arg-type]
            self.hits += 1
        return key, entry

    def _store(self, fast: bytes | None, key: str, entry: Any, registry: Registry) -> None:
        """Remember ``entry`` (bounded); call with the lock held."""
        if not self.maxsize or self._registry is not registry:
            return
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
        if fast is not None:
            self._fast[fast] = key
            self._fast.move_to_end(fast)
            while len(self._fast) > self.maxsize:
                self._fast.popitem(last=False)

    def compile(self, data: Mapping[str, Any], *, record: str | None = None) -> CompiledInstance:
        """The compiled instance of ``data``, from the cache when the same content was compiled before.

        Raises :class:`InstanceError` for an invalid instance (cached by content as well).
        """
        if not self.maxsize:
            return compile_instance(data, record=record)
        registry = get_registry()
        fast = _fast_key(data)
        with self._lock:
            key, entry = self._lookup(fast, None, registry)
        if entry is None and key is None:
            try:
                key = _content_key(data)
            except (TypeError, ValueError, RecursionError):  # not JSON: compile it uncached
                return compile_instance(data, record=record)
            with self._lock:
                key, entry = self._lookup(None, key, registry)
                if entry is not None and fast is not None and key is not None:
                    self._store(fast, key, entry, registry)  # the same content, built another way
        if entry is None:
            try:
                entry = compile_instance(data)
            except InstanceError as exc:
                entry = exc.problems
            with self._lock:
                self.misses += 1
                self._store(fast, key, entry, registry)  # type: ignore[arg-type]
        if isinstance(entry, tuple):
            raise InstanceError(entry, record=record)
        return entry
