"""Every exception trace_tasks raises on purpose, all of them :class:`TraceTasksError`.

Model output never raises: these are for caller and deployment mistakes only
(bad options, a non-string response, a missing family, a broken plugin, a
malformed instance). Where Python has a matching built-in class the error is
one too (an :class:`OptionError` is a ``ValueError``, a
:class:`ResponseTypeError` a ``TypeError``), so ``except ValueError`` written
before these classes existed keeps working.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

__all__ = [
    "AnnotationParseError",
    "ClusterMismatchError",
    "ContractError",
    "FamilyDefinitionError",
    "InstanceError",
    "MissingFamilyError",
    "OptionError",
    "PluginConflictError",
    "PluginError",
    "PluginLoadError",
    "PluginValidationError",
    "Problem",
    "RayJobError",
    "RecordError",
    "ResponseTypeError",
    "RewardPinError",
    "TraceTasksError",
    "UnknownRewardIdError",
    "UnknownTypeError",
    "listed",
    "shown",
    "suggest",
]


class TraceTasksError(Exception):
    """Base class of every error trace_tasks raises on purpose."""


# --------------------------------------------------------------------------- caller mistakes


class OptionError(TraceTasksError, ValueError):
    """An invalid option or argument of a call (a weight, a mode, ``workers``...); the message names it."""


class ResponseTypeError(TraceTasksError, TypeError):
    """A response that is not a ``str`` (the model's decoded text), or responses that are not a sequence of them."""


class UnknownTypeError(TraceTasksError, ValueError):
    """An answer or annotation type no installed plugin registers; the message lists near matches."""


class ContractError(TraceTasksError, ValueError):
    """A reward contract that the resolver would not build (wrong version, id or type)."""


class MissingFamilyError(TraceTasksError, ImportError):
    """An official annotation type was asked for but its family is not installed (or is disabled).

    ``disabled_by`` names the variable that filtered out the installed family
    (``TRACE_TASKS_PLUGINS``, an allow-list, or ``TRACE_TASKS_DISABLE_PLUGINS``);
    the message then leads with the change to make to it instead of ``pip install``.
    """

    def __init__(self, annotation_type: str, distribution: str, *, disabled_by: str | None = None) -> None:
        self.annotation_type = annotation_type
        self.distribution = distribution
        self.disabled_by = disabled_by
        if disabled_by == "TRACE_TASKS_PLUGINS":  # the allow-list (trace_tasks.plugins.ALLOW_ENV)
            message = (
                f"add {distribution} to {disabled_by} (or unset it) to score annotation type {annotation_type!r}: "
                f"the {distribution} family is installed, but {disabled_by} leaves it out"
            )
        elif disabled_by:
            message = (
                f"unset {disabled_by} (or take the family out of it) to score annotation type {annotation_type!r}: "
                f"the {distribution} family is installed, but {disabled_by} disables it"
            )
        else:
            message = (
                f"annotation type {annotation_type!r} belongs to the {distribution} family, "
                f"which is not installed: pip install {distribution}"
            )
        super().__init__(message)


class UnknownRewardIdError(TraceTasksError, ValueError):
    """A reward id that no installed family offers, or that is not current."""


class RewardPinError(TraceTasksError, ValueError):
    """A user's pin (``TRACE_TASKS_REWARD_IDS`` or ``pin_reward_id``) names no usable reward id."""


# --------------------------------------------------------------------------- instance records


class RecordError(TraceTasksError, ValueError):
    """An instance record is malformed; the message gives the path of the problem."""

    def __init__(self, message: str, *, path: str = "", record: str | None = None) -> None:
        self.message = message
        self.path = path
        self.record = record
        where = f"{record}: " if record else ""
        at = f"{path}: " if path else ""
        super().__init__(f"{where}{at}{message}")


@attrs.frozen(slots=True)
class Problem:
    """One problem of an instance: the JSON path (``$.annotation_gt.type``) and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InstanceError(RecordError):
    """An instance that cannot be scored honestly; ``problems`` lists every problem.

    The message is ``invalid instance: PATH: MESSAGE; PATH: MESSAGE...``, after
    the record's name when one is given (``record``). ``path`` is the first
    problem's path. A :class:`RecordError`, hence a ``ValueError``.
    """

    def __init__(self, problems: Sequence[Problem], *, record: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        listed = "; ".join(str(p) for p in self.problems) or "no problem recorded"
        super().__init__(f"invalid instance: {listed}", record=record)
        self.path = self.problems[0].path if self.problems else "$"

    def __reduce__(self) -> Any:  # picklable across process pools and Ray
        return (_rebuild_instance_error, (self.problems, self.record))


def _rebuild_instance_error(problems: tuple[Problem, ...], record: str | None) -> InstanceError:
    return InstanceError(problems, record=record)


# --------------------------------------------------------------------------- plugins and families


class PluginError(TraceTasksError):
    """A plugin that cannot be used as installed; ``plugin`` names it (entry point or registered name) when known."""

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin


class PluginLoadError(PluginError):
    """A plugin's entry point could not be imported or registered.

    The message names the entry point and its distribution; ``__cause__``
    keeps the original exception.
    """


class PluginConflictError(PluginError):
    """Two plugins claim the same entry-point name, annotation type or reward id."""


class PluginValidationError(PluginError):
    """A plugin implements a hook that matches no spec, or declares bad metadata."""


class FamilyDefinitionError(TraceTasksError, ValueError):
    """A family or record built wrong by its author (an unknown shape, a type without reward ids...)."""


class ClusterMismatchError(TraceTasksError, RuntimeError):
    """A Ray node cannot score as this process would: the project missing there, or other families, versions or pins."""


class RayJobError(TraceTasksError, RuntimeError):
    """A Ray job of ``trace-tasks score --engine ray`` failed; the message is the root error, on one line."""


class AnnotationParseError(ValueError):
    """Raised by a parse hook when a value does not have the declared shape.

    Not a :class:`TraceTasksError`: it describes a value (usually model output),
    and the scorer turns it into ``annotation_parse_ok == 0``, never an exception
    for the caller. Raised while scoring, it means a limit was hit (too large an
    assignment): the response fails, nothing is logged.
    """


# --------------------------------------------------------------------------- message helpers


def suggest(name: str, candidates: Iterable[str]) -> str:
    """Return a ' (did you mean ...?)' hint for ``name``, or an empty string."""
    close = difflib.get_close_matches(name, sorted(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def listed(names: Iterable[str], limit: int = 5) -> str:
    """``names`` comma-separated for a message: the first ``limit``, then how many more (``a, b and 3 more``)."""
    items = list(names)
    if not items:
        return "none"
    text = ", ".join(items[:limit])
    return f"{text} and {len(items) - limit} more" if len(items) > limit else text


def shown(value: object, limit: int = 60) -> str:
    """A value as an error message shows it: JSON spelling for null and booleans, a short repr otherwise."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the message it belongs to
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception a plugin raised, on one capped line: its message alone for an :class:`AnnotationParseError`."""
    try:
        text = str(exc) if isinstance(exc, AnnotationParseError) else f"{type(exc).__name__}: {exc}"
    except Exception:  # a hostile __str__ must not hide the message it belongs to
        text = type(exc).__name__
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "..."
