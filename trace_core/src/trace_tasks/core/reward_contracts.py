"""Reward contracts: resolved by the builder from the public types, versioned, validated.

Task code never hand-authors a ``reward_contract``; it calls
:func:`resolve_reward_contract`. The resolver table is whatever the installed
families declare; with the three official families it is exactly the table of
``docs/contracts.md §10``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.errors import ContractError, MissingFamilyError, UnknownTypeError, listed, shown
from trace_tasks.plugins import ANSWER_REWARD_CONTRACT_ID, ANSWER_VERSIONS, PINS_ENV, Registry, get_registry

REWARD_CONTRACT_VERSION = "v0"

__all__ = [
    "ANSWER_REWARD_CONTRACT_ID",
    "REWARD_CONTRACT_VERSION",
    "ContractProblem",
    "RewardContract",
    "RewardContractSide",
    "contract_problems",
    "resolve_annotation_reward_contract_id",
    "resolve_reward_contract",
    "validate_reward_contract_payload",
]


@attrs.frozen(slots=True)
class RewardContractSide:
    """One side of a contract: the reward id and the public type it scores."""

    id: str
    type: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "type": self.type}


@attrs.frozen(slots=True)
class RewardContract:
    """The instance-local contract of docs/contracts.md §9."""

    reward_contract_version: str
    answer: RewardContractSide
    annotation: RewardContractSide

    def to_dict(self) -> dict[str, Any]:
        return {
            "reward_contract_version": self.reward_contract_version,
            "answer": self.answer.to_dict(),
            "annotation": self.annotation.to_dict(),
        }


def _type_name(value: Any, side: str) -> str:
    name = value.strip() if isinstance(value, str) else ""
    if not name:
        raise ContractError(f"reward_contract requires a non-empty {side} type")
    return name


def resolve_annotation_reward_contract_id(annotation_type: str) -> str:
    """The current reward id for ``annotation_type`` (stripped).

    Raises :class:`~trace_tasks.errors.ContractError` for an empty type,
    :class:`~trace_tasks.errors.UnknownTypeError` for an unknown one (both
    ``ValueError``) and :class:`~trace_tasks.errors.MissingFamilyError` for an
    official type whose family is not installed or is disabled.
    """
    return get_registry().current_reward_id(_type_name(annotation_type, "annotation"))


def resolve_reward_contract(*, answer_type: str, annotation_type: str) -> RewardContract:
    """Build the contract for an instance from its public answer and annotation types."""
    answer = _type_name(answer_type, "answer")
    annotation = _type_name(annotation_type, "annotation")
    registry = get_registry()
    annotation_id = registry.current_reward_id(annotation)
    if answer not in registry.answer_types:
        raise UnknownTypeError(
            f"unsupported answer type for reward_contract: {answer}; registered: {', '.join(sorted(registry.answer_types))}"
        )
    return RewardContract(
        REWARD_CONTRACT_VERSION,
        RewardContractSide(registry.current_answer_reward_id(answer), answer),
        RewardContractSide(annotation_id, annotation),
    )


@attrs.frozen(slots=True)
class ContractProblem:
    """One broken rule of a contract payload.

    ``path`` is where it is (``$.reward_contract.annotation.id``); ``message`` is
    the documented message :func:`validate_reward_contract_payload` returns;
    ``detail`` says what was found and what to write instead (instance validation
    reports it).
    """

    rule: str
    path: str
    message: str
    detail: str = ""

    @property
    def explained(self) -> str:
        return self.detail or self.message


_ROOT = "$.reward_contract"


def _side_problems(payload: Mapping[str, Any], side: str, first_only: bool) -> list[ContractProblem]:
    value = payload.get(side)
    path = f"{_ROOT}.{side}"
    if not isinstance(value, Mapping):
        got = "it is missing" if side not in payload else f"got {shown(value)}"
        message = f"reward_contract.{side} must be an object with keys {{id, type}}"
        return [ContractProblem(side, path, message, f"{message}; {got}")]
    problems = []
    for key in ("id", "type"):
        item = value.get(key)
        if not isinstance(item, str) or not item.strip():
            message = f"reward_contract.{side}.{key} must be a non-empty string"
            got = "it is missing" if key not in value else f"got {shown(item)}"
            problems.append(ContractProblem(side, f"{path}.{key}", message, f"{message}; {got}"))
            if first_only:
                break
    return problems


def _version_problems(payload: Mapping[str, Any]) -> list[ContractProblem]:
    """Rule 1: the contract version."""
    version = payload.get("reward_contract_version")
    if version == REWARD_CONTRACT_VERSION:
        return []
    message = f"reward_contract_version must be {REWARD_CONTRACT_VERSION!r}"
    got = "it is missing" if "reward_contract_version" not in payload else f"got {shown(version)}"
    return [ContractProblem("version", f"{_ROOT}.reward_contract_version", message, f"{message}; {got}")]


def _answer_id_problems(answer: Mapping[str, Any] | None, registry: Registry) -> list[ContractProblem]:
    """Rule 2: the answer type's current answer reward id (``answer_exact_match_v0`` unless the user pinned a version)."""
    if answer is None:
        return []
    kind = answer["type"].strip() if isinstance(answer["type"], str) else ""
    current = registry.current_answer_reward_id(kind)
    if answer["id"] == current:
        return []
    message = f"reward_contract.answer.id must be {current!r}"
    if current != ANSWER_REWARD_CONTRACT_ID:
        why = f"the user pinned it for answer type {kind!r}"
    elif answer["id"] in ANSWER_VERSIONS:
        why = f"{answer['id']!r} is not current: pin it ({PINS_ENV}={kind}={answer['id']}) or rebuild the contracts"
    else:
        why = "every answer type is scored by it unless a version is pinned"
    return [ContractProblem("answer_id", f"{_ROOT}.answer.id", message, f"{message} ({why}); got {shown(answer['id'])}")]


