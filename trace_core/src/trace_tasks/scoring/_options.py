"""Scorer options: validated once per distinct combination, then cached.

Invalid options are caller mistakes and raise :class:`~trace_tasks.errors.OptionError`
(a ``ValueError``) before the response is looked at (docs/contracts.md §6).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.errors import OptionError
from trace_tasks.reading import FINAL_ONLY, LENIENT, OUTSIDE_THINK
from trace_tasks.scoring._frames import PIXEL, Resize, resolve_frame, resolve_resize

ANSWER = "answer"
ANSWER_AND_ANNOTATION = "answer_and_annotation"
GATED = "gated"
ADDITIVE = "additive"
#: ``trace_recovery`` values (docs/contracts.md §3.7): the contract's recovery, recovery
#: outside ``<think>...</think>``, or the final block alone.
RECOVERY_MODES: tuple[str, ...] = (LENIENT, OUTSIDE_THINK, FINAL_ONLY)

MODE_ALIASES = {
    "answer": ANSWER,
    "answer_only": ANSWER,
    "auto": ANSWER,
    "": ANSWER,
    "answer_and_annotation": ANSWER_AND_ANNOTATION,
    "annotation": ANSWER_AND_ANNOTATION,
}
FORMULA_ALIASES = {
    "gated": GATED,
    "answer_gated": GATED,
    "gated_annotation": GATED,
    "": GATED,
    "additive": ADDITIVE,
    "separate": ADDITIVE,
    "linear": ADDITIVE,
}


@attrs.frozen(slots=True, cache_hash=True)  # a dict key per scored response: hash once
class ScoringOptions:
    """Validated, normalized scorer options."""

    mode: str
    formula: str
    answer_weight: float  # normalized: answer_weight + annotation_weight == 1
    annotation_weight: float
    format_weight: float
    point_half_life_px: float | None
    recovery: str = LENIENT  # one of RECOVERY_MODES
    answer_tag: bool = False  # format_accept_answer_tag
    frame: str = PIXEL  # prediction_frame, one of PREDICTION_FRAMES
    resize: Resize | None = None  # resize: smart_resize's parameters (None: the processor's defaults)
    native: bool = False  # annotation_native

    @property
    def departs(self) -> bool:
        """Whether an opt-in option of docs/contracts.md §3.7 departs from the contract (its indicators are reported)."""
        return self.recovery != LENIENT or self.answer_tag

    @property
    def reads_model(self) -> bool:
        """Whether a declared frame or native reading is in force (their indicators are reported)."""
        return self.frame != PIXEL or self.native


def _canonical_name(value: Any, aliases: dict[str, str], what: str, accepted: str) -> str:
    if value is None:
        return aliases[""]
    if isinstance(value, str):
        key = value.strip().lower()
        if key in aliases:
            return aliases[key]
    raise OptionError(f"Trace {what} must be one of {accepted}. got {value!r}")


def resolve_mode(value: Any) -> str:
    """``answer`` or ``answer_and_annotation`` for a mode name or alias."""
    return _canonical_name(
        value,
        MODE_ALIASES,
        "output mode",
        "{'answer', 'answer_only', 'answer_and_annotation'}; shorthand alias 'annotation' is also accepted "
        "(None, '' and 'auto' mean 'answer')",
    )


def resolve_formula(value: Any) -> str:
    """``gated`` or ``additive`` for a formula name or alias."""
    return _canonical_name(
        value,
        FORMULA_ALIASES,
        "annotation reward formula",
        "['additive', 'gated']; aliases ['additive', 'answer_gated', 'gated', 'gated_annotation', 'linear', "
        "'separate'] are accepted",
    )


def resolve_recovery(value: Any) -> str:
    """``lenient``, ``outside_think`` or ``final_only`` (stripped, lower-cased; ``None`` means ``lenient``)."""
    if value is None:
        return LENIENT
    if isinstance(value, str):
        key = value.strip().lower()
        if key in RECOVERY_MODES:
            return key
    raise OptionError(f"Trace trace_recovery must be one of {list(RECOVERY_MODES)} (default 'lenient'), got {value!r}")


def resolve_answer_tag(value: Any) -> bool:
    """``format_accept_answer_tag``: a boolean (numpy booleans too), nothing else."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    raise OptionError(f"Trace format_accept_answer_tag must be True or False, got {value!r}")


