"""``score --columns``: which result keys an output row keeps (``all``, the default, or ``stable``).

``stable`` keeps what a study reads and drops what repeats the run's settings:
the option echoes (``docs/contracts.md`` section 7: the same on every row of a
run), the aliases (``accuracy`` is ``answer_reward``; ``trace_reward`` is the
constant 1.0 marking a trace row) and the ``annotation_type_<name>`` one-hot,
which becomes one string column ``annotation_type`` (after ``id`` and
``line``), a column to group on. Error rows are unchanged. The default keeps
every key, so default outputs stay byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trace_tasks.scoring import OPT_IN_KEYS, OPTION_KEYS

ALL_COLUMNS = "all"
STABLE_COLUMNS = "stable"
#: The choices of ``--columns``.
COLUMN_SETS: tuple[str, ...] = (ALL_COLUMNS, STABLE_COLUMNS)
#: The result keys ``stable`` drops (beside the one-hot).
DROPPED: frozenset[str] = frozenset({*OPTION_KEYS, *OPT_IN_KEYS, "accuracy", "trace_reward"})
TYPE_PREFIX = "annotation_type_"


def stable_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """An output row with ``--columns stable``: no option echo, alias or one-hot; the type as ``annotation_type``."""
    if "error" in record:
        return dict(record)
    kind = next((key[len(TYPE_PREFIX) :] for key, value in record.items() if key.startswith(TYPE_PREFIX) and value == 1.0), None)
    out: dict[str, Any] = {"id": record.get("id"), "line": record.get("line"), "annotation_type": kind}
    for key, value in record.items():
        if key not in out and key not in DROPPED and not key.startswith(TYPE_PREFIX):
            out[key] = value
    return out
