"""Scoring files of rows with any engine: the room between ``integrations`` and ``cli``.

A run reads instances (with their responses, or responses joined to them by
``id``) from JSON Lines or Parquet files, a directory or a glob, scores every
response (in this process, a restartable process pool or a Ray Data
pipeline) and writes one output row per input row, in order, plus a summary::

    from trace_tasks.runs import RunSettings, score_files

    result = score_files(RunSettings(input="rollouts.jsonl", output="scores.jsonl", quiet=True))
    result.exit_status, result.summary["overall"]["mean_overall"]

``trace-tasks score`` is this call with its flags turned into
:class:`RunSettings`. The other names here are the pieces the command line
shares with the run (reading lines, outputs that never lose a file, the
events that end a run with an exit status, the summary): the commands read and
write files as a run does.
"""

from trace_tasks.runs._data_warnings import counts_text, file_warnings
from trace_tasks.runs._engine import EngineError
from trace_tasks.runs._errors import (
    EXIT_CLOSED_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_IO,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    CannotOpen,
    InputFailed,
    OutputClosed,
    OutputFailed,
    OutputLocked,
    Terminated,
    UsageError,
    describe,
)
from trace_tasks.runs._failure_kinds import (
    NO_JSON,
    NO_JSON_MEANING,
    NOT_AN_OBJECT,
    NOT_AN_OBJECT_MEANING,
    final_block_not_an_object,
    no_json,
)
from trace_tasks.runs._jsonl import Line, dumps, open_binary, open_source, read_lines
from trace_tasks.runs._metrics import ANSWER_KEY, METRICS_KEY, score_compiled_with_metrics
from trace_tasks.runs._mismatches import MISMATCHES_KEY, MismatchCounts
from trace_tasks.runs._output import REPLACED_WHEN_DONE, STDIO, check_distinct_files, guard, open_outputs
from trace_tasks.runs._rows import MISSING, InstanceIndex, column_value, combined_slots, instance_part, joined_slots
from trace_tasks.runs._run import score_files
from trace_tasks.runs._settings import ENGINES, RunResult, RunSettings
from trace_tasks.runs._shards import find_shards, open_lines
from trace_tasks.runs._stats import GroupStats, Moments, PairedDiffs
from trace_tasks.runs._summary import Summary, group_name

__all__ = [
    # rows, their scores and the summary (a row's predicted answer rides under this key)
    "ANSWER_KEY",
    # the run
    "ENGINES",
    # how a run (or a command) ends: exit statuses and the events behind them
    "EXIT_CLOSED_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_IO",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    # rows, their scores and the summary
    "METRICS_KEY",
    "MISMATCHES_KEY",
    "MISSING",
    "NOT_AN_OBJECT",
    "NOT_AN_OBJECT_MEANING",
    "NO_JSON",
    "NO_JSON_MEANING",
    # reading rows, writing outputs
    "REPLACED_WHEN_DONE",
    "STDIO",
    "CannotOpen",
    "EngineError",
    "GroupStats",
    "InputFailed",
    "InstanceIndex",
    "Line",
    "MismatchCounts",
    "Moments",
    "OutputClosed",
    "OutputFailed",
    "OutputLocked",
    "PairedDiffs",
    "RunResult",
    "RunSettings",
    "Summary",
    "Terminated",
    "UsageError",
    "check_distinct_files",
    "column_value",
    "combined_slots",
    "counts_text",
    "describe",
    "dumps",
    "file_warnings",
    "final_block_not_an_object",
    "find_shards",
    "group_name",
    "guard",
    "instance_part",
    "joined_slots",
    "no_json",
    "open_binary",
    "open_lines",
    "open_outputs",
    "open_source",
    "read_lines",
    "score_compiled_with_metrics",
    "score_files",
]
