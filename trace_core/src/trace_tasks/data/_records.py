"""Typed instance records (frozen attrs classes) and the one cattrs converter.

Dataset rows are converted **once**, at load time, never per response. Unknown
keys are rejected and every error names the path of the problem
(``$.annotation_gt.type``). Building an instance resolves its reward contract;
a hand-authored contract that disagrees with the resolver is rejected.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Union

import attrs
import cattrs

from trace_tasks.core.reward_contracts import (
    RewardContract,
    RewardContractSide,
    contract_problems,
    resolve_reward_contract,
    validate_reward_contract_payload,
)
from trace_tasks.errors import RecordError

__all__ = [
    "AnnotationGT",
    "AnswerGT",
    "TraceInstance",
    "TrainInstance",
    "build_instance",
    "converter",
    "format_exception",
    "instance_from_dict",
    "instance_to_dict",
    "iter_jsonl",
    "open_text",
]


def _type_name(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{attribute.name} must be a non-empty string, got {value!r}")


@attrs.frozen(slots=True)
class AnswerGT:
    """The typed answer of an instance (``answer_gt``)."""

    type: str = attrs.field(validator=_type_name)
    value: Any


@attrs.frozen(slots=True)
class AnnotationGT:
    """The typed annotation of an instance (``annotation_gt``): the visual witness."""

    type: str = attrs.field(validator=_type_name)
    value: Any


@attrs.frozen(slots=True)
class TraceInstance:
    """What scoring needs from one built instance.

    ``answer_gt`` is ``None`` (null, or absent in the data) for an instance of the
    ``annotation_only`` mode, the only mode it can be scored in (docs/contracts.md §12.1).
    """

    answer_gt: Union[AnswerGT, None]
    annotation_gt: AnnotationGT
    reward_contract: RewardContract
    id: Union[str, None] = None
    image_size: Union[tuple[float, float], None] = None
    metadata: Union[dict[str, Any], None] = None
    #: ``[width, height]`` of the model's resized input, for ``prediction_frame="resized"`` (docs/contracts.md,
    #: "Coordinate frames"); ``None``: Qwen's ``smart_resize`` of the image size.
    model_image_size: Union[tuple[float, float], None] = None

    def scoring_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`trace_tasks.score_trace_response` (minus the response)."""
        kwargs = {
            "answer_gt": attrs.asdict(self.answer_gt) if self.answer_gt is not None else None,
            "annotation_gt": attrs.asdict(self.annotation_gt),
            "reward_contract": self.reward_contract.to_dict(),
            "image_size": list(self.image_size) if self.image_size else None,
            "metadata": self.metadata,
        }
        if self.model_image_size:  # only when declared: the keys of an ordinary instance are unchanged
            kwargs["model_image_size"] = list(self.model_image_size)
        return kwargs


@attrs.frozen(slots=True)
class TrainInstance(TraceInstance):
    """A training row: an instance plus its prompt and image path."""

    prompt: Union[str, None] = None
    image: Union[str, None] = None


converter = cattrs.Converter(forbid_extra_keys=True)


def _strict_str(value: Any, _: type) -> str:
    # cattrs would turn 5 into "5"; a type name or id that is not a string is a data error.
    if not isinstance(value, str):
        raise RecordError(f"expected a string, got {type(value).__name__}")
    return value


converter.register_structure_hook(str, _strict_str)
converter.register_unstructure_hook(RewardContract, lambda c: c.to_dict())

converter.register_unstructure_hook(RewardContractSide, lambda s: s.to_dict())


def _structure_contract(value: Any, _: type) -> RewardContract:
    if not isinstance(value, Mapping):
        raise RecordError("reward_contract must be an object")
    # The rules that need no instance types; the id against annotation_gt.type is
    # checked once the instance is built (_check_contract), with the better message.
    problems = contract_problems(value, first_only=True)
    if problems and problems[0].rule != "resolved_id":
        raise RecordError(problems[0].message)
    extra = set(value) - {"reward_contract_version", "answer", "annotation"}
    if extra:
        raise RecordError(f"reward_contract has unknown keys {sorted(extra)}")
    return RewardContract(
        value["reward_contract_version"],
        RewardContractSide(value["answer"]["id"], value["answer"]["type"]),
        RewardContractSide(value["annotation"]["id"], value["annotation"]["type"]),
    )


