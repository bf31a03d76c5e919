"""What ``explain`` says of a row's mismatches: the prediction as written and in pixels, and every other reading.

Read off the run's own trail (``Trail(hints=True)``) through
:func:`trace_tasks.scoring.row_mismatches`; nothing here scores anything.
A reading in another declared frame names the flag that declares it; a
reading in a shape the contract does not take (``xywh``, a native shape)
names what it is.
"""

from __future__ import annotations

from typing import Any

from trace_tasks.cli._views.explanation import show_value
from trace_tasks.scoring import ANSWER_TAG_IGNORED, PREDICTION_FRAMES, THINK, UNPARSED, Mismatch, Trail, row_mismatches

#: What each frame is, in a few words (docs/contracts.md, "Coordinate frames").
FRAME_WORDS = {
    "pixel": "pixels of the image",
    "rel1000": "relative 0-1000, x first",
    "rel999": "relative 0-999",
    "rel1": "relative 0-1",
    "resized": "pixels of the model's resized input",
    "rel1000_yx": "relative 0-1000, y first",
}


def reading_words(kind: str) -> str:
    """A reading's kind in words: ``rel1000 (relative 0-1000, x first)``, ``xywh ([x, y, width, height])``, ..."""
    if kind in FRAME_WORDS:
        return f"{kind} ({FRAME_WORDS[kind]})"
    if kind == "xywh":
        return "xywh ([x, y, width, height])"
    if kind == "native":
        return "native (the model-native shape as the annotation)"
    if kind.startswith("native+"):
        frame = kind.partition("+")[2]
        return f"{kind} (the model-native shape, {FRAME_WORDS.get(frame, frame)})"
    return kind


def _flag(kind: str) -> str:
    """The flags that would declare a reading, or "" when none can (xywh)."""
    if kind in PREDICTION_FRAMES:
        return f"--prediction-frame {kind}"
    if kind == "native":
        return "--annotation-native"
    if kind.startswith("native+"):
        return f"--annotation-native --prediction-frame {kind.partition('+')[2]}"
    return ""


def mismatch_line(mismatch: Mismatch) -> str:
    """One mismatch in one line (no indent)."""
    if mismatch.kind == THINK:
        return (
            "think: the scored object was recovered from inside <think>...</think>, not from the text after it "
            "(--recovery outside_think ignores it)"
        )
    if mismatch.kind == ANSWER_TAG_IGNORED:
        return (
            "answer_tag_ignored: the scored object is the final <answer> block, whose tags the format refused "
            "(format 0): --format-accept-answer-tag accepts them"
        )
    flag = _flag(mismatch.kind)
    return (
        f"{mismatch.kind}: read as {reading_words(mismatch.kind)} the prediction would score annotation_reward "
        f"{mismatch.reward or 0.0:.3g} (scored {mismatch.scored:.3g})" + (f"; declared with {flag}" if flag else "")
    )


def mismatch_lines(trail: Trail) -> list[str]:
    """The explain report's lines for the row's mismatches (none when there are none)."""
    return [f"  mismatch {mismatch_line(m)}" for m in row_mismatches(trail)]


def written_lines(trail: Trail) -> list[str]:
    """Under a declared frame: the parsed prediction as written and in pixels (the one scored and drawn)."""
    opts = trail.options
    if opts is None or opts.prediction_frame == "pixel" or trail.written_prediction is UNPARSED:
        return []
    frame = opts.prediction_frame
    return [
        f"  as written ({reading_words(frame)}): {show_value(trail.written_prediction)}",
        f"  in pixels (scored and drawn): {show_value(trail.parsed_prediction)}",
    ]


def mismatch_hint(trail: Trail) -> str | None:
    """The other-reading note decided by the run's alternatives (``None``: none scored, so guess from the drawing).

    ``""`` when no other reading scores clearly more (:data:`~trace_tasks.scoring.MISMATCH_GAIN`).
    """
    if not trail.alternatives:
        return None
    readings = [m for m in row_mismatches(trail) if m.reward is not None]
    if not readings:
        return ""
    best = readings[0]
    flag = _flag(best.kind)
    declared = trail.options.prediction_frame if trail.options is not None else "pixel"
    return (
        f"read as {reading_words(best.kind)} the prediction would score annotation_reward {best.reward or 0.0:.3g} "
        f"(as scored {best.scored:.3g}): another coordinate reading? the scorer reads {FRAME_WORDS.get(declared, declared)}"
        + (f"; {flag} declares it" if flag else "")
    )


def written_json(trail: Trail) -> dict[str, Any]:
    """``explain --json``'s keys for the frame: the declared frame and the prediction as written (a declared frame only)."""
    opts = trail.options
    if opts is None or opts.prediction_frame == "pixel":
        return {}
    written = None if trail.written_prediction is UNPARSED else trail.written_prediction
    return {"prediction_frame": opts.prediction_frame, "written_prediction": written}


def kind_meaning(kind: str) -> str:
    """A mismatch kind's definition (the report's failure-table legend)."""
    if kind == THINK:
        return "the scored object was recovered from inside <think>...</think>, not from the text after it"
    if kind == ANSWER_TAG_IGNORED:
        return "final_only read a final <answer> block whose tags the format refused (format 0; --format-accept-answer-tag)"
    flag = _flag(kind)
    return (
        f"the prediction read as {reading_words(kind)} would score at least 0.25 more annotation reward than it earned"
        + (f" ({flag} declares it)" if flag else "")
        + "; never scored"
    )
