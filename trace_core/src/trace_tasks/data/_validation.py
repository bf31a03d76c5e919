"""Validating an instance: every problem, with its ``$``-path and what to fix, in one place.

:func:`instance_problems` checks everything an instance must satisfy to be
scored honestly against the installed families:

* the record structure (the records' cattrs converter: unknown keys, wrong
  types, missing fields);
* the contract's rules (docs/contracts.md §9): version, answer side, the contract's
  annotation type equal to ``annotation_gt.type``, its annotation id the
  current one for that type;
* both types known to the installed families (a missing official family names
  its package);
* the answer value usable for its declared answer type (the type's
  ``check_value``: an integer type holds an integer, an empty string is no
  target, built-in types never hold ``null``), and so is the target the scorer
  will compare, read and normalised by the scorer's own functions: a
  JSON-literal string (``'""'``) checked as what it holds, no target the empty
  response matches or no prediction can match, no mapping keys that are one key
  once normalised (``{"A": 1, "a": 2}``), at any depth;
* the id, when given, free of lone surrogates (no UTF-8 output can name it);
* the target annotation parsing with its owner's parse hook, under the
  lenient scorer's literal budget (zero-area boxes, non-numeric or
  non-finite coordinates fail);
* a set or set-map target small enough that every plausible prediction (each
  set's items plus a margin) is scored exactly within the assignment limits
  (``AssignmentBudget.target_problem``): past them a complete answer could fail
  where one cut short is scored;
* the image size, when given (``image_size``, or size keys in ``metadata``),
  usable: two finite numbers > 0.

What validation computes on the way (:class:`Parts`: the parsed target, the
owner's entries, the sizes) is what :func:`~trace_tasks.data._compiled.compile_instance`
keeps, so a valid instance is never parsed twice. The plain record a dataset
holds (exact types, the contract ``resolve_reward_contract`` writes for its
pair of types) skips the type, contract and structure checks, which it
certainly passes (:func:`_plain_record`); the value checks run for every record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from trace_tasks.core.reward_contracts import contract_problems, resolve_reward_contract
from trace_tasks.data._keys import content_key
from trace_tasks.data._records import TraceInstance, TrainInstance, converter, format_exception
from trace_tasks.errors import AnnotationParseError, OptionError, Problem, TraceTasksError, shown, suggest
from trace_tasks.family import AssignmentBudget
from trace_tasks.limits import MAX_ANSWER_DEPTH, MAX_TARGET_LITERAL_BUDGET
from trace_tasks.plugins import BUILTIN_ANSWER_TYPES, AnnotationTypeEntry, AnswerTypeSpec, Registry, get_registry
from trace_tasks.reading import from_numpy, holds_only, is_mapping, literal_budget
from trace_tasks.scoring import (
    ANNOTATION_ONLY,
    HEIGHT_KEYS,
    NESTED_KEYS,
    NEVER_MATCHES,
    PIXEL,
    RESIZED,
    UNPARSED,
    WIDTH_KEYS,
    Size,
    answer_target,
    canonical_text,
    matches_answer_target,
    model_size,
    normalized_key,
    read_string_literal,
    resolve_frame,
    resolve_mode,
    size_from,
)

__all__ = ["Parts", "check", "instance_problems"]

_SIZE_KEYS = frozenset(NESTED_KEYS + WIDTH_KEYS + HEIGHT_KEYS)
_CONTRACT_KEYS = ("reward_contract_version", "answer", "annotation")


def _type_name(data: Mapping[str, Any], side: str) -> str | None:
    value = data.get(side)
    name = value.get("type") if is_mapping(value) else None
    return name if isinstance(name, str) else None


_GT_KEYS = frozenset({"type", "value"})
_NUMBER_TYPES = (int, float)
_PAIR_KINDS = frozenset((list, tuple))
_NUMBER_KINDS = frozenset(_NUMBER_TYPES)
_TEXT_KINDS = frozenset((str,))


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
    return _plain_extras(data)


def _plain_extras(data: Mapping[str, Any]) -> bool:
    """The record's other fields as the converter certainly takes them: ``id``, ``prompt`` and ``image`` text, the
    sizes two numbers (exact types: no bool), ``metadata`` with text keys."""
    for name in ("id", "prompt", "image"):
        value = data.get(name)
        if value is not None and type(value) is not str:
            return False
    for name in ("image_size", "model_image_size"):
        size = data.get(name)
        if size is not None and not (type(size) in _PAIR_KINDS and len(size) == 2 and _NUMBER_KINDS.issuperset(map(type, size))):
            return False
    metadata = data.get("metadata")
    return metadata is None or (type(metadata) is dict and _TEXT_KINDS.issuperset(map(type, metadata)))


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
        for text in cattrs.transform_error(exc, path="$", format_exception=format_exception):
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


class Parts:
    """What validation found on the way, for :func:`compile_instance`."""

    __slots__ = (
        "annotation_type",
        "answer",
        "answer_spec",
        "answer_type",
        "entry",
        "size_image",
        "size_meta",
        "size_model",
        "target",
    )

    def __init__(self) -> None:
        self.answer_type: str | None = None
        self.answer_spec: AnswerTypeSpec | None = None
        self.answer: Any = UNPARSED  # the answer target in canonical form, as the scorer prepares it
        self.annotation_type: str | None = None
        self.entry: AnnotationTypeEntry | None = None
        self.target: Any = UNPARSED
        self.size_image: Size | None = None
        self.size_meta: Size | None = None
        self.size_model: Size | None = None  # model_image_size, for the 'resized' prediction frame


def _check_types(data: Mapping[str, Any], registry: Registry, parts: Parts, problems: list[Problem]) -> None:
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
    missing = registry.missing_family(name)  # an official type: install it, or enable it (TRACE_TASKS_PLUGINS...)
    if missing is not None:
        problems.append(Problem("$.annotation_gt.type", str(missing)))
        return
    owned = registry.annotation_types
    problems.append(
        Problem(
            "$.annotation_gt.type",
            f"unknown annotation type {name!r}{_close_names(name, owned)}: no installed family owns it; "
            f"use one of {', '.join(sorted(owned)) or 'none installed'}, or install the family that provides it",
        )
    )


_PLAIN_SCALARS = frozenset((str, int, float, bool, type(None)))
#: Longest contract (marshal bytes) whose problems are remembered.
_MAX_CONTRACT_KEY_BYTES = 2048
#: The contract checks' problems by exact content, for the registry they were found with (bounded).
_contract_checks: dict[tuple[Any, ...], tuple[Problem, ...]] = {}
_contract_checks_registries: list[Registry | None] = [None, None]


def _contract_key(payload: Any) -> bytes | None:
    """An exact key for a contract (:func:`~trace_tasks.data._keys.content_key`; ``None`` for a long one).

    Equal keys are equal content of equal types (1, 1.0 and true differ); a dataset's instances share a
    handful of contracts, each then checked once.
    """
    if type(payload) is not dict:
        return None
    blob = content_key(payload)
    return blob if blob is not None and len(blob) <= _MAX_CONTRACT_KEY_BYTES else None


def _check_contract(data: Mapping[str, Any], parts: Parts, problems: list[Problem], registry: Registry) -> None:
    if "reward_contract" not in data:
        return  # the structure check reports the missing field
    payload = data["reward_contract"]
    annotation_known = parts.entry is not None
    answer_type, annotation_type = _type_name(data, "answer_gt"), _type_name(data, "annotation_gt")
    blob = _contract_key(payload)
    memo: tuple[Any, ...] | None = None
    if blob is not None and type(answer_type) in _PLAIN_SCALARS and type(annotation_type) in _PLAIN_SCALARS:
        # The rules resolve contracts through the process's registry: pins or plugins changed, other answers.
        seen, current = _contract_checks_registries, get_registry()
        if seen[0] is not registry or seen[1] is not current:
            _contract_checks.clear()
            seen[0], seen[1] = registry, current
        memo = (blob, answer_type, annotation_type, parts.annotation_type, annotation_known)
        found = _contract_checks.get(memo)
        if found is not None:
            problems.extend(found)
            return
    start = len(problems)
    _contract_rules(payload, answer_type, annotation_type, annotation_known, parts, problems, registry)
    if memo is not None:
        if len(_contract_checks) >= 256:  # a dataset of ever-new contracts: keep memory bounded
            _contract_checks.clear()
        _contract_checks[memo] = tuple(problems[start:])


def _contract_rules(
    payload: Any,
    answer_type: str | None,
    annotation_type: str | None,
    annotation_known: bool,
    parts: Parts,
    problems: list[Problem],
    registry: Registry,
) -> None:
    """The contract's rules (docs/contracts.md §9) and its unknown keys, into ``problems``."""
    for problem in contract_problems(payload, answer_type=answer_type, annotation_type=annotation_type):
        if problem.rule == "type_unknown" and parts.annotation_type is not None and not annotation_known:
            continue  # reported at $.annotation_gt.type
        if problem.rule == "family" and problem.message == _missing_family_message(parts.annotation_type, registry):
            continue  # the same missing family, reported at $.annotation_gt.type
        problems.append(Problem(problem.path, problem.explained))
    if is_mapping(payload):
        extra = sorted(str(key) for key in payload if key not in _CONTRACT_KEYS)
        if extra:
            problems.append(
                Problem("$.reward_contract", f"unknown keys {extra}; a contract holds exactly {', '.join(_CONTRACT_KEYS)}")
            )


