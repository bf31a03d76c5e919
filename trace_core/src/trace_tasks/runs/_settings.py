"""What a run is asked to do (:class:`RunSettings`) and what it did (:class:`RunResult`).

The command line builds a :class:`RunSettings` from its flags
(:mod:`trace_tasks.cli.score`); a notebook, a Ray job or a trainer's eval loop
builds one directly. Every engine takes the settings, never an argparse
namespace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from trace_tasks.errors import OptionError
from trace_tasks.scoring import OPTION_DEFAULTS

#: The engines a run can use: in-process (or a process pool with ``workers`` > 1), or a Ray Data pipeline.
ENGINES = ("local", "ray")


# A caller's mistake in a setting is an OptionError (a TraceTasksError and a ValueError) naming the setting
# and what it takes, raised when the settings are made, not somewhere inside the run.


def _path(value: Any) -> str:
    """A path setting: a ``str`` or an ``os.PathLike`` (``pathlib.Path``), as text."""
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str) or not path:
        raise OptionError(f"a path setting must be a non-empty str or os.PathLike, got {value!r}")
    return path


def _optional_path(value: Any) -> str | None:
    return None if value is None else _path(value)


def _columns(values: Any) -> tuple[str, ...]:
    columns = (values,) if isinstance(values, str) else tuple(values) if isinstance(values, (list, tuple)) else None
    if columns is None or not all(isinstance(column, str) and column.strip() for column in columns):
        raise OptionError(f"keep must be a column name or a list of column names (non-empty strings), got {values!r}")
    return columns


def _with_defaults(given: Any) -> dict[str, Any]:
    """Every scorer option, in the order the summary echoes them: the given ones over the defaults."""
    if not isinstance(given, Mapping):
        raise OptionError(f"options must be a mapping of scorer options by name, got {type(given).__name__}")
    return {**OPTION_DEFAULTS, **given}


def _engine(instance: Any, attribute: Any, value: Any) -> None:
    if value not in ENGINES:
        raise OptionError(f"engine must be one of {list(ENGINES)}, got {value!r}")


def _workers(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and (type(value) is not int or value < 1):
        raise OptionError(f"workers must be a positive integer (or None: 1 locally, one per CPU on Ray), got {value!r}")


def _flag(instance: Any, attribute: Any, value: Any) -> None:
    if type(value) is not bool:
        raise OptionError(f"{attribute.name} must be True or False, got {value!r}")


def _optional_name(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise OptionError(f"{attribute.name} must be a non-empty string or None, got {value!r}")


def _output_columns(instance: Any, attribute: Any, value: Any) -> None:
    if value not in ("all", "stable"):
        raise OptionError(f"output_columns must be 'all' or 'stable', got {value!r}")


@attrs.frozen(slots=True)
class RunSettings:
    """One scoring run of files: where the rows are, where the scores go, which engine, which scorer options.

    :param input: instances with a ``response`` field (or, with ``responses``, instances alone): a file
        (``.jsonl``, ``.jsonl.gz``, ``.parquet``), a directory of such files, a glob, or ``"-"`` (standard input).
    :param responses: responses joined to ``input`` by ``id`` (``{"id", "response"}`` rows), or ``None``.
    :param output: where the scores go: a file, a directory (one output per input shard), or ``None``/``"-"``
        for standard output.
    :param resume: skip the shards whose output is already complete.
    :param engine: ``"local"`` (in-process, or a process pool of ``workers``) or ``"ray"``.
    :param workers: scoring processes (local) or actors (Ray); ``None``: 1 locally, one per CPU on Ray.
    :param address: the Ray cluster to join (``engine="ray"`` only).
    :param keep: input columns carried to each output row under ``extra`` (an entry ``"a,b"`` names two).
    :param group_by: also summarize per value of this input column (kept as ``keep`` is).
    :param summary: also write the summary as JSON to this file (``"-"``: standard output), or ``None``.
    :param metrics: with ``summary``, compute the field metrics (a trail per response costs time).
    :param quiet: no progress bar and no summary table on standard error.
    :param output_columns: ``"all"`` (every result key, the default) or ``"stable"`` (``score --columns``:
        no option echo, alias or one-hot; the type as ``annotation_type``; JSON Lines on the local engine).
    :param options: the scorer options as :func:`trace_tasks.score_trace_response` names them; the
        defaults fill the rest (the summary echoes all of them as given; they are validated when the run starts).
    """

    input: str = attrs.field(converter=_path)
    responses: str | None = attrs.field(default=None, converter=_optional_path)
    output: str | None = attrs.field(default=None, converter=_optional_path)
    resume: bool = attrs.field(default=False, validator=_flag)
    engine: str = attrs.field(default="local", validator=_engine)
    workers: int | None = attrs.field(default=None, validator=_workers)
    address: str | None = attrs.field(default=None, validator=_optional_name)
    keep: tuple[str, ...] = attrs.field(default=(), converter=_columns)
    group_by: str | None = attrs.field(default=None, validator=_optional_name)
    summary: str | None = attrs.field(default=None, converter=_optional_path)
    metrics: bool = attrs.field(default=True, validator=_flag)
    quiet: bool = attrs.field(default=False, validator=_flag)
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=_with_defaults, hash=False)
    output_columns: str = attrs.field(default="all", validator=_output_columns)

    @property
    def columns(self) -> tuple[str, ...]:
        """The input columns carried to the output rows: every ``keep`` (``a,b`` is two), then ``group_by``'s, once each."""
        columns: list[str] = []
        for value in [*self.keep, *([self.group_by] if self.group_by else [])]:
            for column in value.split(","):
                if column.strip() and column.strip() not in columns:
                    columns.append(column.strip())
        return tuple(columns)

    @property
    def wants_metrics(self) -> bool:
        """The field metrics are computed for ``summary`` only (a trail per response costs time), unless ``metrics`` is off."""
        return self.summary is not None and self.metrics


@attrs.frozen(slots=True)
class RunResult:
    """What a run did: the summary (as ``--summary-json`` writes it), its counts, its exit status and its outputs.

    :param exit_status: 0, or 1 when a line could not be scored or the instances file has problems
        (the command's exit code).
    :param summary: the machine-readable summary (``lines``, ``scored``, ``errors``, ``overall``,
        ``by_annotation_type``, and ``by_group`` with ``group_by``).
    :param lines: input lines (responses) read.
    :param errors: lines written with an ``error`` field.
    :param instance_problems: the problems of the instances file (the ``responses`` layout), in file order.
    :param warnings: the data warnings of the instances by rule (the local engine counts them; Ray: ``None``).
    :param outputs: the outputs written, in input order (``"-"``: standard output).
    :param skipped: the complete outputs ``resume`` left alone.
    """

    exit_status: int
    summary: Mapping[str, Any] = attrs.field(hash=False)
    lines: int
    errors: int
    instance_problems: tuple[str, ...] = ()
    warnings: Mapping[str, int] | None = attrs.field(default=None, hash=False)
    outputs: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