def resolve_native(value: Any) -> bool:
    """``annotation_native``: a boolean (numpy booleans too), nothing else."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    raise OptionError(f"Trace annotation_native must be True or False, got {value!r}")


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise OptionError(f"Trace {name} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise OptionError(f"Trace {name} must be finite, got {value!r}")
    return number


#: The largest ``point_half_life_px`` accepted. At this half-life a point off by a
#: whole 8K image's diagonal (~8,800 px) still scores 0.58; anything larger
#: makes every prediction on any real image a near-perfect hit (``1e308`` scores
#: every point 1.0), which is a configuration mistake, never a policy.
MAX_POINT_HALF_LIFE_PX = 10_000.0


def _half_life(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int too large for a float
        raise OptionError(f"Trace point_half_life_px must be a positive finite number, got {value!r}: {exc}") from exc
    if not math.isfinite(number) or number <= 0:
        raise OptionError(f"Trace point_half_life_px must be positive and finite, got {value!r}")
    if number > MAX_POINT_HALF_LIFE_PX:
        raise OptionError(
            f"Trace point_half_life_px must be at most {MAX_POINT_HALF_LIFE_PX:g} px, got {value!r}: "
            "a larger half-life scores every predicted point on any real image as a hit"
        )
    return number


def _resolve(
    mode: Any,
    answer_weight: Any,
    annotation_weight: Any,
    format_weight: Any,
    formula: Any,
    half_life: Any,
    recovery: Any = LENIENT,
    answer_tag: Any = False,
    frame: Any = PIXEL,
    resize: Any = None,
    native: Any = False,
) -> ScoringOptions:
    fw = _real(format_weight, "format_weight")
    if not 0.0 <= fw <= 1.0:
        raise OptionError(f"Trace format_weight must be in [0, 1], got {format_weight!r}")
    aw = _real(answer_weight, "answer_weight")
    nw = _real(annotation_weight, "annotation_weight")
    if aw < 0 or nw < 0:
        raise OptionError(f"Trace reward weights must be non-negative, got answer_weight={aw!r}, annotation_weight={nw!r}")
    total = aw + nw
    if not total > 0 or not math.isfinite(total):
        raise OptionError("Trace reward weights must sum to a positive value")
    hl = _half_life(half_life)
    return ScoringOptions(
        resolve_mode(mode),
        resolve_formula(formula),
        aw / total,
        nw / total,
        fw,
        hl,
        resolve_recovery(recovery),
        resolve_answer_tag(answer_tag),
        resolve_frame(frame),
        resolve_resize(resize),
        resolve_native(native),
    )


# typed=True: True and 1 hash alike, but only one of them is a valid weight.
_cached = functools.lru_cache(maxsize=256, typed=True)(_resolve)


def resolve_options(
    mode: Any,
    answer_weight: Any,
    annotation_weight: Any,
    format_weight: Any,
    formula: Any,
    half_life: Any,
    recovery: Any = LENIENT,
    answer_tag: Any = False,
    frame: Any = PIXEL,
    resize: Any = None,
    native: Any = False,
) -> ScoringOptions:
    """Validate and normalize scorer options; raises :class:`~trace_tasks.errors.OptionError` naming the bad option."""
    args = (
        mode,
        answer_weight,
        annotation_weight,
        format_weight,
        formula,
        half_life,
        recovery,
        answer_tag,
        frame,
        resize,
        native,
    )
    try:
        return _cached(*args)
    except TypeError:  # an unhashable option value: validate without the cache
        return _resolve(*args)


#: The scorer options as ``score_trace_response`` names them, with their defaults.
OPTION_DEFAULTS: dict[str, Any] = {
    "trace_reward_mode": "answer_and_annotation",
    "answer_weight": 0.5,
    "annotation_weight": 0.5,
    "format_weight": 0.0,
    "trace_annotation_reward_formula": "gated",
    "point_half_life_px": None,
    "trace_recovery": LENIENT,
    "format_accept_answer_tag": False,
    "prediction_frame": PIXEL,
    "resize": None,
    "annotation_native": False,
}


def options_from(options: Mapping[str, Any]) -> ScoringOptions:
    """:func:`resolve_options` of keyword options as ``score_trace_response`` names them (defaults for the rest).

    The one place a mapping of option names becomes the options object; an
    unknown name is an :class:`~trace_tasks.errors.OptionError` naming it.
    """
    unknown = sorted(set(options) - OPTION_DEFAULTS.keys())
    if unknown:
        raise OptionError(f"unknown scorer option(s) {unknown}; accepted: {list(OPTION_DEFAULTS)}")
    merged = {**OPTION_DEFAULTS, **options}
    return resolve_options(
        merged["trace_reward_mode"],
        merged["answer_weight"],
        merged["annotation_weight"],
        merged["format_weight"],
        merged["trace_annotation_reward_formula"],
        merged["point_half_life_px"],
        merged["trace_recovery"],
        merged["format_accept_answer_tag"],
        merged["prediction_frame"],
        merged["resize"],
        merged["annotation_native"],
    )