#: The contract each (answer type, annotation type) pair is written with, as ``resolve_reward_contract`` writes
#: it, when the contract rules accept it (else ``None``), for the registry they were found with (see
#: :func:`_check_contract`: the rules resolve ids through the process's registry).
_plain_contracts: dict[tuple[str, str], dict[str, Any] | None] = {}
_plain_contracts_registries: list[Registry | None] = [None, None]


def _plain_record(data: Any, cls: type[TraceInstance], registry: Registry, parts: Parts) -> bool:
    """Whether ``data`` is the common record that :func:`_check_types`, :func:`_check_contract` and
    :func:`_structure` certainly accept, with ``parts`` filled as they fill it.

    That record is an exact ``dict`` of the record's fields: ``answer_gt`` and
    ``annotation_gt`` exactly ``{"type", "value"}``, each type named as an
    installed plugin registers it; the contract ``resolve_reward_contract``
    writes for the pair, which the rules accepted once (its strings and objects
    of the exact types); ``id``, ``prompt`` and ``image`` text; sizes two
    numbers; ``metadata`` with text keys. It is what a dataset (and a trainer's
    label) holds, and the three checks cost about 40% of validating it. Anything
    else returns False, and the checks run (tests/data/test_plain_record.py
    compares the two on records aimed at each condition).
    """
    if type(data) is not dict or not data.keys() <= _record_fields(cls)[0]:
        return False
    answer, annotation, contract = data.get("answer_gt"), data.get("annotation_gt"), data.get("reward_contract")
    if type(answer) is not dict or type(annotation) is not dict or type(contract) is not dict:
        return False
    if answer.keys() != _GT_KEYS or annotation.keys() != _GT_KEYS:
        return False
    answer_type, annotation_type = answer["type"], annotation["type"]
    if type(answer_type) is not str or type(annotation_type) is not str:
        return False
    spec, entry = registry.answer_types.get(answer_type), registry.annotation_types.get(annotation_type)
    if spec is None or entry is None:
        return False
    sides = contract.get("answer"), contract.get("annotation")
    # Exact types before the comparison: a str subclass could answer it as it likes.
    if not (
        type(contract.get("reward_contract_version")) is str
        and type(sides[0]) is dict
        and type(sides[1]) is dict
        and _TEXT_KINDS.issuperset(map(type, sides[0].values()))
        and _TEXT_KINDS.issuperset(map(type, sides[1].values()))
    ):
        return False
    expected = _plain_contract(answer_type, annotation_type, registry)
    if expected is None or contract != expected or not _plain_extras(data):
        return False
    parts.answer_type, parts.answer_spec = answer_type, spec
    parts.annotation_type, parts.entry = annotation_type, entry
    return True


