"""ms-swift 4.6 reward plugin, driven the way swift's GRPO trainer loads and calls it.

ms-swift pulls torch and much more, so it is not installed: ``swift.rewards`` is
a stand-in module holding a copy of swift's ``ORM`` base and an ``orms`` dict,
and the helpers copy swift's code from the released wheel
(``pip download ms-swift==4.6.0 --no-deps``):

* ``import_external_file``: ``swift/utils/utils.py`` l.409-429 (the plugin file is executed as a module);
* ``prepare_rewards``: ``swift/rlhf_trainers/utils.py`` l.2289-2294 (``orms[name](args=args)``; the
  ``swift rlhf`` trainer's own copy is ``swift/rlhf_trainers/grpo_trainer.py`` l.2222-2228);
* ``reward_func_names``: ``swift/rlhf_trainers/grpo_trainer.py`` l.2232-2237 (a class instance is named
  by its class, the key of ``rewards/<name>/mean``);
* ``rows_to_batched``: ``swift/dataset/preprocessor/core.py`` l.176-186;
* ``compute_rewards_per_func``: ``swift/rl_core/grpo_algorithm.py`` l.46-67 (sync branch; torch's NaN as float NaN).

``tests/trainers/test_harnesses.py`` runs the real ms-swift 4.6.0 (``swift rlhf --rlhf_type grpo``
on CPU with a tiny model, and these functions in process) in the opt-in layer.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import math
import os
import sys
import types
from typing import Any, Optional, Union

import pytest

from trace_tasks import InstanceError
from trace_tasks.errors import OptionError

from .helpers import INSTANCES, RESPONSES, reference


class ORM:
    # ms-swift 4.6 swift/rewards/orm.py l.16-31
    def __init__(self, args: Optional[Union[Any, Any]] = None, **kwargs: Any) -> None:
        self.args = args

    def __call__(self, **kwargs: Any) -> list[float]:
        raise NotImplementedError


@pytest.fixture
def orms(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    registry: dict[str, Any] = {}
    swift = types.ModuleType("swift")
    rewards = types.ModuleType("swift.rewards")
    rewards.ORM = ORM  # type: ignore[attr-defined]
    rewards.orms = registry  # type: ignore[attr-defined]
    swift.rewards = rewards  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "swift", swift)
    monkeypatch.setitem(sys.modules, "swift.rewards", rewards)
    return registry


def import_external_file(file_path: str) -> types.ModuleType:
    # ms-swift 4.6 swift/utils/utils.py l.409-429
    file_path = os.path.abspath(os.path.expanduser(file_path))
    module_name = f"_swift_external_{hashlib.sha256(file_path.encode()).hexdigest()}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, file_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        sys.modules.pop(module_name, None)
        raise
    return module


def prepare_rewards(reward_funcs_cfg: list[Any], args: Any, orms: dict[str, Any]) -> list[Any]:
    # ms-swift 4.6 swift/rlhf_trainers/utils.py l.2289-2294
    reward_funcs = list(reward_funcs_cfg)
    for i, reward_func in enumerate(reward_funcs):
        if isinstance(reward_func, str) and reward_func in orms:
            reward_funcs[i] = orms[reward_func](args=args) if args is not None else orms[reward_func]()
        elif not callable(reward_func) and not isinstance(reward_func, str):
            raise ValueError(f"reward_function {reward_func} is not implemented in swift.rewards")
    return reward_funcs


def rows_to_batched(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    # ms-swift 4.6 swift/dataset/preprocessor/core.py l.176-186
    batched: dict[str, list[Any]] = {}
    for i, row in enumerate(rows):
        for k, v in row.items():
            if k not in batched:
                batched[k] = [None] * i
            batched[k].append(v)
        for k in set(batched.keys()) - set(row.keys()):
            batched[k].append(None)
    return batched


def compute_rewards_per_func(samples: list[dict[str, Any]], reward_funcs: list[Any]) -> list[list[float]]:
    # ms-swift 4.6 swift/rl_core/grpo_algorithm.py l.46-67 (a sample's to_reward_row, swift/rl_core/data.py
    # l.135-155, is its messages and ids plus every dataset column flattened to the top level)
    completions = [s["messages"][-1]["content"] for s in samples]
    reward_kwargs: dict[str, Any] = {"trainer_state": object()}
    reward_rows = [{"messages": s["messages"], "prompt_id": i, **s["columns"]} for i, s in enumerate(samples)]
    if reward_rows:
        reward_kwargs.update(rows_to_batched(reward_rows))
    rewards_per_func = [[0.0] * len(reward_funcs) for _ in samples]
    for i, reward_func in enumerate(reward_funcs):
        output = reward_func(completions, **reward_kwargs)
        output = [reward if reward is not None else math.nan for reward in output]
        for row, value in enumerate(output):
            rewards_per_func[row][i] = float(value)
    return rewards_per_func


def _sample(response: str, inst: Optional[dict[str, Any]]) -> dict[str, Any]:
    messages = [{"role": "user", "content": "<image>How many?"}, {"role": "assistant", "content": response}]
    if inst is None:
        return {"messages": messages, "columns": {"solution": "42"}}  # a non-trace row of a mixed dataset
    columns = {k: json.dumps(inst[k]) for k in ("answer_gt", "annotation_gt", "reward_contract")}
    if "image_size" in inst:
        columns["image_size"] = json.dumps(inst["image_size"])
    return {"messages": messages, "columns": columns}


def _plugin(tmp_path: Any, body: str) -> str:
    path = tmp_path / "trace_plugin.py"
    path.write_text(body)
    return str(path)


def test_plugin_file_registers_and_swift_scores_exactly(orms: dict[str, Any], tmp_path: Any) -> None:
    import_external_file(
        _plugin(tmp_path, 'from trace_tasks.integrations.swift import register\nregister("trace", format_weight=0.1)\n')
    )
    assert issubclass(orms["trace"], ORM)
    funcs = prepare_rewards(["trace"], args=types.SimpleNamespace(num_generations=2), orms=orms)
    assert funcs[0].args.num_generations == 2
    samples = [_sample(r, i) for i in INSTANCES for r in RESPONSES]
    got = compute_rewards_per_func(samples, funcs)
    want = [reference(r, i, format_weight=0.1)["overall"] for i in INSTANCES for r in RESPONSES]
    assert [row[0] for row in got] == want


def test_components_and_a_mixed_dataset(orms: dict[str, Any]) -> None:
    from trace_tasks.integrations import swift

    for component in swift.COMPONENTS:
        swift.register(f"trace_{component}", component=component)
    funcs = prepare_rewards([f"trace_{c}" for c in swift.COMPONENTS], args=None, orms=orms)
    samples = [_sample(RESPONSES[0], INSTANCES[0]), _sample("42", None)]
    got = compute_rewards_per_func(samples, funcs)
    expected = reference(RESPONSES[0], INSTANCES[0])
    assert got[0] == [expected[c] for c in swift.COMPONENTS]
    assert all(math.isnan(v) for v in got[1])  # swift's "not applicable"


def reward_func_names(reward_funcs: list[Any]) -> list[str]:
    # ms-swift 4.6 swift/rlhf_trainers/grpo_trainer.py l.2232-2237
    names = []
    for reward_func in reward_funcs:
        if inspect.isfunction(reward_func):
            names.append(reward_func.__name__)
        else:
            names.append(reward_func.__class__.__name__)
    return names


def test_each_registered_name_is_its_own_metric(orms: dict[str, Any]) -> None:
    from trace_tasks.integrations import swift

    for component in swift.COMPONENTS:
        swift.register(f"trace_{component}", component=component)
    funcs = prepare_rewards([f"trace_{c}" for c in swift.COMPONENTS], args=None, orms=orms)
    assert reward_func_names(funcs) == [f"trace_{c}" for c in swift.COMPONENTS]  # rewards/trace_format/mean, ...
    assert repr(funcs[-1]) == "trace_format(component='format', **{})"
    assert reward_func_names([swift.make_orm()()]) == ["TraceORM"]


def test_a_broken_row_stops_the_step_naming_its_position(orms: dict[str, Any]) -> None:
    from trace_tasks.integrations import swift

    swift.register()
    broken = {**INSTANCES[1], "annotation_gt": {"type": "bbox", "value": [10, 10, 10, 50]}}
    funcs = prepare_rewards(["trace"], args=None, orms=orms)
    # grpo_algorithm.py l.64-65: no try around the call
    with pytest.raises(InstanceError, match=r"^position 1 in this call: invalid instance"):
        compute_rewards_per_func([_sample(RESPONSES[1], INSTANCES[1]), _sample(RESPONSES[1], broken)], funcs)


def test_options_are_checked_when_the_plugin_loads(orms: dict[str, Any]) -> None:
    from trace_tasks.integrations import swift

    with pytest.raises(OptionError, match="format_wieght"):
        swift.register("trace", format_wieght=0.1)
    with pytest.raises(OptionError, match="component"):
        swift.make_orm(component="iou")
    assert orms == {}


def test_without_swift_the_error_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_tasks.integrations import swift
    from trace_tasks.integrations._common import MissingExtraError

    monkeypatch.setitem(sys.modules, "swift", None)
    monkeypatch.setitem(sys.modules, "swift.rewards", None)
    with pytest.raises(MissingExtraError, match="ms-swift"):
        swift.make_orm()
