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

from trace_tasks.errors import MissingFamilyError, shown
from trace_tasks.plugins import ANSWER_REWARD_CONTRACT_ID, OFFICIAL_TYPES, get_registry

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
        raise ValueError(f"reward_contract requires a non-empty {side} type")
    return name


def resolve_annotation_reward_contract_id(annotation_type: str) -> str:
    """The current reward id for ``annotation_type`` (stripped).

    Raises ``ValueError`` for an empty or unknown type and
    :class:`~trace_tasks.errors.MissingFamilyError` for an official type whose
    family is not installed.
    """
    return get_registry().current_reward_id(_type_name(annotation_type, "annotation"))


def resolve_reward_contract(*, answer_type: str, annotation_type: str) -> RewardContract:
    """Build the contract for an instance from its public answer and annotation types."""
    answer = _type_name(answer_type, "answer")
    annotation = _type_name(annotation_type, "annotation")
    registry = get_registry()
    annotation_id = registry.current_reward_id(annotation)
    if answer not in registry.answer_types:
        raise ValueError(
            f"unsupported answer type for reward_contract: {answer}; registered: {', '.join(sorted(registry.answer_types))}"
        )
    return RewardContract(
        REWARD_CONTRACT_VERSION,
        RewardContractSide(ANSWER_REWARD_CONTRACT_ID, answer),
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

    def add(problem: ContractProblem) -> bool:
        problems.append(problem)
        return first_only

    version = payload.get("reward_contract_version")
    if version != REWARD_CONTRACT_VERSION:
        message = f"reward_contract_version must be {REWARD_CONTRACT_VERSION!r}"
        got = "it is missing" if "reward_contract_version" not in payload else f"got {shown(version)}"
        if add(ContractProblem("version", f"{_ROOT}.reward_contract_version", message, f"{message}; {got}")):
            return problems
    answer_side = _side_problems(payload, "answer", first_only)
    if answer_side:
        problems += answer_side
        if first_only:
            return problems
    answer = payload["answer"] if not answer_side else None
    if answer is not None and answer["id"] != ANSWER_REWARD_CONTRACT_ID:
        message = f"reward_contract.answer.id must be {ANSWER_REWARD_CONTRACT_ID!r}"
        if add(
            ContractProblem(
                "answer_id",
                f"{_ROOT}.answer.id",
                message,
                f"{message} (every answer type is scored by it); got {shown(answer['id'])}",
            )
        ):
            return problems
    annotation_side = _side_problems(payload, "annotation", first_only)
    if annotation_side:
        problems += annotation_side
        if first_only:
            return problems
    registry = get_registry()
    annotation = payload["annotation"] if not annotation_side else None
    declared = annotation["type"].strip() if annotation is not None else None
    if declared is not None and declared not in registry.annotation_types and declared in OFFICIAL_TYPES:
        error = MissingFamilyError(declared, OFFICIAL_TYPES[declared])
        if first_only:
            raise error
        problems.append(ContractProblem("family", f"{_ROOT}.annotation.type", str(error)))
        annotation = None  # its id cannot be checked without the family
    rid = annotation["id"] if annotation is not None else None
    id_current = True
    if rid is not None:
        reward_entry = registry.reward_ids.get(rid)
        # Current for some installed type (an orphan id, for a type nobody owns, is never current).
        if reward_entry is None or not reward_entry.current or reward_entry.annotation_type not in registry.annotation_types:
            current_ids = sorted(e.current_reward_id for e in registry.annotation_types.values())
            id_current = rid in current_ids
        if not id_current:
            message = "reward_contract.annotation.id must be one of {" + ", ".join(current_ids) + "}"
            why = registry.not_current_message(rid)
            detail = why or message
            if rid in registry.reward_ids and why:  # registered but not current: say which pin would make it so
                message = f"{message}; {why}"
            check_type = str(annotation_type).strip() if annotation_type is not None else declared
            entry = registry.annotation_types.get(check_type) if check_type else None
            if entry is not None:
                detail += f"; the current id for annotation type {check_type!r} is {entry.current_reward_id!r}"
            if add(ContractProblem("current", f"{_ROOT}.annotation.id", message, detail)):
                return problems
    if answer is not None and answer_type is not None and answer["type"].strip() != str(answer_type).strip():
        message = "reward_contract.answer.type must match answer_gt.type"
        detail = f"{message}: the contract says {answer['type']!r}, answer_gt.type is {str(answer_type).strip()!r}"
        if add(ContractProblem("answer_type", f"{_ROOT}.answer.type", message, detail)):
            return problems
    if annotation is None:
        return problems
    if annotation_type is not None:
        if declared is not None and declared != str(annotation_type).strip():
            message = "reward_contract.annotation.type must match annotation_gt.type"
            detail = f"{message}: the contract says {declared!r}, annotation_gt.type is {str(annotation_type).strip()!r}"
            if add(ContractProblem("annotation_type", f"{_ROOT}.annotation.type", message, detail)):
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
        add(ContractProblem("type_unknown", f"{_ROOT}.annotation.type", str(exc)))
        return problems
    if id_current and rid != resolved:
        message = f"reward_contract.annotation.id must match the resolved contract for {against} ({resolved})"
        detail = f"{message}: {rid!r} scores another type; write {resolved!r}"
        add(ContractProblem("resolved_id", f"{_ROOT}.annotation.id", message, detail))
    return problems


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