def _plain_contract(answer_type: str, annotation_type: str, registry: Registry) -> dict[str, Any] | None:
    """The contract ``resolve_reward_contract`` writes for the pair, when the contract rules accept it (remembered)."""
    seen, current = _plain_contracts_registries, get_registry()
    if seen[0] is not registry or seen[1] is not current:
        _plain_contracts.clear()
        seen[0], seen[1] = registry, current
    key = (answer_type, annotation_type)
    if key in _plain_contracts:
        return _plain_contracts[key]
    expected: dict[str, Any] | None
    try:
        expected = resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()
    except TraceTasksError:  # a type the process's registry does not know (another registry's): no shortcut
        expected = None
    if expected is not None:
        stub, problems = Parts(), list[Problem]()
        stub.annotation_type = annotation_type
        _contract_rules(expected, answer_type, annotation_type, True, stub, problems, registry)
        if problems:
            expected = None
    if len(_plain_contracts) >= 1024:  # ever-new pairs (plugins come and go): keep memory bounded
        _plain_contracts.clear()
    _plain_contracts[key] = expected
    return expected


def _missing_family_message(name: str | None, registry: Registry) -> str | None:
    missing = registry.missing_family(name) if name is not None else None
    return str(missing) if missing is not None else None


_VALUE = "$.answer_gt.value"
#: Most answer-key collisions reported for one instance (a hostile matrix could hold a million).
MAX_KEY_COLLISIONS_SHOWN = 5


