"""Every problem of one instance record, each with the path where it is.

Used by ``trace-tasks validate`` (all problems of every line) and by
``trace-tasks score`` (a readable message for a line it cannot score).
Checks, in order: record structure through the one cattrs converter, the
contract rules of seed section 2, that both types resolve with the installed
families (a missing official family names its package), that the target
annotation parses with its family, and, when an image size is given, that
every coordinate lies inside the pixel frame.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import cattrs

from trace_tasks.core.reward_contracts import validate_reward_contract_payload
from trace_tasks.errors import MissingFamilyError, suggest
from trace_tasks.image_size import find_image_size
from trace_tasks.plugins import OFFICIAL_TYPES, get_registry
from trace_tasks.records import TraceInstance, TrainInstance, converter


@attrs.frozen(slots=True)
class Problem:
    """One problem: the JSON path (``$.annotation_gt.type``) and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _format_exception(exc: BaseException, type_: Any) -> str:
    # cattrs' default says only "invalid value for type"; keep the hooks' own messages.
    if isinstance(exc, KeyError):
        return "required field missing"
    return str(exc) or f"invalid value ({type(exc).__name__})"


def structure(data: Mapping[str, Any], cls: type[TraceInstance] = TrainInstance) -> tuple[TraceInstance | None, list[Problem]]:
    """Structure ``data`` with the records converter; problems carry their paths."""
    try:
        return converter.structure(dict(data), cls), []
    except cattrs.BaseValidationError as exc:
        problems = []
        for text in cattrs.transform_error(exc, path="$", format_exception=_format_exception):
            message, _, path = text.rpartition(" @ ")
            problems.append(Problem(path or "$", message or text))
        return None, problems
    except (ValueError, TypeError) as exc:
        return None, [Problem("$", str(exc))]


def _type_problems(data: Mapping[str, Any]) -> tuple[list[Problem], bool]:
    """Problems resolving the two types, and whether the annotation type is usable."""
    registry = get_registry()
    problems: list[Problem] = []
    answer = data.get("answer_gt")
    answer_type = answer.get("type") if isinstance(answer, Mapping) else None
    if isinstance(answer_type, str) and answer_type.strip() not in registry.answer_types:
        known = registry.answer_types
        problems.append(Problem("$.answer_gt.type", f"unknown answer type {answer_type!r}{suggest(answer_type, known)}"))
    annotation = data.get("annotation_gt")
    annotation_type = annotation.get("type") if isinstance(annotation, Mapping) else None
    if not isinstance(annotation_type, str):
        return problems, False
    name = annotation_type.strip()
    if name in registry.annotation_types:
        return problems, True
    if name in OFFICIAL_TYPES:
        problems.append(Problem("$.annotation_gt.type", str(MissingFamilyError(name, OFFICIAL_TYPES[name]))))
    else:
        hint = suggest(name, registry.annotation_types)
        problems.append(Problem("$.annotation_gt.type", f"unknown annotation type {name!r}{hint}; no installed family owns it"))
    return problems, False


def _walk_items(value: Any, path: str) -> Iterator[tuple[str, tuple[float, ...]]]:
    """Every parsed primitive (a flat tuple of numbers) with its path."""
    if isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk_items(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk_items(item, f"{path}[{i}]")


def _frame_problems(parsed: Any, size: tuple[float, float]) -> list[Problem]:
    """Coordinates outside ``[0, width] x [0, height]``.

    Every family's primitives parse to flat tuples of alternating x and y
    (a point ``(x, y)``, a box ``(x0, y0, x1, y1)``, a segment ``(x0, y0, x1, y1)``),
    so even positions are checked against the width and odd ones against the height.
    """
    width, height = size
    problems = []
    for path, item in _walk_items(parsed, "$.annotation_gt.value"):
        for i, number in enumerate(item):
            axis, limit = ("x", width) if i % 2 == 0 else ("y", height)
            if not 0 <= number <= limit:
                problems.append(Problem(path, f"{axis}={number:g} is outside the image frame [0, {limit:g}]"))
    return problems


def _annotation_problems(data: Mapping[str, Any]) -> list[Problem]:
    annotation = data["annotation_gt"]
    if "value" not in annotation:
        return []  # the structure check reports the missing field
    name = annotation["type"].strip()
    entry = get_registry().annotation_types[name]
    try:
        parsed = entry.parse(annotation_type=name, value=annotation["value"])
    except Exception as exc:  # AnnotationParseError, or whatever a broken value provokes
        return [Problem("$.annotation_gt.value", f"does not parse as {name}: {exc}")]
    size = find_image_size(data.get("image_size"), data.get("metadata"))
    return _frame_problems(parsed, size) if size is not None else []


def _type_name(data: Mapping[str, Any], side: str) -> str | None:
    value = data.get(side)
    name = value.get("type") if isinstance(value, Mapping) else None
    return name if isinstance(name, str) else None


def _contract_problem(data: Mapping[str, Any]) -> Problem | None:
    """The first rule of seed section 2 the contract breaks, checked against both gt types."""
    if "reward_contract" not in data:
        return None  # the structure check reports the missing field
    try:
        message = validate_reward_contract_payload(
            data["reward_contract"], answer_type=_type_name(data, "answer_gt"), annotation_type=_type_name(data, "annotation_gt")
        )
    except MissingFamilyError:
        return None  # reported by the type check, naming the package
    return Problem("$.reward_contract", message) if message else None


def instance_problems(data: Any, *, cls: type[TraceInstance] = TrainInstance, check_values: bool = True) -> list[Problem]:
    """Every problem of one instance record (empty when it is valid).

    ``check_values=False`` leaves out the target-annotation parse and the frame
    check (the scorer tolerates both: it reports them as diagnostics).
    """
    if not isinstance(data, Mapping):
        return [Problem("$", f"an instance must be a JSON object, got {type(data).__name__}")]
    problems, annotation_usable = _type_problems(data)
    contract = _contract_problem(data)
    if contract is not None:
        problems.append(contract)
    _, structure_problems = structure(data, cls)
    seen = {p.message for p in problems}
    for problem in structure_problems:
        # The contract was checked above against the gt types; the converter's view of it adds nothing.
        if problem.message not in seen and not (contract is not None and problem.path == "$.reward_contract"):
            problems.append(problem)
    if annotation_usable and check_values:
        problems += _annotation_problems(data)
    return problems