def _family_problems(registry: Registry, declared: str | None, first_only: bool) -> list[ContractProblem]:
    """An official ``declared`` type whose family is not loaded (not installed, or disabled).

    A ``family`` problem; raised instead when ``first_only``.
    """
    error = registry.missing_family(declared) if declared is not None else None
    if error is None:
        return []
    if first_only:
        raise error
    return [ContractProblem("family", f"{_ROOT}.annotation.type", str(error))]


def _current_id_problems(
    registry: Registry, rid: str | None, annotation_type: str | None, declared: str | None
) -> list[ContractProblem]:
    """Rule 4: the annotation id is current for some installed type (an orphan id, for a type nobody owns, never is)."""
    if rid is None:
        return []
    reward_entry = registry.reward_ids.get(rid)
    if reward_entry is not None and reward_entry.current and reward_entry.annotation_type in registry.annotation_types:
        return []
    current_ids = sorted(e.current_reward_id for e in registry.annotation_types.values())
    if rid in current_ids:
        return []
    message = "reward_contract.annotation.id must be one of {" + ", ".join(current_ids) + "}"
    why = registry.not_current_message(rid)
    detail = why or message
    if reward_entry is not None and why:  # registered but not current: what to do (rebuild, or pin) first, the ids last
        message = f"{why}; reward_contract.annotation.id must be one of {{{listed(current_ids)}}}"
    check_type = str(annotation_type).strip() if annotation_type is not None else declared
    entry = registry.annotation_types.get(check_type) if check_type else None
    if entry is not None and (reward_entry is None or entry.name != reward_entry.annotation_type):  # not said by ``why``
        detail += f"; the current id for annotation type {check_type!r} is {entry.current_reward_id!r}"
    return [ContractProblem("current", f"{_ROOT}.annotation.id", message, detail)]


def _answer_type_problems(answer: Mapping[str, Any] | None, answer_type: str | None) -> list[ContractProblem]:
    """Rule 5, answer side: the contract's answer type is ``answer_gt.type``."""
    if answer is None or answer_type is None or answer["type"].strip() == str(answer_type).strip():
        return []
    message = "reward_contract.answer.type must match answer_gt.type"
    detail = f"{message}: the contract says {answer['type']!r}, answer_gt.type is {str(answer_type).strip()!r}"
    return [ContractProblem("answer_type", f"{_ROOT}.answer.type", message, detail)]