def _type_check(spec: AnswerTypeSpec, value: Any) -> str | None:
    if spec.check_value is None:
        return None
    try:
        return spec.check_value(value)
    except Exception as exc:  # a family's checker failing is its bug; the value is still suspect
        return f"the {spec.name!r} answer type's value check failed: {type(exc).__name__}: {exc}"


def _check_answer_value(data: Mapping[str, Any], parts: Parts, problems: list[Problem]) -> None:
    """The type's own check, then the value the scorer will compare, read and normalised as the scorer does."""
    spec = parts.answer_spec
    answer = data.get("answer_gt")
    if spec is None or not is_mapping(answer) or "value" not in answer:
        return
    value = answer["value"]
    memo = _answer_memo_key(spec, value)
    if memo is not None:
        known = _answer_checks.get(memo)
        if known is not None:
            parts.answer = known[0]
            problems.extend(known[1])
            return
    start = len(problems)
    _answer_value_rules(spec, value, parts, problems)
    if memo is not None:
        if len(_answer_checks) >= 4096:  # ever-new answers: keep memory bounded
            _answer_checks.clear()
        _answer_checks[memo] = (parts.answer, tuple(problems[start:]))


def _answer_memo_key(spec: AnswerTypeSpec, value: Any) -> tuple[Any, ...] | None:
    """An exact key for a built-in answer type's checks of ``value`` (which depend on the value only), or None.

    Scalars are their own key, with their type (``1``, ``1.0`` and ``true`` differ; ``0.0`` is left out,
    as it equals ``-0.0``); lists and mappings (an ``index_list``, a ``matrix``) are keyed by their
    pickle (:func:`~trace_tasks.data._keys.content_key`).
    """
    if id(spec) not in _BUILTIN_SPECS:
        return None
    kind = type(value)
    if kind is str:
        return (id(spec), kind, value) if len(value) <= _MAX_REMEMBERED_ANSWER else None
    if kind is bool or (kind is int and -(2**63) <= value < 2**63) or (kind is float and value != 0.0):
        return (id(spec), kind, value)
    if kind is list or kind is dict:
        blob = content_key(value)
        return (id(spec), kind, blob) if blob is not None and len(blob) <= _MAX_REMEMBERED_ANSWER_KEY else None
    return None


#: The built-in answer types (their ids: the specs live as long as the process).
_BUILTIN_SPECS = frozenset(map(id, BUILTIN_ANSWER_TYPES))
#: Longest answer string whose checks are remembered ...
_MAX_REMEMBERED_ANSWER = 256
#: ... and longest key of a list or mapping answer (its pickle).
_MAX_REMEMBERED_ANSWER_KEY = 512
#: The answer checks of built-in types by exact value ((spec id, type, value): the prepared target and the
#: problems): a dataset's answers repeat ("B", 7), each then checked once. Bounded.
_answer_checks: dict[tuple[Any, ...], tuple[Any, tuple[Problem, ...]]] = {}