converter.register_structure_hook(RewardContract, _structure_contract)


def _check_contract(instance: TraceInstance) -> None:
    message = validate_reward_contract_payload(
        instance.reward_contract.to_dict(),
        answer_type=instance.answer_gt.type if instance.answer_gt is not None else None,
        annotation_type=instance.annotation_gt.type,
    )
    if message:
        raise RecordError(message, path="$.reward_contract")


def format_exception(exc: BaseException, type_: Any) -> str:
    """The one message formatter of the converter's errors (``cattrs.transform_error``).

    cattrs' default says only "invalid value for type"; our hooks' own reasons
    (a contract that disagrees, unknown contract keys, a non-string type name)
    are kept, and a missing field says so.
    """
    if isinstance(exc, KeyError):
        return "required field missing"
    if type_ in _SIZES or (isinstance(exc, ValueError) and "to structure as tuple[float, float]" in str(exc)):
        return "must be [width, height], two numbers (or null)"  # image_size, model_image_size, whatever the shape
    if isinstance(exc, AttributeError) and "has no attribute 'keys'" in str(exc):  # a record given a non-object
        found = str(exc).partition(" object")[0].strip("'")
        return f"must be a JSON object, got {'null' if found == 'NoneType' else found}"
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return cattrs.v.format_exception(exc, type_)


#: The types of a size field (``image_size``, ``model_image_size``), and of its value.
_SIZES = (Union[tuple[float, float], None], tuple[float, float])


def instance_from_dict(data: Any, *, cls: type[TraceInstance] = TraceInstance, record: str | None = None) -> TraceInstance:
    """Structure and validate one instance dict; ``RecordError`` names the path and record."""
    if not isinstance(data, Mapping):
        raise RecordError(f"an instance must be a JSON object, got {type(data).__name__}", path="$", record=record)
    try:
        instance = converter.structure({"answer_gt": None, **data}, cls)  # absent answer_gt: annotation_only
    except cattrs.BaseValidationError as exc:
        messages = cattrs.transform_error(exc, path="$", format_exception=format_exception)
        first_path = messages[0].rpartition(" @ ")[2] if messages else "$"
        raise RecordError("; ".join(messages), path=first_path, record=record) from exc
    except (ValueError, TypeError) as exc:
        raise RecordError(str(exc), path="$", record=record) from exc
    try:
        _check_contract(instance)
    except RecordError as exc:
        raise RecordError(exc.message, path=exc.path, record=record) from exc
    return instance


def instance_to_dict(instance: TraceInstance) -> dict[str, Any]:
    """The JSON-ready dict of an instance (``None`` fields left out)."""
    data = converter.unstructure(instance)
    return {k: v for k, v in data.items() if v is not None}


def build_instance(
    *, answer_gt: Mapping[str, Any] | None, annotation_gt: Mapping[str, Any], id: str | None = None, **fields: Any
) -> TraceInstance:
    """Build an instance from its public types; the contract is resolved, never hand-authored.

    ``answer_gt=None``: an instance of the ``annotation_only`` mode (no answer).
    """
    answer_type = answer_gt["type"] if answer_gt is not None else None
    contract = resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_gt["type"])
    return instance_from_dict(
        {
            "answer_gt": dict(answer_gt) if answer_gt is not None else None,
            "annotation_gt": dict(annotation_gt),
            "reward_contract": contract.to_dict(),
            "id": id,
            **fields,
        }
    )


def open_text(path: str | Path) -> IO[str]:
    """Open ``.jsonl`` or ``.jsonl.gz`` for reading text; ``-`` is standard input."""
    if str(path) == "-":
        import sys

        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def iter_jsonl(fh: IO[str]) -> Iterator[tuple[int, Any, str | None]]:
    """``(line_number, value, error)`` per non-empty line; a bad line yields an error, not an exception."""
    for number, line in enumerate(fh, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line), None
        except ValueError as exc:
            yield number, None, f"line {number}: not valid JSON: {exc}"
