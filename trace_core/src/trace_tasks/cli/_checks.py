"""The CLI's view of instance validation: :mod:`trace_tasks.instances` does the checking.

Kept so the commands import one name; there is no second copy of any check.
"""

from __future__ import annotations

from typing import Any

from trace_tasks.instances import Problem
from trace_tasks.instances import instance_problems as _instance_problems
from trace_tasks.records import TraceInstance, TrainInstance

__all__ = ["Problem", "instance_problems"]


def instance_problems(data: Any, *, cls: type[TraceInstance] = TrainInstance, check_values: bool = True) -> list[Problem]:
    """Every problem of one instance record (:func:`trace_tasks.instances.instance_problems`).

    ``check_values`` is accepted for older callers and ignored: the target's
    parse and the answer value are part of every validation now.
    """
    return _instance_problems(data, cls=cls)