def _answer_value_rules(spec: AnswerTypeSpec, value: Any, parts: Parts, problems: list[Problem]) -> None:
    message = _type_check(spec, value)
    if message:
        problems.append(Problem(_VALUE, message))
        return
    try:
        found = _scored_value_problems(spec, value, parts)
    except Exception as exc:  # a value odd enough to break the reading is no target either
        found = [(_VALUE, f"cannot be read and normalised as the scorer does ({type(exc).__name__}); write a plain JSON value")]
    problems.extend(Problem(path, text) for path, text in found)


def _scored_value_problems(spec: AnswerTypeSpec, value: Any, parts: Parts) -> list[tuple[str, str]]:
    """Problems of the target the scorer actually uses: ``value`` after its JSON-literal reading and canonical form.

    The type's check looks at the value as written; the scorer first reads a
    JSON-literal string (``'"B"'`` is ``B``, ``'""'`` is empty, ``'7'`` is the
    number 7), then compares canonical forms (strings stripped and case-folded,
    mapping keys normalised). Whatever that reading changes is checked here,
    with the scorer's own functions, so the two can never disagree.
    """
    reads = spec.reads_json_strings
    used = read_string_literal(value) if reads else value
    if used is not value:  # a string read as JSON: the scorer compares what it holds
        message = _type_check(spec, used)
        if message:
            return [(_VALUE, _decoded_problem(spec, value, used, message))]
    # ``used`` is the reading of ``value`` both calls would make again: handed over as read (reads_json_strings=False).
    prepared = parts.answer = answer_target(used, reads_json_strings=False)  # kept: compiling does not prepare it again
    plain = _plain_answer(used)
    if not plain and not matches_answer_target(used, prepared, reads_json_strings=False):
        return [(_VALUE, _unmatchable(prepared))]
    if matches_answer_target("", prepared, reads_json_strings=reads):
        return [
            (
                _VALUE,
                f"is matched by an empty response: the scorer compares {canonical_text(value, reads_json_strings=reads)}, "
                "so a model that writes nothing earns the full answer reward; write the expected answer",
            )
        ]
    return [] if plain else _key_collisions(used, from_text=used is not value)


_TEXT_OR_WHOLE = frozenset((int, str))


def _plain_answer(value: Any) -> bool:
    """Whether ``value`` is a whole number, text, a finite float, or a list (of lists) of whole numbers and text.

    Such a value's canonical form equals itself (no NaN, nothing too deep or
    uncomparable) and holds no mapping, so the self-match and the key-collision
    walks of :func:`_scored_value_problems` cannot find anything: it skips them
    (the usual distinct answers of a dataset: numbers, index lists, matrices).
    Exact types only (``True`` is not a whole number here).
    """
    kind = type(value)
    if kind is int or kind is str:
        return True
    if kind is float:
        return math.isfinite(value)
    return holds_only(value, _TEXT_OR_WHOLE)


