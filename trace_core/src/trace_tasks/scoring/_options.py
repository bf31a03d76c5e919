"""Scorer options: one record, one table, validated once per distinct combination, then cached.

:class:`ScoringOptions` is the record and its fields are the table (:data:`OPTIONS`):
each option's API name, command-line flag, default, result keys and description,
read by every place that names the options. Invalid options are caller mistakes and raise :class:`~trace_tasks.errors.OptionError`
(a ``ValueError``) before the response is looked at (docs/contracts.md §6).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from trace_tasks.errors import OptionError
from trace_tasks.reading import FINAL_ONLY, LENIENT, OUTSIDE_THINK, ToolCall, load_json
from trace_tasks.scoring._frames import (
    DEFAULT_RESIZE,
    PIXEL,
    PREDICTION_FRAMES,
    RESIZE_KEYS,
    Resize,
    resolve_frame,
    resolve_resize,
)
from trace_tasks.scoring._relaxed import RELAXED_TOLERANCE

_F = TypeVar("_F", bound=Callable[..., Any])

ANSWER = "answer"
ANSWER_AND_ANNOTATION = "answer_and_annotation"
#: The mode of tasks without an answer (referring expressions, GUI clicks): the final object is
#: ``{"annotation": ...}`` and the task reward is the annotation reward (docs/contracts.md §3.1, §6).
ANNOTATION_ONLY = "annotation_only"
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
    "annotation_only": ANNOTATION_ONLY,
    "grounding": ANNOTATION_ONLY,
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


def _canonical_name(value: Any, aliases: dict[str, str], what: str, accepted: str) -> str:
    if value is None:
        return aliases[""]
    if isinstance(value, str):
        key = value.strip().lower()
        if key in aliases:
            return aliases[key]
    raise OptionError(f"Trace {what} must be one of {accepted}. got {value!r}")


def resolve_mode(value: Any) -> str:
    """``answer``, ``answer_and_annotation`` or ``annotation_only`` for a mode name or alias."""
    return _canonical_name(
        value,
        MODE_ALIASES,
        "output mode",
        "{'answer', 'answer_only', 'answer_and_annotation', 'annotation_only'}; shorthand aliases 'annotation' "
        "(answer_and_annotation) and 'grounding' (annotation_only) are also accepted (None, '' and 'auto' mean 'answer')",
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


def _real(value: Any, name: str) -> float:
    """A finite real number (``bool`` refused); an int too large for a float is an :class:`OptionError` too."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise OptionError(f"Trace {name} must be a real number, got {_shown(value)}")
    try:
        number = float(value)
    except (OverflowError, ValueError) as exc:  # 10**400: no float holds it
        raise OptionError(f"Trace {name} must be a finite real number, got {_shown(value)}: {exc}") from exc
    if not math.isfinite(number):
        raise OptionError(f"Trace {name} must be finite, got {_shown(value)}")
    return number


def _shown(value: Any) -> str:
    """``repr(value)``, cut short: an option of 10**400 (or a huge string) is named, not printed whole."""
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits
        return f"an int of about {value.bit_length() * 0.30103:.0f} digits"
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _weight(value: Any, name: str) -> float:
    number = _real(value, name)
    if number < 0:
        raise OptionError(f"Trace reward weights must be non-negative, got {name}={number!r}")
    return number


def _format_weight(value: Any, name: str) -> float:
    number = _real(value, name)
    if not 0.0 <= number <= 1.0:
        raise OptionError(f"Trace {name} must be in [0, 1], got {_shown(value)}")
    return number


#: The largest ``point_half_life_px`` accepted. At this half-life a point off by a
#: whole 8K image's diagonal (~8,800 px) still scores 0.58; anything larger
#: makes every prediction on any real image a near-perfect hit (``1e308`` scores
#: every point 1.0), which is a configuration mistake, never a policy.
MAX_POINT_HALF_LIFE_PX = 10_000.0


