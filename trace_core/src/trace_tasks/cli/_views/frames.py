"""Is every item of a parsed annotation inside the image frame? Asked of the families, never guessed.

The owner's explain capability lists the items of a parsed value and its draw
capability says where each item is in pixels; the extent of the drawables is
checked against ``[0, width] x [0, height]``. A family without those
capabilities cannot be checked, and the caller is told so instead of hearing
"no problems".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, get_args

import attrs

from trace_tasks.plugins import Drawable, Registry, ScoringContext, extent_points

#: What a draw hook may return, item by item: the members of ``trace_tasks.plugins.Drawable``.
DRAWABLES = get_args(Drawable)


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
        drawn = entry.draw(annotation_type=annotation_type, item=item.value) or ()
        bug = _drawing_bug(drawn)
        if bug:  # the family's bug, never the data's: not checked (a problem here would blame the dataset)
            return FrameReport((), False, f"the {annotation_type!r} family's draw hook {bug}; image frame not checked")
        for shape in drawn:
            for x, y in extent_points(shape):
                if not 0 <= x <= width:
                    problems.append((_item_path(path, item.label), f"x={x:g} is outside the image frame [0, {width:g}]"))
                if not 0 <= y <= height:
                    problems.append((_item_path(path, item.label), f"y={y:g} is outside the image frame [0, {height:g}]"))
    return FrameReport(tuple(problems), True)


def _drawing_bug(drawn: Any) -> str:
    """What is wrong with a draw hook's answer for one item ("" when it is drawables with finite coordinates)."""
    if not isinstance(drawn, (list, tuple)):
        return f"returned {type(drawn).__name__}, not a list of drawables"
    for shape in drawn:
        if not isinstance(shape, DRAWABLES):
            return f"returned {type(shape).__name__} among its drawables"
        try:
            finite = all(math.isfinite(x) and math.isfinite(y) for x, y in extent_points(shape))
        except (TypeError, ValueError):
            finite = False
        if not finite:
            return f"drew {shape!r}, whose coordinates are not finite numbers"
    return ""


#: Most item names listed in an outside-the-frame note.
NOTE_NAMES = 6


@attrs.frozen(slots=True)
class PlacedItem:
    """One explained item as drawn: its name (``T#0``), side, extent points and drawables that could not be drawn."""

    name: str
    predicted: bool
    points: tuple[tuple[float, float], ...]
    skipped: int = 0


def _inside(point: tuple[float, float], width: float, height: float) -> bool:
    return 0 <= point[0] <= width and 0 <= point[1] <= height


#: How much more a normalised reading of the prediction must score than its pixel reading for the hint.
READING_GAIN = 0.25


def readings_hint(readings: Mapping[str, float]) -> str | None:
    """The normalised-coordinates hint decided by the run's readings (:attr:`~trace_tasks.scoring.Trail.readings`).

    ``None`` when there are no readings to compare (no image size, or a family
    without ``trace_scale_annotation``: :func:`normalised_hint` guesses from the
    drawn extents instead); ``""`` when no reading scores at least
    :data:`READING_GAIN` more than the pixels; else the hint, naming the
    reading and both rewards. Works on any image size.
    """
    pixels = readings.get("pixels")
    if pixels is None:
        return None
    best = max(((reward, name) for name, reward in readings.items() if name != "pixels"), default=None)
    if best is None or best[0] < pixels + READING_GAIN:
        return ""
    reward, name = best
    return (
        f"read as {name} coordinates the prediction would score annotation_reward {reward:.3g} "
        f"(as pixels {pixels:.3g}): normalised {name} coordinates? the scorer reads pixels"
    )


def normalised_hint(items: list[PlacedItem], width: float, height: float) -> str:
    """Why the predictions may be off: normalised 0-1 or 0-1000 coordinates, or "" when they do not look so.

    The guess for a family that cannot scale its values (no
    ``trace_scale_annotation``); otherwise :func:`readings_hint` decides.
    0-1: every predicted coordinate within [0, 1] on an image larger than that.
    0-1000: some predicted coordinate outside the frame, every one within
    [0, 1000], on an image smaller than 1000 px on some side.
    """
    points = [p for item in items if item.predicted for p in item.points]
    if not points:
        return ""
    if max(width, height) > 2 and all(0 <= x <= 1 and 0 <= y <= 1 for x, y in points):
        return "every predicted coordinate is within [0, 1]: normalised 0-1 coordinates? the scorer reads pixels"
    in_thousand = all(0 <= x <= 1000 and 0 <= y <= 1000 for x, y in points)
    if in_thousand and min(width, height) < 1000 and any(not _inside(p, width, height) for p in points):
        return (
            f"predicted coordinates within [0, 1000] reach outside the {width:g}x{height:g} image: normalised 0-1000 "
            "coordinates? the scorer reads pixels"
        )
    return ""


def frame_notes(items: list[PlacedItem], size: tuple[float, float], hint: str | None = None) -> list[tuple[str, str]]:
    """``(short, full)`` notes about items (partly) outside ``[0, width] x [0, height]``, with a normalisation hint.

    ``hint`` is :func:`readings_hint`'s (``""``: none); ``None`` guesses it from
    the drawn items (:func:`normalised_hint`). The short form fits a picture's
    footer, the full one a terminal line.
    """
    width, height = size
    notes: list[tuple[str, str]] = []
    outside = [item for item in items if item.skipped or any(not _inside(p, width, height) for p in item.points)]
    if outside:
        names = ", ".join(item.name for item in outside[:NOTE_NAMES]) + (", ..." if len(outside) > NOTE_NAMES else "")
        notes.append((
            f"{len(outside)} of {len(items)} items outside the image ({names})",
            f"{len(outside)} of {len(items)} items lie (partly) outside the {width:g}x{height:g} image frame or could "
            f"not be drawn ({names}); coordinates are pixels of the source image",
        ))  # fmt: skip
    if hint is None:
        hint = normalised_hint(items, width, height)
    if hint:
        notes.append((hint.split(":", 1)[0] + ": normalised?", hint))
    return notes
