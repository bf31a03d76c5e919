"""How many validation metrics verl 0.9.1 logs per data source for our reward dicts (docs/integrations.md).

``val_metric_names`` copies the metric *names* that verl 0.9.1 builds from the
reward extra info (``pip download verl==0.9.1 --no-deps``):
``verl/trainer/ppo/metric_utils.py`` l.896-1069 (``process_validation_metrics``:
``mean@N`` per key, with N > 1 also ``std@N`` and ``best``/``worst@n`` mean and
std for ``n`` in ``gen_ns(N)``; string values and ``maj`` (no ``pred`` key) skipped;
the bootstrap values themselves are left out) and ``verl/trainer/ppo/ray_trainer.py``
l.721-746 (``_val_metrics_update``: one ``val-core``/``val-aux`` name per metric,
plus 3 ``val-aux/num_turns/*`` when the rollout reports turns); the reward dicts
reach it as ``reward_extra_infos_dict`` with ``reward`` added (``ray_trainer.py``
l.678-685).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from trace_tasks.integrations import verl

from .helpers import INSTANCES, RESPONSES


def gen_ns(n_resps: int) -> list[int]:
    # verl 0.9.1 metric_utils.py l.979-988 (nested in process_validation_metrics)
    if n_resps <= 1:
        return []
    ns = []
    n = 2
    while n < n_resps:
        ns.append(n)
        n *= 2
    ns.append(n_resps)
    return ns


def val_metric_names(data_sources: list[str], uids: list[str], infos: dict[str, list[Any]], turns: bool) -> set[str]:
    # verl 0.9.1 metric_utils.py l.948-953 (group by data source, uid, key) and l.1004-1040 (names per key)
    grouped: dict[str, dict[str, dict[str, list[Any]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for i, data_source in enumerate(data_sources):
        for var_name, var_vals in infos.items():
            grouped[data_source][uids[i]][var_name].append(var_vals[i])
    names: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for data_source, uid2var2vals in grouped.items():
        for var2vals in uid2var2vals.values():
            for var_name, var_vals in var2vals.items():
                var_vals = [value for value in var_vals if value is not None]
                if not var_vals or isinstance(var_vals[0], str):
                    continue
                n_resps = len(var_vals)
                metric = {f"mean@{n_resps}"}
                if n_resps > 1:
                    metric.add(f"std@{n_resps}")
                    for n in gen_ns(n_resps):
                        metric |= {f"best@{n}/mean", f"best@{n}/std", f"worst@{n}/mean", f"worst@{n}/std"}
                names[data_source][var_name] |= metric
    # ray_trainer.py l.721-746
    out = set()
    for data_source, var2metrics in names.items():
        core_var = "acc" if "acc" in var2metrics else "reward"
        for var_name, metrics in var2metrics.items():
            n_max = max(int(name.split("@")[-1].split("/")[0]) for name in metrics)
            for metric_name in metrics:
                core = var_name == core_var and metric_name.startswith(("mean", "maj", "best")) and f"@{n_max}" in metric_name
                out.add(f"{'val-core' if core else 'val-aux'}/{data_source}/{var_name}/{metric_name}")
    if turns:
        out |= {"val-aux/num_turns/min", "val-aux/num_turns/max", "val-aux/num_turns/mean"}
    return out


@pytest.mark.parametrize(("log_keys", "n", "expected"), [("charted", 1, 13), ("charted", 2, 78), ("all", 1, 40), ("all", 2, 240)])
def test_validation_metric_counts_in_the_docs(log_keys: str, n: int, expected: int) -> None:
    fn = verl.make_compute_score(log_keys=log_keys)
    infos: dict[str, list[Any]] = defaultdict(list)
    sources, uids = [], []
    for u, inst in enumerate(INSTANCES):
        for k in range(n):
            result = fn("trace", RESPONSES[k], inst)
            infos["reward"].append(result["score"])  # ray_trainer.py l.678
            for key, value in result.items():
                infos[key].append(value)
            sources.append("trace")
            uids.append(str(u))
    assert len(val_metric_names(sources, uids, infos, turns=False)) == expected
    assert len(val_metric_names(sources, uids, infos, turns=True)) == expected + 3