def _resolution_problems(
    annotation_type: str | None, declared: str | None, rid: str | None, id_current: bool, first_only: bool
) -> list[ContractProblem]:
    """Rules 5 (annotation side) and 6: the declared type is ``annotation_gt.type``, the id the one it resolves to."""
    problems: list[ContractProblem] = []
    if annotation_type is not None:
        if declared is not None and declared != str(annotation_type).strip():
            message = "reward_contract.annotation.type must match annotation_gt.type"
            detail = f"{message}: the contract says {declared!r}, annotation_gt.type is {str(annotation_type).strip()!r}"
            problems.append(ContractProblem("annotation_type", f"{_ROOT}.annotation.type", message, detail))
            if first_only:
                return problems
        check_type, against = annotation_type, "annotation_gt.type"
    elif declared is not None:
        check_type, against = declared, "reward_contract.annotation.type"
    else:
        return problems
    try:
        resolved = resolve_annotation_reward_contract_id(check_type)
    except MissingFamilyError:
        if first_only:
            raise
        return problems  # the family problem is reported where the type is
    except ValueError as exc:
        problems.append(ContractProblem("type_unknown", f"{_ROOT}.annotation.type", str(exc)))
        return problems
    if id_current and rid != resolved:
        message = f"reward_contract.annotation.id must match the resolved contract for {against} ({resolved})"
        detail = f"{message}: {rid!r} scores another type; write {resolved!r}"
        problems.append(ContractProblem("resolved_id", f"{_ROOT}.annotation.id", message, detail))
    return problems


def contract_problems(
    payload: Any,
    *,
    answer_type: str | None = None,
    annotation_type: str | None = None,
    first_only: bool = False,
) -> list[ContractProblem]:
    """Every rule of docs/contracts.md §9 that ``payload`` breaks, in the documented order.

    ``first_only`` stops at the first problem; then a payload naming an official
    type whose family is not installed raises
    :class:`~trace_tasks.errors.MissingFamilyError` (as
    :func:`validate_reward_contract_payload` does). Otherwise every problem is
    collected and a missing family is a ``family`` problem. Rule 4 checks the id
    against ``annotation_type`` when given, else against the payload's own
    ``annotation.type``.
    """
    if not isinstance(payload, Mapping):
        return [
            ContractProblem(
                "object", _ROOT, "reward_contract must be an object", f"reward_contract must be an object, got {shown(payload)}"
            )
        ]
    problems: list[ContractProblem] = []

    def stop(found: list[ContractProblem]) -> bool:
        """Collect ``found``; whether to stop here (``first_only`` and something found)."""
        problems.extend(found)
        return first_only and bool(found)

    if stop(_version_problems(payload)):
        return problems
    answer_side = _side_problems(payload, "answer", first_only)
    if stop(answer_side):
        return problems
    answer = payload["answer"] if not answer_side else None
    if stop(_answer_id_problems(answer, get_registry())):
        return problems
    annotation_side = _side_problems(payload, "annotation", first_only)
    if stop(annotation_side):
        return problems
    registry = get_registry()
    annotation = payload["annotation"] if not annotation_side else None
    declared = annotation["type"].strip() if annotation is not None else None
    family = _family_problems(registry, declared, first_only)  # raises instead when first_only
    if family:
        problems += family
        annotation = None  # its id cannot be checked without the family
    rid = annotation["id"] if annotation is not None else None
    current = _current_id_problems(registry, rid, annotation_type, declared)
    if stop(current) or stop(_answer_type_problems(answer, answer_type)):
        return problems
    if annotation is None:
        return problems
    return problems + _resolution_problems(annotation_type, declared, rid, not current, first_only)


def validate_reward_contract_payload(
    payload: Any, *, answer_type: str | None = None, annotation_type: str | None = None
) -> str | None:
    """Check a contract payload against the six rules of docs/contracts.md §9.

    Returns a human-readable message for the first problem, or ``None`` when the
    payload is valid. ``answer_type`` and ``annotation_type`` are the instance's
    ``answer_gt.type`` and ``annotation_gt.type``; when given, the contract must
    agree with them. The annotation id must be the one resolved for
    ``annotation_type``, or, without it, for the payload's own ``annotation.type``.
    """
    problems = contract_problems(payload, answer_type=answer_type, annotation_type=annotation_type, first_only=True)
    return problems[0].message if problems else None
