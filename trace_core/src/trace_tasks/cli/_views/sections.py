"""The explain command's sections: one response scored once with a trail, and the lines that describe the run.

``trace-tasks explain`` prints them; ``trace-tasks report`` shows them for each
case it lists. Everything is read off the one run's trail (the extraction,
the answer comparison, the family's explanation of the annotation), through
the safe formatters of :mod:`trace_tasks.cli._views.explanation`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.cli._views.drawing import CannotDraw, explanation_notes
from trace_tasks.cli._views.explanation import (
    candidate_used,
    item_name,
    plain,
    show_number,
    show_value,
    surrogate_note,
    without_surrogates,
)
from trace_tasks.cli._views.mismatches import mismatch_hint, mismatch_lines, written_lines
from trace_tasks.data import CompiledInstance
from trace_tasks.errors import one_line
from trace_tasks.plugins import AnnotationExplanation, ScoringContext
from trace_tasks.scoring import ANNOTATION_ONLY, LENIENT, UNPARSED, ScoringOptions, Trail, canonical_text, required_keys

SHOW_CHARS = 300
SHOW_KEYS = 20
SHOW_KEY_CHARS = 40


@attrs.frozen
class Explained:
    """One explained response: the pipeline's result and trail, and the report lines built from them.

    ``result`` is exactly the dict ``score_trace_response`` returns for the
    instance and response; ``trail`` is what the same run saw. ``lines`` hold
    no lone surrogate (each is shown as U+FFFD, and a note in the extraction
    counts those of the response, ``surrogates``); ``notes`` say how the
    response was read (invalid UTF-8 in its file).
    """

    instance: CompiledInstance
    result: dict[str, float]
    trail: Trail
    lines: tuple[str, ...]
    surrogates: int = 0
    notes: tuple[str, ...] = ()

    @property
    def annotation_type(self) -> str:
        return self.instance.annotation_type

    @property
    def reward_id(self) -> str:
        return self.instance.reward_entry.reward_id

    @property
    def explanation(self) -> AnnotationExplanation | None:
        return self.trail.explanation

    @property
    def context(self) -> ScoringContext | None:
        return self.trail.context

    @property
    def problem(self) -> str:
        return self.trail.problem

    @property
    def hint(self) -> str | None:
        """The other-reading hint of the run's alternatives (``None``: none scored, guess from the drawing)."""
        return mismatch_hint(self.trail)


def explain_response(response: str, instance: CompiledInstance, opts: ScoringOptions) -> Explained:
    """Score ``response`` once through the pipeline, keeping its trail, and describe the run."""
    result, trail = instance.explain(response, opts)
    surrogates = without_surrogates(response)[1]
    out = _extraction(trail, opts)
    if surrogates:  # first in the section: it says how the rest is shown
        out.insert(2, f"  note: {surrogate_note(surrogates)}")
    out += _answer(trail, instance, result)
    out += _annotation(trail, instance, result)
    out += written_lines(trail) + mismatch_lines(trail)
    out += _reward(result)
    notes = frame_check(Explained(instance, result, trail, ()))
    if notes:
        at = out.index("Reward") - 1
        out[at:at] = [f"  note: {note}" for note in notes]
    # Any text the response (or a family) put in a line is printable: a lone surrogate is shown as U+FFFD.
    return Explained(instance, result, trail, tuple(without_surrogates(line)[0] for line in out), surrogates)


