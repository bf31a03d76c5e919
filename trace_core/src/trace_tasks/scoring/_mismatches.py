"""Every mismatch of one scored row named from the scorer's own trail: never a reward, only a reading.

A model that answers in another coordinate frame, in its own native shape, or
whose scored object was recovered from inside ``<think>`` earns a low or
misleading annotation reward without being told why. :func:`row_mismatches`
reads a :class:`~trace_tasks.scoring.Trail` kept with ``hints=True`` (the run
already scored each other reading of the same parsed prediction, by the same
score hook, into ``Trail.alternatives``) and names:

* the best other reading (a frame of :data:`~trace_tasks.scoring.PREDICTION_FRAMES`:
  ``pixel``, ``rel1000``, ``rel999``, ``rel1``, ``resized``, ``rel1000_yx`` (y
  first); ``native`` for a model-native shape read as the annotation in the
  declared frame, ``native+<frame>`` in another frame; ``xywh`` for boxes written
  ``[x, y, width, height]``, and any other spelling a family's
  ``trace_reread_annotation`` knows) when it scores at least
  :data:`MISMATCH_GAIN` more annotation reward than the row earned;
* ``think``: the scored object was recovered from inside ``<think>...</think>``
  (it is not found in the text outside it);
* ``answer_tag_ignored``: under ``trace_recovery="final_only"`` without
  ``format_accept_answer_tag``, the scored object came from the final
  ``<answer>`` block (read as the final block, docs/contracts.md §3.7), whose
  tags the format check does not accept: the row's format is 0, and
  ``format_accept_answer_tag`` would give it 1.

The CLI counts these per annotation type (one count per kind).
"""

from __future__ import annotations

import attrs

from trace_tasks.reading import OUTSIDE_THINK, extract
from trace_tasks.scoring._pipeline import Trail, required_keys

__all__ = ["ANSWER_TAG_IGNORED", "MISMATCH_GAIN", "THINK", "Mismatch", "row_mismatches"]

#: How much more annotation reward another reading must earn to be named (the explain hint's margin).
MISMATCH_GAIN = 0.25
THINK = "think"
ANSWER_TAG_IGNORED = "answer_tag_ignored"


@attrs.frozen(slots=True)
class Mismatch:
    """One mismatch of a row: its ``kind``, what that reading would score (``None`` for ``think`` and
    ``answer_tag_ignored``, which are about where the object came from) and the annotation reward ``scored``."""

    kind: str
    reward: float | None
    scored: float


def row_mismatches(trail: Trail) -> tuple[Mismatch, ...]:
    """The mismatches of one row scored with ``Trail(hints=True)``, in the order: reading, ``think``, ``answer_tag_ignored``."""
    found: list[Mismatch] = []
    scored = trail.reward
    best = max(((reward, name) for name, reward in trail.alternatives.items()), default=None)
    if best is not None and best[0] >= scored + MISMATCH_GAIN:
        found.append(Mismatch(best[1], best[0], scored))
    ext, opts, text = trail.extraction, trail.options, trail.text
    if ext is None or opts is None:
        return tuple(found)
    keys = required_keys(opts.trace_reward_mode)
    if ext.payload is not None and opts.trace_recovery != OUTSIDE_THINK and ("<think>" in text or "</think>" in text):
        outside = extract(text, keys, OUTSIDE_THINK, opts.format_accept_answer_tag).payload
        if outside != ext.payload:
            found.append(Mismatch(THINK, None, scored))
    if ext.final_tag and ext.payload is not None:  # final_only read the final <answer> pair; the format refused its tags
        found.append(Mismatch(ANSWER_TAG_IGNORED, None, scored))
    return tuple(found)