def _half_life(value: Any, name: str = "point_half_life_px") -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int too large for a float
        raise OptionError(f"Trace {name} must be a positive finite number, got {_shown(value)}: {exc}") from exc
    if not math.isfinite(number) or number <= 0:
        raise OptionError(f"Trace {name} must be positive and finite, got {_shown(value)}")
    if number > MAX_POINT_HALF_LIFE_PX:
        raise OptionError(
            f"Trace {name} must be at most {MAX_POINT_HALF_LIFE_PX:g} px, got {_shown(value)}: "
            "a larger half-life scores every predicted point on any real image as a hit"
        )
    return number


def _tolerance(value: Any, name: str = "answer_relative_tolerance") -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise OptionError(f"Trace {name} must be a number in [0, 1), got {_shown(value)}: {exc}") from exc
    if not 0.0 <= number < 1.0:  # 1 or more would accept every number of the target's sign (and 0 for any target)
        raise OptionError(f"Trace {name} must be in [0, 1) (0.05 is ChartQA's 5%), got {_shown(value)}")
    return number


# --- the table ---------------------------------------------------------------------------------

#: How the command line reads an option: a number, a word, or a switch (present means True).
NUMBER, TEXT, SWITCH = "number", "text", "switch"


@attrs.frozen(slots=True)
class Echo:
    """One result key echoing an option (docs/contracts.md §7).

    With ``when`` empty the key holds the option's value as a float (``part``: the
    value's attribute of that name, for a record such as ``resize``); otherwise it
    holds 1.0 when the option's canonical value is one of ``when``, else 0.0 (a one-hot).
    ``only``: the key is in the result only when the value is one of ``when`` (then
    always 1.0): a value added after the contract's key set was fixed, such as the
    ``annotation_only`` mode, adds its key to its own results and to no others.
    """

    key: str
    when: tuple[Any, ...] = ()
    part: str = ""
    only: bool = False

    def of(self, value: Any) -> float:
        """The echoed float for the option's canonical ``value``."""
        if self.part:
            return float(getattr(value, self.part))
        if not self.when:
            return float(value)
        return 1.0 if value in self.when else 0.0


@attrs.frozen(slots=True)
class Option:
    """One row of the options table: everything the library says about one scorer option.

    ``name`` is the keyword every API takes (``score_trace_response``,
    :meth:`~trace_tasks.CompiledInstance.score`, ``score_trace_batch``, the
    integrations' configs and rows' ``extra_info``); ``flag`` the command line's
    spelling; ``default`` the contract's value; ``echo`` the result keys that
    report it; ``description`` the one text every doc and ``--help`` shows.
    ``resolve`` validates a value and returns its canonical form (an
    :class:`~trace_tasks.errors.OptionError` naming the option otherwise).
    ``opt_in``: a departure from the contract: its echo is in the result only
    when some opt-in option of its ``group`` is not at its default (:data:`POLICIES`:
    the response policies of docs/contracts.md §3.7; :data:`MODEL_READINGS`: a
    declared prediction frame and native reading, docs/contracts.md, "Coordinate frames").
    ``cli`` is how the command line reads it (:data:`NUMBER`, :data:`TEXT` or
    :data:`SWITCH`), ``metavar`` its placeholder in ``--help``.
    """

    name: str
    flag: str
    default: Any
    echo: tuple[Echo, ...]
    description: str
    resolve: Callable[[Any, str], Any] = attrs.field(repr=False, eq=False)
    opt_in: bool = False
    cli: str = TEXT
    metavar: str | None = None
    group: str = ""

    def decode(self, scores: Mapping[str, Any]) -> Any:
        """The option's value as a result row echoes it (``None`` when the row does not say).

        A one-hot echo gives the value of its first key at exactly 1.0 that names
        one value; a value echo the number it holds (``True``/``False`` for a switch);
        echoes of a record's parts the record, rebuilt by ``resolve`` from them.
        """
        if self.echo and all(echo.part for echo in self.echo):
            numbers: dict[str, int] = {}
            for echo in self.echo:
                got = scores.get(echo.key)
                if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
                    return None
                numbers[echo.part] = int(got)
            try:
                return self.resolve(numbers, self.name)
            except OptionError:
                return None
        for echo in self.echo:
            got = scores.get(echo.key)
            if not echo.when:
                if got is None or isinstance(got, bool) or not isinstance(got, (int, float)):
                    return None
                return got == 1.0 if self.cli == SWITCH else got
            if len(echo.when) == 1 and got == 1.0:
                return echo.when[0]
        return None


