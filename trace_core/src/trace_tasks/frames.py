"""Is every item of a parsed annotation inside the image frame? Asked of the families, never guessed.

The owner's explain capability lists the items of a parsed value and its draw
capability says where each item is in pixels; the extent of the drawables is
checked against ``[0, width] x [0, height]``. A family without those
capabilities cannot be checked, and the caller is told so instead of hearing
"no problems".
"""

from __future__ import annotations

from typing import Any

import attrs

from trace_tasks.drawing import extent_points
from trace_tasks.plugins import Registry
from trace_tasks.specs import ScoringContext


@attrs.frozen(slots=True)
class FrameReport:
    """``problems``: ``(path, message)`` per coordinate outside the frame; ``checked`` False when the family cannot say."""

    problems: tuple[tuple[str, str], ...]
    checked: bool
    note: str = ""


def _item_path(base: str, label: str) -> str:
    if not label:
        return base
    key, _, index = label.partition("#")
    path = base + (f"[{key!r}]" if key else "")
    return path + (f"[{index}]" if index else "")


def frame_report(
    registry: Registry, annotation_type: str, parsed: Any, size: tuple[float, float], *, path: str = "$.annotation_gt.value"
) -> FrameReport:
    """Check every item of ``parsed`` (a value the owner of ``annotation_type`` parsed) against ``size``."""
    entry = registry.annotation_types[annotation_type]
    reward = registry.reward_ids.get(entry.current_reward_id)
    if entry.draw is None or reward is None or reward.explain is None:
        return FrameReport((), False, f"the {annotation_type!r} family does not describe its geometry; image frame not checked")
    context = ScoringContext(half_life_px=1.0, image_size=size)
    explanation = reward.explain(reward_id=reward.reward_id, prediction=None, target=parsed, context=context)
    if explanation is None:
        return FrameReport((), False, f"the {annotation_type!r} family cannot list the items; image frame not checked")
    width, height = size
    problems: list[tuple[str, str]] = []
    for item in explanation.unmatched_targets:
        for shape in entry.draw(annotation_type=annotation_type, item=item.value) or ():
            for x, y in extent_points(shape):
                if not 0 <= x <= width:
                    problems.append((_item_path(path, item.label), f"x={x:g} is outside the image frame [0, {width:g}]"))
                if not 0 <= y <= height:
                    problems.append((_item_path(path, item.label), f"y={y:g} is outside the image frame [0, {height:g}]"))
    return FrameReport(tuple(problems), True)
