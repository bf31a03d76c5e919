"""Checking a Ray cluster before scoring on it: every node must score as this process would.

A node scores differently (or not at all) when it lacks the project, has other
families or versions installed, or other reward-id pins: a node built from an
older image, a ``runtime_env={"py_modules": [...]}`` that ships the code but
not its entry points (the families are then never registered), a variable set
on the head only. :func:`check_cluster` runs one probe per alive node, pinned
there, and raises :class:`~trace_tasks.errors.ClusterMismatchError` with one
line naming the first node that differs and what differs, before any work is
scheduled. :func:`environment_variables` gives the settings a job must carry to
its workers (the ``runtime_env`` of ``ray.init``).

``trace-tasks score --engine ray`` calls both; call :func:`check_cluster`
yourself before :func:`trace_tasks.integrations.ray.score_dataset` on a cluster.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from typing import Any

from trace_tasks.errors import ClusterMismatchError, one_line
from trace_tasks.plugins import ALLOW_ENV, BLOCK_ENV, PINS_ENV, get_registry

__all__ = [
    "PROBE_TIMEOUT_S",
    "SETTINGS_ENV",
    "check_cluster",
    "check_worker",
    "environment_variables",
    "fingerprint",
    "node_differences",
]

#: How long a node may take to answer its probe (its worker starts, its runtime environment is set up).
PROBE_TIMEOUT_S = 180.0
#: The variables that change what a worker scores: the plugin allow- and block-lists and the reward-id pins.
SETTINGS_ENV = (ALLOW_ENV, BLOCK_ENV, PINS_ENV)


def environment_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's scoring settings (:data:`SETTINGS_ENV` that are set), for a job's ``runtime_env["env_vars"]``."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in SETTINGS_ENV if name in environ}


def fingerprint() -> dict[str, Any]:
    """What decides how this process scores: trace-core's version, Python's, the families and the current reward ids."""
    from trace_tasks import __version__

    registry = get_registry()
    return {
        "trace-core": __version__,
        "python": ".".join(platform.python_version_tuple()[:2]),
        "plugins": {
            info.name: f"{info.distribution} {info.version}" if info.distribution else "built in" for info in registry.plugins
        },
        "current_reward_ids": {name: entry.current_reward_id for name, entry in sorted(registry.annotation_types.items())},
    }


def node_differences(here: Mapping[str, Any], there: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints, worded from this process's side (empty: they agree)."""
    out = []
    for key in ("trace-core", "python"):
        if here.get(key) != there.get(key):
            out.append(f"{key} {there.get(key)} there, {here.get(key)} here")
    plugins_here, plugins_there = here.get("plugins", {}), there.get("plugins", {})
    for name in sorted(set(plugins_here) | set(plugins_there)):
        mine, theirs = plugins_here.get(name), plugins_there.get(name)
        if mine != theirs:
            if theirs is None:
                out.append(f"plugin {name} ({mine}) is not registered there")
            elif mine is None:
                out.append(f"plugin {name} ({theirs}) is registered there only")
            else:
                out.append(f"plugin {name} is {theirs} there, {mine} here")
    ids_here, ids_there = here.get("current_reward_ids", {}), there.get("current_reward_ids", {})
    for name in sorted(set(ids_here) & set(ids_there)):
        if ids_here[name] != ids_there[name]:
            out.append(f"the current reward id of {name} is {ids_there[name]} there, {ids_here[name]} here (pins differ)")
    return out


_checked_against: list[Mapping[str, Any]] = []


def check_worker(expected: Mapping[str, Any]) -> None:
    """In a Ray worker: raise :class:`ClusterMismatchError` when this process would score otherwise than ``expected``.

    ``expected`` is the driver's :func:`fingerprint`. Checked once per process
    and fingerprint (the registry is built once anyway).
    """
    if _checked_against and _checked_against[0] == expected:
        return
    differences = node_differences(expected, fingerprint())
    if differences:
        raise ClusterMismatchError(f"a Ray worker on {platform.node()} differs from the driver: {'; '.join(differences)}")
    _checked_against[:] = [expected]


def _probe() -> dict[str, Any]:
    """Runs on a node: that node's fingerprint (pickled by reference, so a node without the project fails to load it)."""
    return fingerprint()


def _node_name(node: Mapping[str, Any]) -> str:
    return f"{node.get('NodeManagerAddress', '?')} (node {str(node.get('NodeID', '?'))[:12]})"


def check_cluster(timeout_s: float = PROBE_TIMEOUT_S) -> int:
    """Probe every alive node of the connected Ray; raise :class:`ClusterMismatchError` at the first that differs.

    Returns how many nodes were checked. The probes take no CPU, so a busy
    cluster answers too. A node that cannot load the project (``No module
    named 'trace_tasks'``), fails to set up the job's runtime environment or
    does not answer within ``timeout_s`` counts as differing.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = fingerprint()
    every: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]  # Ray leaves it unannotated
    nodes = [node for node in every if node.get("Alive")]
    probe = ray.remote(_probe)
    refs = [
        probe.options(
            num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote()
        for node in nodes
    ]
    problems = []
    for node, ref in zip(nodes, refs, strict=True):
        try:
            there = ray.get(ref, timeout=timeout_s)
        except ray.exceptions.GetTimeoutError:
            problems.append(f"{_node_name(node)} did not answer the check within {timeout_s:g} s")
            ray.cancel(ref, force=True)
            continue
        except Exception as exc:  # the probe could not run there: the project is not importable, the runtime env failed
            problems.append(f"{_node_name(node)} cannot run trace_tasks: {_cause(exc)}")
            continue
        differences = node_differences(here, there)
        if differences:
            problems.append(f"{_node_name(node)} differs from this process: {'; '.join(differences)}")
    if problems:
        more = f" (and {len(problems) - 1} more node(s))" if len(problems) > 1 else ""
        raise ClusterMismatchError(
            f"{problems[0]}{more}; install the same trace-core and families on every node (docs/integrations.md, 'Ray clusters')"
        )
    return len(nodes)


def _cause(exc: BaseException) -> str:
    """The root error of a failed probe in one line (``ModuleNotFoundError: No module named 'trace_tasks'``)."""
    cause: BaseException = exc
    for attribute in ("cause", "__cause__"):
        inner = getattr(cause, attribute, None)
        if isinstance(inner, BaseException):
            cause = inner
    text = one_line(cause)
    for marker in ("ModuleNotFoundError", "ImportError"):
        at = str(exc).find(marker)
        if at != -1 and marker not in text:
            text = one_line(RuntimeError(str(exc)[at:]))
    return text