def _option(
    default: Any,
    flag: str,
    resolve: Callable[[Any, str], Any],
    description: str,
    *,
    echo: tuple[Echo, ...] = (),
    opt_in: bool = False,
    cli: str = TEXT,
    metavar: str | None = None,
    group: str = "",
) -> Any:
    """A field of :class:`ScoringOptions` carrying its table row (named after the field once the class exists)."""
    row = Option("", flag, default, echo, description, resolve, opt_in, cli, metavar, group or (POLICIES if opt_in else ""))
    return attrs.field(default=default, metadata={_ROW: row})


_ROW = "trace_tasks.option"
#: The opt-in groups: the response policies (docs/contracts.md §3.7), and the model's own frame and shapes.
POLICIES = "policies"
MODEL_READINGS = "model_readings"
#: The opt-in group of the declared tool call (docs/contracts.md §3.9): its echo only when declared.
TOOL_CALLS = "tool_calls"


def _mode(value: Any, _name: str) -> str:
    return resolve_mode(value)


def _formula(value: Any, _name: str) -> str:
    return resolve_formula(value)


def _recovery(value: Any, _name: str) -> str:
    return resolve_recovery(value)


def _answer_tag(value: Any, _name: str) -> bool:
    return resolve_answer_tag(value)


def resolve_native(value: Any) -> bool:
    """``annotation_native``: a boolean (numpy booleans too), nothing else."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    raise OptionError(f"Trace annotation_native must be True or False, got {_shown(value)}")


def resolve_tool_call(value: Any) -> ToolCall | None:
    """``tool_call``: ``None`` (default), or ``{"name": TOOL, "argument": ARG}`` (a mapping or its JSON text);
    ``ARG`` one argument name, or a non-empty list of names whose values form the annotation in order."""
    if value is None or isinstance(value, ToolCall):
        return value
    if isinstance(value, str):
        if not value.strip() or value.strip().lower() == "none":
            return None
        parsed, ok = load_json(value)
        if not ok:
            raise OptionError(f'Trace tool_call must be {{"name": TOOL, "argument": ARG}} or its JSON text, got {_shown(value)}')
        value = parsed
    if not isinstance(value, Mapping) or set(value) != {"name", "argument"}:
        raise OptionError(
            'Trace tool_call must be a mapping with exactly the keys "name" (the tool) and "argument" (the argument '
            f"name, or a list of names whose values form the annotation in order), got {_shown(value)}"
        )
    name, argument = value["name"], value["argument"]
    if not isinstance(name, str) or not name.strip() or not re.fullmatch(r"[A-Za-z_][\w.-]*", name.strip()):
        raise OptionError(f"Trace tool_call name must be a tool's name (letters, digits, _ . -), got {_shown(name)}")
    names: tuple[str, ...]
    if isinstance(argument, str):
        names, single = (argument.strip(),), True
    elif isinstance(argument, (list, tuple)) and argument:
        names, single = tuple(a.strip() if isinstance(a, str) else "" for a in argument), False
    else:
        names, single = ("",), True
    if not all(names):
        raise OptionError(f"Trace tool_call argument must be a name or a non-empty list of names, got {_shown(argument)}")
    return ToolCall(name.strip(), names, single)


def _tool_call(value: Any, _name: str) -> ToolCall | None:
    return resolve_tool_call(value)


def _frame(value: Any, _name: str) -> str:
    return resolve_frame(value)


def _resize(value: Any, _name: str) -> Resize:
    resolved = resolve_resize(value)
    return DEFAULT_RESIZE if resolved is None else resolved  # None: the processor's defaults


def _native(value: Any, _name: str) -> bool:
    return resolve_native(value)


@attrs.frozen(slots=True, cache_hash=True, kw_only=True)  # a dict key per scored response: hash once
class ScoringOptions:
    """The scorer options, validated and in canonical form: one record, and its fields are the one table.

    Build it with keywords, as ``score_trace_response`` names them
    (``ScoringOptions(trace_reward_mode="answer", format_weight=0.1)``); every
    value is validated and canonicalised on construction (an alias becomes its
    name, the two reward weights are normalised to sum to 1, as the result echoes
    them) and an invalid one raises :class:`~trace_tasks.errors.OptionError`
    naming it. Pass it as ``options=`` to :meth:`~trace_tasks.CompiledInstance.score`,
    :meth:`~trace_tasks.CompiledInstance.score_group` or ``score_trace_batch``.

    Each field's :class:`Option` row (:data:`OPTIONS`, in field order) is what the
    library says about it: its API name, command-line flag, default, result keys
    and description. The signatures' docs, the command line's flags, the result's
    option echo and its decoding by the report, the integrations'
    ``SCORER_OPTIONS`` and the batch's ``SCORE_KEYWORDS`` are all read from it;
    adding an option is one field here. The field order is the order of the
    echoes in the result (docs/contracts.md §7).
    """

    format_weight: float = _option(
        0.0, "--format-weight", _format_weight,
        "weight of the format score in [0, 1], blended into overall",
        echo=(Echo("format_weight"),), cli=NUMBER, metavar="W",
    )  # fmt: skip
    trace_reward_mode: str = _option(
        ANSWER_AND_ANNOTATION, "--mode", _mode,
        "answer (alias answer_only: the annotation stays out of the task reward), answer_and_annotation "
        "(alias annotation) or annotation_only (alias grounding: the final object is {\"annotation\": ...}, "
        "no answer is read or needed, the task reward is the annotation reward)",
        # The fourth key echoes how the answer is scored: by exact JSON match, in the modes that read one.
        # annotation_only's key is in its own results only (the default key set is the contract's).
        echo=(
            Echo("trace_reward_mode_answer", (ANSWER,)),
            Echo("trace_reward_mode_answer_only", (ANSWER,)),
            Echo("trace_reward_mode_answer_and_annotation", (ANSWER_AND_ANNOTATION,)),
            Echo("trace_answer_scoring_exact_json", (ANSWER, ANSWER_AND_ANNOTATION)),
            Echo("trace_reward_mode_annotation_only", (ANNOTATION_ONLY,), only=True),
        ),
        metavar="MODE",
    )  # fmt: skip
    trace_annotation_reward_formula: str = _option(
        GATED, "--formula", _formula,
        "gated (a wrong answer earns nothing) or additive",
        echo=(
            Echo("trace_annotation_reward_formula_gated", (GATED,)),
            Echo("trace_annotation_reward_formula_additive", (ADDITIVE,)),
        ),
        metavar="NAME",
    )  # fmt: skip
    answer_weight: float = _option(
        0.5, "--answer-weight", _weight,
        "weight of the answer reward in the task reward (normalised by the sum of the two weights)",
        echo=(Echo("trace_answer_weight"),), cli=NUMBER, metavar="W",
    )  # fmt: skip
    annotation_weight: float = _option(
        0.5, "--annotation-weight", _weight,
        "weight of the annotation reward in the task reward (normalised by the sum of the two weights)",
        echo=(Echo("trace_annotation_weight"),), cli=NUMBER, metavar="W",
    )  # fmt: skip
    point_half_life_px: float | None = _option(
        None, "--point-half-life-px", _half_life,
        "half-life in pixels for points and segments; overrides the image-size policy",
        cli=NUMBER, metavar="PX",
    )  # fmt: skip
    answer_relative_tolerance: float = _option(
        RELAXED_TOLERANCE, "--answer-relative-tolerance", _tolerance,
        "relative tolerance of answer_relaxed_match_v0 for number answers, in [0, 1) (0.05: ChartQA's relaxed "
        "accuracy); used only when a contract names that pinned version",
        # cli=TEXT, resolved to a float here: the report decodes an absent NUMBER echo as 0.0, which an opt-in
        # echo (present only beside another departure) would hit; TEXT decodes an absent echo as the default.
        echo=(Echo("trace_answer_relative_tolerance"),), opt_in=True, cli=TEXT, metavar="R",
    )  # fmt: skip
    trace_recovery: str = _option(
        LENIENT, "--recovery", _recovery,
        "lenient (the contract's recovery), outside_think (recovery and atomic answers ignore "
        "<think>...</think>) or final_only (the final block or nothing)",
        echo=tuple(Echo(f"trace_recovery_{mode}", (mode,)) for mode in RECOVERY_MODES),
        opt_in=True, metavar="POLICY",
    )  # fmt: skip
    format_accept_answer_tag: bool = _option(
        False, "--format-accept-answer-tag", _answer_tag,
        "a response ending with <answer>OBJECT</answer> gets format 1",
        echo=(Echo("format_accept_answer_tag"),), opt_in=True, cli=SWITCH,
    )  # fmt: skip
    prediction_frame: str = _option(
        PIXEL, "--prediction-frame", _frame,
        "the coordinate frame the model writes, converted to pixels of the image before scoring: pixel, rel1000, "
        "rel999, rel1, resized (pixels of Qwen's resized input) or rel1000_yx (y first, Gemini); declared, never "
        "guessed; a frame other than pixel needs the image size",
        echo=tuple(Echo(f"trace_prediction_frame_{frame}", (frame,)) for frame in PREDICTION_FRAMES),
        opt_in=True, metavar="FRAME", group=MODEL_READINGS,
    )  # fmt: skip
    resize: Resize = _option(  # noqa: RUF009 (a table row, as every field here; Resize is frozen)
        DEFAULT_RESIZE, "--resize", _resize,
        "the resized frame's smart_resize parameters, a mapping (or its JSON) of factor, min_pixels and max_pixels; "
        "default the Qwen2-VL processor's: factor 28, min_pixels 3136, max_pixels 1003520",
        echo=tuple(Echo(f"trace_resize_{part}", part=part) for part in RESIZE_KEYS),
        opt_in=True, metavar="JSON", group=MODEL_READINGS,
    )  # fmt: skip
    annotation_native: bool = _option(
        False, "--annotation-native", _native,
        "read a model-native annotation (Qwen-VL's [{\"bbox_2d\": [...], \"label\": ...}], a single such object, "
        "a one-item list for a scalar type; a map's keys from the labels) as the annotation",
        echo=(Echo("trace_annotation_native"),), opt_in=True, cli=SWITCH, group=MODEL_READINGS,
    )  # fmt: skip
    tool_call: ToolCall | None = _option(  # noqa: RUF009 (a table row, as every field here; ToolCall is frozen)
        None, "--tool-call", _tool_call,
        "read the annotation from the response's last call of a declared tool: {\"name\": TOOL, \"argument\": ARG} "
        "(ARG the argument holding the geometry, or a list of names whose values form it in order), in the "
        "<tool_call> JSON, JSON function call, name(x=.., y=..) or name(.., ..) forms; never guessed",
        echo=(Echo("trace_tool_call", part="declared"),), opt_in=True, metavar="JSON", group=TOOL_CALLS,
    )  # fmt: skip

    def __attrs_post_init__(self) -> None:
        for row in OPTIONS:  # each value validated and canonical, errors in table order
            object.__setattr__(self, row.name, row.resolve(getattr(self, row.name), row.name))
        total = self.answer_weight + self.annotation_weight
        if not total > 0 or not math.isfinite(total):
            raise OptionError(
                "Trace reward weights must sum to a positive finite value, "
                f"got answer_weight={self.answer_weight!r}, annotation_weight={self.annotation_weight!r}"
            )
        object.__setattr__(self, "answer_weight", self.answer_weight / total)
        object.__setattr__(self, "annotation_weight", self.annotation_weight / total)

    @property
    def departs(self) -> bool:
        """Whether a response policy of docs/contracts.md §3.7 departs from the contract (its indicators are reported)."""
        return self.departs_in(POLICIES)

    @property
    def reads_model(self) -> bool:
        """Whether a prediction frame other than ``pixel``, or native reading, is declared (its indicators are reported)."""
        return self.prediction_frame != PIXEL or self.annotation_native  # resize alone changes no reading

    def departs_in(self, group: str) -> bool:
        """Whether an opt-in option of ``group`` is not at its default (the group's echoes are then reported)."""
        return any(getattr(self, row.name) != row.default for row in OPTIONS if row.opt_in and row.group == group)

    def keywords(self) -> dict[str, Any]:
        """The options as keyword arguments (``score_trace_response(**opts.keywords(), ...)`` scores with them)."""
        return {row.name: getattr(self, row.name) for row in OPTIONS}


#: The options table: one :class:`Option` per field of :class:`ScoringOptions`, in field order.
OPTIONS: tuple[Option, ...] = tuple(attrs.evolve(field.metadata[_ROW], name=field.name) for field in attrs.fields(ScoringOptions))
#: Each option's row by its API name.
OPTION_BY_NAME: dict[str, Option] = {row.name: row for row in OPTIONS}
#: The scorer options by API name with their defaults, in table order.
OPTION_DEFAULTS: dict[str, Any] = {row.name: row.default for row in OPTIONS}
#: The options' API names, in table order.
OPTION_NAMES: tuple[str, ...] = tuple(OPTION_DEFAULTS)

_construct = ScoringOptions


def _resolve(*values: Any) -> ScoringOptions:
    return _construct(**dict(zip(OPTION_NAMES, values, strict=True)))


# typed=True: True and 1 hash alike, but only one of them is a valid weight.
_cached = functools.lru_cache(maxsize=256, typed=True)(_resolve)


def resolve_options(*values: Any) -> ScoringOptions:
    """:class:`ScoringOptions` of the option values in table order (:data:`OPTION_NAMES`), cached.

    The hot path's door: ``score_trace_response`` passes its keyword options
    positionally, so a call costs one cache lookup. Raises
    :class:`~trace_tasks.errors.OptionError` naming the bad option.
    """
    try:
        return _cached(*values)
    except TypeError:  # an unhashable option value: validate without the cache
        return _resolve(*values)


DEFAULT_OPTIONS = ScoringOptions()


def options_from(options: Mapping[str, Any]) -> ScoringOptions:
    """:class:`ScoringOptions` of keyword options as ``score_trace_response`` names them (defaults for the rest).

    The one place a mapping of option names becomes the options object; an
    unknown name is an :class:`~trace_tasks.errors.OptionError` naming it.
    """
    if not _NAMES.issuperset(options):
        unknown = sorted(set(options) - _NAMES, key=str)
        raise OptionError(f"unknown scorer option(s) {unknown}; accepted: {list(OPTION_NAMES)}")
    if not options:
        return DEFAULT_OPTIONS
    try:  # an adapter's options, met on every request: one lookup by the given items (each value with its type)
        items = (tuple(options.items()), tuple(map(type, options.values())))
        known = _from_mappings.get(items)
        key: tuple[Any, ...] | None = items
    except TypeError:  # an unhashable value: validated without the memo
        key = known = None
    if known is not None:
        return known
    opts = resolve_options(*(options.get(name, default) for name, default in OPTION_DEFAULTS.items()))
    if key is not None:
        if len(_from_mappings) >= 256:  # ever-new mappings: keep memory bounded
            _from_mappings.clear()
        _from_mappings[key] = opts
    return opts


#: :func:`options_from`'s records by the mapping's items and each value's type (as ``resolve_options``' cache
#: tells ``True`` from ``1``).
_from_mappings: dict[tuple[Any, ...], ScoringOptions] = {}
_NAMES = frozenset(OPTION_NAMES)


def options_doc(indent: str = "") -> str:
    """The options as reST ``:param:`` fields, from the table (appended to the scoring signatures' docstrings)."""
    lines = []
    for row in OPTIONS:
        echo = ", ".join(f"``{e.key}``" for e in row.echo) or "not echoed"
        where = " (opt-in, docs/contracts.md §3.7)" if row.opt_in else ""
        lines.append(
            f"{indent}:param {row.name}: {row.description}{where}. Default ``{row.default!r}``; "
            f"command line ``{row.flag}``; result echo: {echo}."
        )
    return "\n".join(lines)


def document_options(function: _F) -> _F:
    """Append :func:`options_doc` to ``function``'s docstring (its options are the table's)."""
    doc = inspect.cleandoc(function.__doc__ or "")
    function.__doc__ = (
        f"{doc}\n\nScorer options (:data:`~trace_tasks.scoring.OPTIONS`, the fields of ScoringOptions):\n\n{options_doc()}\n"
    )
    return function