def _short(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= SHOW_CHARS else f"{text[:SHOW_CHARS]}... ({len(text)} characters)"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


#: What each opt-in response policy means, for the extraction section (docs/contracts.md §3.7).
POLICY_NOTES = {
    "outside_think": "recovery and atomic answers ignore text inside <think>...</think>",
    "final_only": "the payload is the final block (a final <answer>...</answer> pair counts as one) or nothing (in answer mode the whole response may be the atomic answer)",
}


def _extraction(trail: Trail, opts: ScoringOptions) -> list[str]:
    ext = trail.extraction
    assert ext is not None
    fmt = ext.format
    block = fmt.answer_block
    mode = opts.trace_reward_mode
    lines = ["", "Extraction"]
    if opts.trace_recovery != LENIENT:
        lines.append(f"  policy: trace_recovery {opts.trace_recovery} ({POLICY_NOTES[opts.trace_recovery]})")
    if opts.format_accept_answer_tag:
        lines.append("  policy: format_accept_answer_tag (a final <answer>OBJECT</answer> is the final block)")
    lines.append(
        f"  final block: {_short(block) if block is not None else 'none (the response does not end with a fenced block or a balanced object)'}"
    )
    lines.append(
        f"  format: structure {_yes(fmt.structure_ok)}, JSON {_yes(fmt.json_ok)}, schema {_yes(fmt.schema_ok)} -> format {fmt.format:.0f}"
    )
    if isinstance(fmt.payload, Mapping) and not fmt.schema_ok:
        lines.append(f"  keys found {sorted(map(str, fmt.payload))}, required exactly {sorted(required_keys(mode))}")
    lines.append(f"  candidate used for scoring: {candidate_used(ext)}")
    return lines


def _answer(trail: Trail, instance: CompiledInstance, result: Mapping[str, float]) -> list[str]:
    options = trail.options
    if instance.answer_spec is None or (options is not None and options.trace_reward_mode == ANNOTATION_ONLY):
        return ["", "Answer: none read (annotation_only mode: the task reward is the annotation reward)"]
    reads_json = instance.answer_spec.reads_json_strings
    expected = instance.data["answer_gt"]["value"]
    return [
        "",
        f"Answer ({instance.answer_type}, exact match after normalization)",
        f"  predicted {_short(json.dumps(trail.predicted_answer, default=repr))} -> {_short(canonical_text(trail.predicted_answer, reads_json_strings=reads_json))}",
        f"  expected  {_short(json.dumps(expected, default=repr))} -> {canonical_text(expected, reads_json_strings=reads_json)}",
        f"  match: {_yes(result['answer_reward'] == 1.0)} (answer_reward {result['answer_reward']:g})",
    ]


def _annotation(trail: Trail, instance: CompiledInstance, result: Mapping[str, float]) -> list[str]:
    name = instance.annotation_type
    lines = ["", f"Annotation ({name})"]
    if trail.prediction is None:
        lines.append("  no annotation predicted: every target is unmatched")
    elif trail.parsed_prediction is UNPARSED:
        why = one_line(trail.parse_errors[0]) if trail.parse_errors else "no value"
        lines.append(f"  the prediction does not parse as {name}: {why} ({show_value(trail.prediction)})")
    lines += _native_lines(trail, name)
    explanation = trail.explanation
    if explanation is None:
        lines.append(f"  {plain(trail.problem or 'the family gave no explanation; no assignment table', 400)}")
        return lines
    try:
        assert trail.context is not None  # set by the run before the family is asked
        lines += _table(explanation, trail.context)
    except Exception as exc:  # never reached with the safe formatters; a report must not crash
        lines.append(f"  the explanation could not be shown: {one_line(exc)}")
    reward = getattr(explanation.score, "reward", None)
    if not (isinstance(reward, (int, float)) and float(reward) == result["annotation_reward"]):
        lines.append(
            f"  note: the scorer reported annotation_reward {result['annotation_reward']:.4g} but the explanation "
            f"gives {show_number(reward)}: the family's explain and score capabilities disagree"
        )
    return lines


def _native_lines(trail: Trail, name: str) -> list[str]:
    """What the owner recognised in a prediction that does not parse (``annotation_native_format``)."""
    native = trail.native
    if native is None:
        return []
    found, expected = plain(str(native.found), SHOW_CHARS), plain(str(native.expected), SHOW_CHARS)
    lines = [f"  model-native shape: the prediction is {found}; a {name} is written {expected}"]
    if trail.native_reward is not None:
        lines.append(
            f"  written as the contract asks, it would score annotation_reward {trail.native_reward:.4g} "
            "(the reward counts only the contract's shape)"
        )
    return lines


def metric_name(metric: Any) -> str:
    """How the report names a pair's similarity: ``IoU`` for ``iou``, else the family's metric."""
    text = metric if isinstance(metric, str) and metric else "similarity"
    return "IoU" if text.lower() == "iou" else plain(text, 24)


def listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else []


def _table(explanation: AnnotationExplanation, context: ScoringContext) -> list[str]:
    metric = metric_name(explanation.metric)
    line = f"  {plain(explanation.method, 80)}; {metric}"
    if metric != "IoU":
        line += f", half-life {context.half_life_px:g} px"
    lines = [line]
    rows = [("prediction", "", "target", "", metric)]
    for pair in listed(explanation.pairs):
        pred, target = getattr(pair, "prediction", None), getattr(pair, "target", None)
        rows.append((
            item_name("P", getattr(pred, "label", "?")), show_value(getattr(pred, "value", None)),
            item_name("T", getattr(target, "label", "?")), show_value(getattr(target, "value", None)),
            show_number(getattr(pair, "similarity", None)),
        ))  # fmt: skip
    for item in listed(explanation.unmatched_predictions):
        rows.append(
            (item_name("P", getattr(item, "label", "?")), show_value(getattr(item, "value", None)), "(unmatched)", "", "0")
        )
    for item in listed(explanation.unmatched_targets):
        rows.append(("(none)", "", item_name("T", getattr(item, "label", "?")), show_value(getattr(item, "value", None)), "0"))
    if len(rows) == 1:
        lines.append("  no items on either side")
    else:
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for what, given in (("missing keys (in the target only)", explanation.missing_keys),
                        ("extra keys (in the prediction only)", explanation.extra_keys)):  # fmt: skip
        keys = listed(given)
        if keys:
            shown = ", ".join(show_value(k, SHOW_KEY_CHARS) for k in keys[:SHOW_KEYS])
            more = f" and {len(keys) - SHOW_KEYS} more" if len(keys) > SHOW_KEYS else ""
            lines.append(f"  {what}: {shown}{more}")
    if explanation.formula:
        lines.append(f"  formula: {plain(explanation.formula, SHOW_CHARS)}")
    return lines


def frame_check(explained: Explained) -> list[str]:
    """Notes on explained items outside the image frame and on normalised coordinates.

    The frame needs an image size and the owner's draw capability; the
    normalised-coordinates hint comes from the run's readings when the owner
    can scale its values, else it is guessed from the drawn items.
    """
    context, explanation = explained.context, explained.explanation
    entry = explained.instance.annotation_entry
    hint = explained.hint
    if explanation is None or context is None or context.image_size is None or entry.draw is None:
        return [hint] if hint else []
    draw = entry.draw

    def draw_item(value: Any) -> Any:
        return draw(annotation_type=entry.name, item=value)

    try:
        return explanation_notes(explanation, draw_item, owner=entry.plugin, size=context.image_size, hint=hint)
    except CannotDraw:  # said when drawing is asked for (--png); the text report stays as it is
        return [hint] if hint else []


def _reward(scores: Mapping[str, float]) -> list[str]:
    keys = ("overall", "task_reward_raw", "answer_reward", "annotation_reward", "format", "json_found", "annotation_parse_ok")
    diag = [
        k
        for k in scores
        if k.startswith("annotation_")
        and not k.startswith("annotation_type_")
        and k not in ("annotation_reward", "annotation_parse_ok")
    ]
    lines = ["", "Reward"]
    lines.append("  " + ", ".join(f"{k} {scores[k]:.4g}" for k in keys))
    if diag:
        lines.append("  " + ", ".join(f"{k.removeprefix('annotation_')} {scores[k]:.4g}" for k in diag))
    return lines
