"""Reward contracts: resolved by the builder from the public types, versioned, validated.

Task code never hand-authors a ``reward_contract``; it calls
:func:`resolve_reward_contract`. The resolver table is whatever the installed
families declare; with the three official families it is exactly seed section 3
(see ``docs/contracts.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.answers import ANSWER_REWARD_CONTRACT_ID
from trace_tasks.errors import MissingFamilyError
from trace_tasks.plugins import OFFICIAL_TYPES, get_registry

REWARD_CONTRACT_VERSION = "v0"

__all__ = [
    "ANSWER_REWARD_CONTRACT_ID",
    "REWARD_CONTRACT_VERSION",
    "RewardContract",
    "RewardContractSide",
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
    """The instance-local contract of seed section 2."""

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


def _side_problem(payload: Mapping[str, Any], side: str) -> str | None:
    value = payload.get(side)
    if not isinstance(value, Mapping):
        return f"reward_contract.{side} must be an object with keys {{id, type}}"
    for key in ("id", "type"):
        item = value.get(key)
        if not isinstance(item, str) or not item.strip():
            return f"reward_contract.{side}.{key} must be a non-empty string"
    return None


def validate_reward_contract_payload(
    payload: Any, *, answer_type: str | None = None, annotation_type: str | None = None
) -> str | None:
    """Check a contract payload against the six rules of seed section 2.

    Returns a human-readable message for the first problem, or ``None`` when the
    payload is valid. ``answer_type`` and ``annotation_type`` are the instance's
    ``answer_gt.type`` and ``annotation_gt.type``; when given, the contract must
    agree with them and its annotation id must be the one resolved for that type.
    """
    if not isinstance(payload, Mapping):
        return "reward_contract must be an object"
    if payload.get("reward_contract_version") != REWARD_CONTRACT_VERSION:
        return f"reward_contract_version must be {REWARD_CONTRACT_VERSION!r}"
    problem = _side_problem(payload, "answer")
    if problem:
        return problem
    if payload["answer"]["id"] != ANSWER_REWARD_CONTRACT_ID:
        return f"reward_contract.answer.id must be {ANSWER_REWARD_CONTRACT_ID!r}"
    problem = _side_problem(payload, "annotation")
    if problem:
        return problem
    registry = get_registry()
    declared = payload["annotation"]["type"].strip()
    if declared not in registry.annotation_types and declared in OFFICIAL_TYPES:
        raise MissingFamilyError(declared, OFFICIAL_TYPES[declared])
    current_ids = sorted(e.current_reward_id for e in registry.annotation_types.values())
    if payload["annotation"]["id"] not in current_ids:
        return "reward_contract.annotation.id must be one of {" + ", ".join(current_ids) + "}"
    if answer_type is not None and payload["answer"]["type"].strip() != str(answer_type).strip():
        return "reward_contract.answer.type must match answer_gt.type"
    if annotation_type is not None:
        if declared != str(annotation_type).strip():
            return "reward_contract.annotation.type must match annotation_gt.type"
        try:
            resolved = resolve_annotation_reward_contract_id(annotation_type)
        except MissingFamilyError:
            raise
        except ValueError as exc:
            return str(exc)
        if payload["annotation"]["id"] != resolved:
            return f"reward_contract.annotation.id must match the resolved contract for annotation_gt.type ({resolved})"
    return None
