"""The declared prediction frame in prompts and schemas (docs/contracts.md §5.7): what the model is asked to write.

``response_json_schema(prediction_frame=...)`` bounds every number of the
annotation's schema by the frame (integers 0-1000 for ``rel1000`` and
``rel1000_yx``, 0-999 for ``rel999``, numbers 0-1 for ``rel1``, the resized
input's pixels for ``resized`` when the instance gives the image size), and
``format_instructions(prediction_frame=...)`` says it in words, y-first order
included. The official coordinate types hold coordinates only, so every
number of their values is one; ``pixel`` changes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from trace_tasks.errors import OptionError
from trace_tasks.plugins import AnnotationTypeEntry
from trace_tasks.scoring._frames import PIXEL, RESIZED, model_size, resolve_frame, resolve_resize
from trace_tasks.scoring._image_size import find_image_size

#: Integer bounds of the relative frames: (maximum, integer?).
_BOUNDS = {"rel1000": (1000, True), "rel1000_yx": (1000, True), "rel999": (999, True), "rel1": (1, False)}

PIXEL_WORDS = (
    "Coordinates are pixels of the image as you are given it: x from its left edge, y from its top edge. "
    "Do not normalise them (no 0-1 or 0-1000 scale)."
)


def frame_of(prediction_frame: Any, entry: AnnotationTypeEntry | None) -> str:
    """The resolved frame; ``OptionError`` when the annotation type's family cannot convert it (as the scorer refuses)."""
    frame = resolve_frame(prediction_frame)
    if frame != PIXEL and entry is not None and entry.frame is None:
        raise OptionError(
            f"prediction_frame {frame!r}: the family {entry.plugin!r} that owns {entry.name!r} cannot convert "
            "predictions from another frame (no trace_frame_annotation)"
        )
    return frame


def resized_size(instance: Mapping[str, Any] | None, resize: Any) -> tuple[float, float] | None:
    """``(w', h')`` of the model's input for an instance (its ``model_image_size``, else smart_resize of its size)."""
    if instance is None:
        return None
    declared = instance.get("model_image_size")
    model = (float(declared[0]), float(declared[1])) if isinstance(declared, (list, tuple)) and len(declared) == 2 else None
    size = find_image_size(instance.get("image_size"), instance.get("metadata"))
    if size is None:
        return model
    return model_size(size, model, resolve_resize(resize))


def _bound(node: Any, maximum: float, integer: bool) -> Any:
    """Every number schema in ``node`` bounded to ``[0, maximum]`` (and integers when asked)."""
    if isinstance(node, list):
        return [_bound(item, maximum, integer) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _bound(value, maximum, integer) for key, value in node.items()}
    if out.get("type") in ("number", "integer"):
        out["type"] = "integer" if integer else "number"
        out["minimum"] = 0
        out["maximum"] = maximum
        out.pop("exclusiveMinimum", None)
        out.pop("exclusiveMaximum", None)
    return out


def frame_schema(
    schema: dict[str, Any], frame: str, instance: Mapping[str, Any] | None, resize: Any
) -> tuple[dict[str, Any], str]:
    """The annotation's schema in ``frame``, and the words saying what the bounds are (``""`` for ``pixel``).

    The type's own description speaks pixels; a declared frame says, after it, that the values are in the frame.
    """
    if frame == PIXEL:
        return schema, ""
    bounded, bounds = _framed(schema, frame, instance, resize)
    if isinstance(bounded.get("description"), str):
        order = ", y first" if frame == "rel1000_yx" else ""
        bounded["description"] += f"; written in the {frame} frame{order}: {bounds}, not pixels of the image"
    return bounded, bounds


def _framed(schema: dict[str, Any], frame: str, instance: Mapping[str, Any] | None, resize: Any) -> tuple[dict[str, Any], str]:
    if frame == RESIZED:
        size = resized_size(instance, resize)
        if size is None:
            return copy.deepcopy(schema), "pixels of the model's resized input (no instance size given: not bounded here)"
        width, height = size
        # A generic schema cannot tell x from y: both are bounded by the larger side, and the words say which is which.
        return _bound(schema, max(width, height), False), f"pixels of the model's {width:g}x{height:g} input"
    maximum, integer = _BOUNDS[frame]
    return _bound(schema, maximum, integer), f"{'integers' if integer else 'numbers'} 0-{maximum}"


def frame_words(frame: str, instance: Mapping[str, Any] | None, resize: Any) -> str:
    """The prompt's sentence on coordinates in ``frame``."""
    if frame == PIXEL:
        return PIXEL_WORDS
    if frame == "rel1":
        return (
            "Coordinates are relative to the image, as numbers from 0 to 1: x = pixel x / width, y = pixel y / height, "
            "x from the left edge, y from the top edge."
        )
    if frame == RESIZED:
        size = resized_size(instance, resize)
        where = f"the {size[0]:g}x{size[1]:g} image you are given" if size is not None else "the image as you are given it"
        return (
            f"Coordinates are pixels of {where} (after resizing): x from 0 to its width, y from 0 to its height, "
            "x from the left edge, y from the top edge."
        )
    maximum = _BOUNDS[frame][0]
    words = (
        f"Coordinates are relative to the image, as integers from 0 to {maximum}: x = pixel x / width * {maximum}, "
        f"y = pixel y / height * {maximum}, x from the left edge, y from the top edge."
    )
    if frame == "rel1000_yx":
        words += " Write y first: a point as [y, x], a box as [ymin, xmin, ymax, xmax]."
    return words
