"""Why a reward is what it is, in a few lines of text built from a result dict alone.

Used as the header of ``trace-tasks explain --png`` and beside every case of
``trace-tasks report``. Pure functions of the scores (the option echoes of the
result, ``docs/contracts.md`` section 6, say which formula applied) and of the
family's formula text: no Pillow, no registry, nothing that can raise on a
scores row read from a file (a missing or non-numeric key shows as ``?``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trace_tasks.cli._views.explanation import plain
from trace_tasks.scoring import ADDITIVE, ANNOTATION_ONLY, ANSWER_AND_ANNOTATION, OPTION_BY_NAME


def number(value: Any, digits: int = 4) -> str:
    """``value`` with up to ``digits`` significant digits; ``?`` for anything not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "?"
    return f"{float(value):.{digits}g}"


def _flag(scores: Mapping[str, Any], key: str) -> bool:
    return scores.get(key) == 1.0


def _yes(scores: Mapping[str, Any], key: str) -> str:
    return "yes" if _flag(scores, key) else "no"


def _echoed(scores: Mapping[str, Any], name: str) -> Any:
    """The option ``name`` as the row's echo says it (the options table decodes it; ``None`` when it does not say)."""
    return OPTION_BY_NAME[name].decode(scores)


def answer_mode(scores: Mapping[str, Any]) -> bool:
    """True when the row was scored in answer mode (the annotation stays out of the task reward)."""
    return _echoed(scores, "trace_reward_mode") not in (ANSWER_AND_ANNOTATION, ANNOTATION_ONLY)


def annotation_only(scores: Mapping[str, Any]) -> bool:
    """True when the row was scored in the annotation_only mode (no answer; the task reward is the annotation reward)."""
    return bool(_echoed(scores, "trace_reward_mode") == ANNOTATION_ONLY)


def gated(scores: Mapping[str, Any]) -> bool:
    """True when the gated formula applied (a wrong answer earns nothing)."""
    return bool(_echoed(scores, "trace_annotation_reward_formula") != ADDITIVE)


def task_line(scores: Mapping[str, Any]) -> str:
    """The task reward as the formula that produced it, with the row's numbers."""
    task, answer, annotation = (number(scores.get(k)) for k in ("task_reward_raw", "answer_reward", "annotation_reward"))
    a, n = number(_echoed(scores, "answer_weight")), number(_echoed(scores, "annotation_weight"))
    if answer_mode(scores):
        return f"task {task} = answer {answer} (answer mode: the annotation is not part of the reward)"
    if annotation_only(scores):
        return f"task {task} = annotation {annotation} (annotation_only mode: no answer, nothing gates it)"
    if gated(scores):
        return f"task {task} = answer {answer} x ({a} + {n} x annotation {annotation})  [gated]"
    return f"task {task} = {a} x answer {answer} + {n} x annotation {annotation}  [additive]"


def overall_line(scores: Mapping[str, Any]) -> str:
    """``overall`` from the task reward and the format blend."""
    overall, weight = number(scores.get("overall")), _echoed(scores, "format_weight")
    if not weight:
        return f"overall {overall} = task {number(scores.get('task_reward_raw'))} (format weight 0)"
    return (
        f"overall {overall} = (1 - {number(weight)}) x task {number(scores.get('task_reward_raw'))}"
        f" + {number(weight)} x format {number(scores.get('format'))}"
    )


def answer_line(scores: Mapping[str, Any]) -> str:
    """Right or wrong, and what that does to the annotation's share (the gate)."""
    if annotation_only(scores):
        return "no answer (annotation_only mode)"
    right = scores.get("answer_reward") == 1.0
    verdict = "right" if right else "wrong"
    text = f"answer {verdict} (answer_reward {number(scores.get('answer_reward'))})"
    if answer_mode(scores):
        return text
    if gated(scores):
        return text + (": gate open, the annotation counts" if right else ": gated, the annotation earns nothing")
    return text + ": additive, the annotation counts either way"


def annotation_line(scores: Mapping[str, Any], reward_id: str = "", formula: Any = "") -> str:
    """The annotation reward with the family's formula (its denominator), or why it is 0."""
    head = f"annotation {number(scores.get('annotation_reward'))}"
    if reward_id:
        head += f" ({plain(reward_id, 60)})"
    if scores.get("annotation_parse_ok") == 0.0:
        why = "no annotation predicted, or it does not parse" if scores.get("json_found") == 1.0 else "no JSON found"
        return f"{head}: not scored ({why}; annotation_parse_ok 0)"
    arithmetic = plain(formula.rsplit(" = ", 1)[0], 160) if isinstance(formula, str) else ""
    if arithmetic and arithmetic != number(scores.get("annotation_reward")):  # "0.95 = 0.95" says nothing
        return f"{head} = {arithmetic}"
    return head


def format_line(scores: Mapping[str, Any]) -> str:
    """The format score and its three checks."""
    return (
        f"format {number(scores.get('format'))} (structure {_yes(scores, 'format_structure_ok')}, "
        f"JSON {_yes(scores, 'format_json_ok')}, schema {_yes(scores, 'format_schema_ok')})"
    )


def reward_breakdown(scores: Mapping[str, Any], *, reward_id: str = "", formula: Any = "") -> list[str]:
    """The lines of a reward breakdown: overall, task, answer (with the gate), annotation (with its formula), format."""
    return [
        overall_line(scores),
        task_line(scores),
        answer_line(scores),
        annotation_line(scores, reward_id, formula),
        format_line(scores),
    ]
