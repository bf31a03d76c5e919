"""Every exception trace_tasks raises on purpose.

Model output never raises: these are for caller and deployment mistakes only
(bad options, a missing family, a broken plugin, a malformed instance file).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class TraceTasksError(Exception):
    """Base class of every error trace_tasks raises on purpose."""


class AnnotationParseError(ValueError):
    """Raised by a parse hook when a value does not have the declared shape.

    Not a :class:`TraceTasksError`: it describes a value (usually model output),
    and the scorer turns it into ``annotation_parse_ok == 0``, never an exception
    for the caller. Raised while scoring, it means a limit was hit (too large an
    assignment): the response fails, nothing is logged.
    """


class PluginLoadError(TraceTasksError):
    """A plugin's entry point could not be imported or registered.

    The message names the entry point and its distribution; ``__cause__``
    keeps the original exception.
    """


class PluginConflictError(TraceTasksError):
    """Two plugins claim the same entry-point name, annotation type or reward id."""


class PluginValidationError(TraceTasksError):
    """A plugin implements a hook that matches no spec, or declares bad metadata."""


class MissingFamilyError(TraceTasksError, ImportError):
    """An official annotation type was asked for but its family is not installed."""

    def __init__(self, annotation_type: str, distribution: str) -> None:
        self.annotation_type = annotation_type
        self.distribution = distribution
        super().__init__(
            f"annotation type {annotation_type!r} belongs to the {distribution} family, "
            f"which is not installed: pip install {distribution}"
        )


class UnknownRewardIdError(TraceTasksError, ValueError):
    """A reward id that no installed family offers, or that is not current."""


class RewardPinError(TraceTasksError, ValueError):
    """A user's pin (``TRACE_TASKS_REWARD_IDS`` or ``pin_reward_id``) names no usable reward id."""


class RecordError(TraceTasksError, ValueError):
    """An instance record is malformed; the message gives the path of the problem."""

    def __init__(self, message: str, *, path: str = "", record: str | None = None) -> None:
        self.message = message
        self.path = path
        self.record = record
        where = f"{record}: " if record else ""
        at = f"{path}: " if path else ""
        super().__init__(f"{where}{at}{message}")


def suggest(name: str, candidates: Iterable[str]) -> str:
    """Return a ' (did you mean ...?)' hint for ``name``, or an empty string."""
    close = difflib.get_close_matches(name, sorted(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
