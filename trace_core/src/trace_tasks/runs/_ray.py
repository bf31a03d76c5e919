"""The Ray engine's run: one Ray session for the plan, then its layout (combined rows, or responses joined to instances).

:mod:`trace_tasks.runs._ray_engine` holds the combined layout and the pieces
both layouts share; :mod:`trace_tasks.runs._ray_joined` (the ``responses``
layout) builds on it. This module picks one, so neither layout imports the
other's caller.
"""

from __future__ import annotations

from trace_tasks.runs import _ray_joined
from trace_tasks.runs._errors import UsageError
from trace_tasks.runs._output import STDIO
from trace_tasks.runs._plan import Plan, Scored
from trace_tasks.runs._ray_engine import (
    actor_count,
    check_available,
    ray_session,
    run_combined,
    scores_stream,
)
from trace_tasks.runs._settings import RunSettings
from trace_tasks.runs._shards import remove_stale_temporaries
from trace_tasks.runs._summary import Summary

__all__ = ["check_available", "check_plan", "run"]


def check_plan(plan: Plan, settings: RunSettings) -> None:
    """Refuse standard input: Ray reads its inputs on the cluster."""
    if any(job.shard is None for job in plan.jobs) or (settings.responses is not None and plan.instances is None):
        raise UsageError("--engine ray reads its inputs on the cluster: give a file, a directory or a glob, not '-'")


def run(plan: Plan, settings: RunSettings, summary: Summary) -> Scored:
    """Run the plan on Ray into ``summary``; the run's skeleton (:func:`trace_tasks.runs.score_files`) does the rest."""
    options = settings.options
    metrics = settings.wants_metrics
    to_stdout = any(job.output == STDIO for job in plan.jobs)
    instance_problems: list[str] = []
    with scores_stream(to_stdout) as stdout:
        if plan.jobs:
            try:
                workers_asked = settings.workers if settings.address is None else None
                with ray_session(settings.address, workers_asked, settings.quiet) as ray:
                    from trace_tasks.integrations.ray_cluster import check_cluster, fingerprint

                    check_cluster()
                    workers = actor_count(ray, settings.workers)
                    expected = fingerprint()
                    if settings.responses is not None:
                        assert plan.instances is not None
                        source = plan.instances[0].path if len(plan.instances) == 1 else settings.input
                        instance_problems = _ray_joined.run(plan, source, options, workers, expected, summary, stdout, metrics)
                    else:
                        run_combined(ray, plan.jobs, options, workers, expected, summary, stdout, metrics)
            finally:
                # After Ray stopped: a merge a worker had under way when the run was stopped left its temporary file.
                remove_stale_temporaries([job.output for job in plan.jobs if job.output != STDIO])
    return Scored(instance_problems)