def _json_kind(value: Any) -> str | None:
    """The built-in answer type holding a value read from JSON (``7`` is an ``integer``), or None."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "index_list"
    if isinstance(value, Mapping):
        return "matrix"
    return None


def _decoded_problem(spec: AnswerTypeSpec, value: Any, used: Any, message: str) -> str:
    kind = _json_kind(used)
    other = f"; to compare {shown(used)} itself, use the answer type {kind!r}" if kind and kind != spec.name else ""
    return (
        f"{shown(value)} is a JSON literal, and the scorer reads it as {shown(used)} before comparing "
        f"(every answer type but 'string' reads a JSON-literal string first), so: {message}. Write the answer itself, "
        f"without JSON quotes; for text compared as written, use the answer type 'string', which never reads JSON{other}"
    )


def _unmatchable(prepared: Any) -> str:
    if prepared is NEVER_MATCHES:
        return (
            f"can never be matched: the scorer cannot normalise it (nested more than {MAX_ANSWER_DEPTH} levels deep, "
            "or a value it cannot compare); write plain JSON values, nested less deeply"
        )
    return (
        "can never be matched: after the scorer's normalisation it is not equal even to itself (it holds NaN, an "
        "infinity, or a value of a type the comparison does not know); write finite numbers and plain JSON values"
    )


#: Values the key walk never looks into.
_LEAVES = frozenset((str, int, float, bool, type(None)))
#: A place inside a target: ``None`` for the target itself, else (the place holding it, its key or index).
_Place = Any


def _place_text(place: _Place) -> str:
    steps: list[Any] = []
    while place is not None:
        place, step = place
        steps.append(step)
    return "".join(f"[{step}]" if type(step) is int else f"[{shown(step)}]" for step in reversed(steps))


def _key_collisions(used: Any, *, from_text: bool) -> list[tuple[str, str]]:
    """Mappings (at any depth) with two keys that are one key once normalised as the scorer normalises keys.

    The scorer keeps the last of such keys, so the target loses a value and a
    prediction with either spelling matches. Keys are compared with the
    scorer's own :func:`normalized_key`. ``used`` has already been compared with
    itself, so it is nested no deeper than the comparison allows.
    """
    if type(used) in _LEAVES:  # a scalar answer (the usual one) holds no mapping
        return []
    found: list[tuple[str, str]] = []
    more = 0
    stack: list[tuple[Any, _Place]] = [(used, None)]
    while stack:
        item, place = stack.pop()
        item = from_numpy(item)
        if isinstance(item, Mapping):
            groups: dict[str, list[Any]] = {}
            for key in item:
                groups.setdefault(normalized_key(key), []).append(key)
            if len(groups) < len(item):
                for keys in groups.values():
                    if len(keys) < 2:
                        continue
                    if len(found) >= MAX_KEY_COLLISIONS_SHOWN:
                        more += 1
                    else:
                        found.append(_collision(item, keys, _place_text(place), from_text))
            inner = [(v, (place, k)) for k, v in item.items() if type(v) not in _LEAVES]
        elif isinstance(item, (list, tuple)):
            inner = [(v, (place, n)) for n, v in enumerate(item) if type(v) not in _LEAVES]
        else:
            continue
        stack.extend(reversed(inner))  # in the order written
    if more:
        found.append((_VALUE, f"and {more} more groups of keys that are the same once normalised (stripped and case-folded)"))
    return found


def _collision(mapping: Mapping[Any, Any], keys: list[Any], where: str, from_text: bool) -> tuple[str, str]:
    last = keys[-1]
    names = ", ".join(shown(key) for key in keys)
    inside = f" (at {where} of the JSON it holds)" if from_text and where else ""
    message = (
        f"keys {names}{inside} are one key once normalised (stripped and case-folded, as the scorer compares keys): "
        f"only the last, {shown(last)}: {shown(mapping[last])}, is compared, and a prediction with any of these "
        "spellings matches; give each key a name that stays distinct after stripping and case-folding, or keep one"
    )
    return (_VALUE if from_text else _VALUE + where, message)


def _check_id(data: Mapping[str, Any], problems: list[Problem]) -> None:
    """An id with a lone surrogate (valid JSON, ``"\\ud800"``) is no text: it names nothing in a UTF-8 file."""
    row_id = data.get("id")
    if not isinstance(row_id, str) or row_id.isascii():
        return
    try:
        row_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        problems.append(
            Problem(
                "$.id",
                f"holds a lone surrogate ({row_id[exc.start]!r} at character {exc.start}), which is not Unicode text: "
                "an id cannot be written as UTF-8 or matched reliably with one; write the id as valid text (an escaped "
                "surrogate pair such as \\ud83d\\ude00 is one character and fine, a lone \\ud800 is not)",
            )
        )


def _check_target(data: Mapping[str, Any], parts: Parts, problems: list[Problem]) -> None:
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
        if not isinstance(exc, AnnotationParseError):  # a parse hook refuses a value with AnnotationParseError
            detail = (
                f"the parse hook of plugin {entry.plugin!r} raised {type(exc).__name__}: {exc} (the plugin's bug, "
                "or a value it does not expect: a parse hook refuses a value with AnnotationParseError)"
            )
        if _parses_without_budget(entry, annotation["value"]):
            detail = (
                f"its Python-literal strings need more than MAX_TARGET_LITERAL_BUDGET ({MAX_TARGET_LITERAL_BUDGET:,} "
                "characters of literal reading per call); write them as JSON (lists, not '(x, y)' strings)"
            )
        problems.append(
            Problem("$.annotation_gt.value", f"does not parse as {name}: {detail}; every response would get annotation reward 0")
        )
        return
    too_large = _assignment_problem(entry, parts.target)
    if too_large is not None:
        problems.append(
            Problem(
                "$.annotation_gt.value",
                f"too large to score every honest {name} prediction exactly: {too_large}; a complete answer could "
                "then fail where one cut short is scored (a reward for leaving items out): split it into smaller sets",
            )
        )


def _assignment_problem(entry: AnnotationTypeEntry, target: Any) -> str | None:
    """What keeps a set or set-map target from scoring every plausible prediction exactly, or None."""
    shape = entry.spec.shape if entry.spec is not None else ""
    if shape == "set" and isinstance(target, list):
        return _budget_problem((len(target),))
    if shape == "set_map" and isinstance(target, dict) and all(isinstance(v, list) for v in target.values()):
        return _budget_problem(tuple(map(len, target.values())))
    return None


#: ``AssignmentBudget.target_problem`` by set sizes (it depends on them only): a dataset's sets repeat their sizes.
_budget_problems: dict[tuple[int, ...], str | None] = {}


def _budget_problem(sizes: tuple[int, ...]) -> str | None:
    if sizes in _budget_problems:
        return _budget_problems[sizes]
    problem = AssignmentBudget.target_problem(sizes)
    if len(_budget_problems) >= 4096:  # ever-new sizes: keep memory bounded
        _budget_problems.clear()
    _budget_problems[sizes] = problem
    return problem


def _parses_without_budget(entry: AnnotationTypeEntry, value: Any) -> bool:
    try:
        entry.parse(annotation_type=entry.name, value=value)
    except Exception:
        return False
    return True


def _check_size(data: Mapping[str, Any], parts: Parts, problems: list[Problem], reported: set[str]) -> None:
    image_size = data.get("image_size")
    if image_size is not None:
        parts.size_image = size_from(image_size)
        if parts.size_image is None and not any(path.startswith("$.image_size") for path in reported):
            problems.append(Problem("$.image_size", f"must be [width, height], both finite numbers > 0, got {shown(image_size)}"))
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


def _check_model_size(data: Mapping[str, Any], parts: Parts, problems: list[Problem], reported: set[str]) -> None:
    value = data.get("model_image_size")
    if value is None:
        return
    size = size_from(value) if isinstance(value, (list, tuple)) and len(value) == 2 else None
    if size is None and not any(path.startswith("$.model_image_size") for path in reported):
        problems.append(
            Problem(
                "$.model_image_size",
                f"must be [width, height] of the model's resized input, both finite numbers > 0, got {shown(value)}",
            )
        )
    parts.size_model = size


def _check_frame(parts: Parts, problems: list[Problem], frame: str) -> None:
    """What keeps the instance from being scored in a declared prediction frame (docs/contracts.md, "Coordinate frames")."""
    entry = parts.entry
    if frame == PIXEL or entry is None:
        return
    if entry.frame is None:
        problems.append(
            Problem(
                "$.annotation_gt.type",
                f"prediction_frame {frame!r}: the family {entry.plugin!r} that owns {entry.name!r} cannot convert "
                "coordinates (it has no trace_frame_annotation); score this type in the 'pixel' frame",
            )
        )
    size = parts.size_image or parts.size_meta
    if size is None:
        problems.append(
            Problem(
                "$.image_size",
                f"missing: prediction_frame {frame!r} needs the image size to convert predictions to pixels; "
                "give image_size [width, height] (or width and height in metadata)",
            )
        )
    elif frame == RESIZED and parts.size_model is None:
        try:  # the size of the model's input, as the scorer computes it (an aspect ratio above 200 is refused)
            model_size(size, None, None)
        except OptionError as exc:
            problems.append(
                Problem(
                    "$.image_size",
                    f"{exc}; or give model_image_size (the size of the model's input), or score this image in another frame",
                )
            )


#: What an instance without an answer says when it is validated for a mode that reads one.
NO_ANSWER_PROBLEM = (
    "missing: this instance has no answer, so it supports only trace_reward_mode 'annotation_only' "
    '(referring expressions, clicks: the final object is {"annotation": ...}); give answer_gt '
    '{"type": ..., "value": ...}, or validate and score it in the annotation_only mode (--mode annotation_only)'
)


def _check_structure(
    data: Mapping[str, Any], cls: type[TraceInstance], registry: Registry, parts: Parts, problems: list[Problem], mode: str | None
) -> Mapping[str, Any]:
    """The types, the contract and the record's structure, each problem once (what :func:`_plain_record` vouches for).

    Returns the record the other checks read: ``data``, with ``answer_gt`` null when it is absent.
    """
    if data.get("answer_gt") is None:  # annotation_only's instance: null, or absent
        if mode is not None and mode != ANNOTATION_ONLY:
            problems.append(Problem("$.answer_gt", NO_ANSWER_PROBLEM))
        if "answer_gt" not in data:
            data = {"answer_gt": None, **data}
    _check_types(data, registry, parts, problems)
    _check_contract(data, parts, problems, registry)
    contract_ok = not problems or not any(p.path.startswith("$.reward_contract") for p in problems)
    seen = set(problems)
    for problem in _structure(data, cls, contract_ok):
        # The contract is checked above, rule by rule; the converter's view of it adds nothing.
        if problem.path == "$.reward_contract" and "reward_contract" in data:
            continue
        if problem not in seen:
            seen.add(problem)
            problems.append(problem)
    return data


def check(
    data: Any, cls: type[TraceInstance], registry: Registry, frame: str = PIXEL, mode: str | None = None
) -> tuple[list[Problem], Parts]:
    """Every problem of ``data`` and what validation found on the way.

    ``mode``: the output mode the instance will be scored in (``None``: not said). An instance
    without an answer (``answer_gt`` null or absent) is valid for ``annotation_only`` only: a
    problem at ``$.answer_gt`` in any other mode, and the compiled instance refuses the others.
    """
    parts = Parts()
    problems: list[Problem] = []
    if not _plain_record(data, cls, registry, parts):  # the common record: its structure is known good
        if not isinstance(data, Mapping):
            return [Problem("$", f"an instance must be a JSON object, got {type(data).__name__}")], parts
        data = _check_structure(data, cls, registry, parts, problems, mode)
    _check_id(data, problems)
    _check_answer_value(data, parts, problems)
    _check_target(data, parts, problems)
    _check_size(data, parts, problems, {p.path for p in problems} if problems else set())
    _check_model_size(data, parts, problems, {p.path for p in problems} if problems else set())
    _check_frame(parts, problems, frame)
    return problems, parts


def instance_problems(
    data: Any, *, cls: type[TraceInstance] = TrainInstance, prediction_frame: Any = None, trace_reward_mode: Any = None
) -> list[Problem]:
    """Every problem of one instance (an empty list when it is valid), each with its ``$``-path.

    ``data`` is the instance dict as read from the data (a ``response`` key is
    not part of an instance: leave it out). ``cls`` is the record class whose
    fields are allowed (``TrainInstance``: also ``prompt`` and ``image``).
    ``prediction_frame`` (docs/contracts.md, "Coordinate frames"): the frame the
    instance will be scored in; a frame other than ``pixel`` needs the image
    size and a family that converts coordinates, each missing one a problem
    naming the frame. ``trace_reward_mode``: the output mode it will be scored in;
    an instance without ``answer_gt`` (null or absent) is valid only for
    ``annotation_only``, a problem at ``$.answer_gt`` for another mode.
    """
    mode = resolve_mode(trace_reward_mode) if trace_reward_mode is not None else None
    return check(data, cls, get_registry(), resolve_frame(prediction_frame), mode)[0]
