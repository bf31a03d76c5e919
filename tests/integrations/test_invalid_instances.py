"""Broken ground truth is refused by every adapter, in the way its trainer shows an error best.

Each broken kind below used to be scored silently by the lenient scorer (0.5 or
1.0 for the response next to it, a bare 0 for others); every adapter now
compiles each row's instance through the strict path
(``trace_tasks.instances.compile_instance``, through a bounded cache by
content) and refuses a broken one:

* verl, TRL, EasyR1: raise ``InstanceError`` naming the row and the problem
  (those trainers call the reward function with no ``try``, so the step stops
  with the message);
* OpenRLHF reward file: one ERROR log line per label content with the label
  and every problem, then (default) reward 0 and ``trace_refused`` 1.0 in
  ``extra_logs``, a metric of the step (OpenRLHF 0.11.2 would catch an
  exception, log it at INFO and leave the reward ``None``), or with
  ``on_invalid="raise"`` the error (OpenRLHF 0.9.0 lets it stop the run);
* Ray Data: the row gets zeros and the problems in its ``error`` column, the
  job goes on.

A good instance next to a broken one still scores exactly as
``score_trace_response`` does, and a GRPO group of 16 rollouts of one instance
compiles it once. The trainer files and lines cited were read in verl 0.9.1,
TRL 1.16.0 and OpenRLHF 0.11.2 (their wheels) and EasyR1 at HEAD (2026-07-30).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from trace_tasks import instance_problems, resolve_reward_contract, score_trace_response
from trace_tasks.data import InstanceError
from trace_tasks.data import _cache as instances_module
from trace_tasks.integrations import _common, easyr1, openrlhf, trl, verl
from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, stable_keys

from .helpers import INSTANCES, as_json, reference

# --------------------------------------------------------------------------- the broken kinds

CONTRACT = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
STRING_CONTRACT = resolve_reward_contract(answer_type="string", annotation_type="bbox").to_dict()


def _base(answer: dict[str, Any] | None = None, contract: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "answer_gt": answer or {"type": "integer", "value": 2},
        "annotation_gt": {"type": "bbox", "value": [0, 0, 100, 50]},
        "reward_contract": copy.deepcopy(contract or CONTRACT),
    }


def _with(path: tuple[str, ...], value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    inst = base or _base()
    node = inst
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return inst


#: name -> (instance, the path of its problem, a word of the message, a response the lenient scorer rewards).
BROKEN: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "zero_area_target": (
        _with(("annotation_gt", "value"), [10, 10, 10, 50]),
        "$.annotation_gt.value",
        "zero-area",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "type_BBOX_no_family": (
        _with(("annotation_gt", "type"), "BBOX"),
        "$.annotation_gt.type",
        "'BBOX'",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "type_polygon_no_family": (
        _with(("annotation_gt", "type"), "polygon"),
        "$.annotation_gt.type",
        "'polygon'",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "reward_id_v9": (
        _with(("reward_contract", "annotation", "id"), "bbox_soft_iou_v9"),
        "$.reward_contract.annotation.id",
        "bbox_soft_iou_v9",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "contract_version_v9": (
        _with(("reward_contract", "reward_contract_version"), "v9"),
        "$.reward_contract.reward_contract_version",
        "'v9'",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "answer_id_bogus": (
        _with(("reward_contract", "answer", "id"), "bogus"),
        "$.reward_contract.answer.id",
        "'bogus'",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "contract_bbox_set_on_bbox": (
        _with(("reward_contract", "annotation", "type"), "bbox_set"),
        "$.reward_contract.annotation.type",
        "'bbox_set'",
        '{"answer": 2, "annotation": [0, 0, 100, 50]}',
    ),
    "integer_answer_abc": (
        _with(("answer_gt", "value"), "abc"),
        "$.answer_gt.value",
        "'abc'",
        '{"answer": "abc", "annotation": [0, 0, 100, 50]}',
    ),
    "integer_answer_null": (
        _with(("answer_gt", "value"), None),
        "$.answer_gt.value",
        "null",
        '{"answer": null, "annotation": [0, 0, 100, 50]}',
    ),
    "string_answer_empty": (
        _base({"type": "string", "value": ""}, STRING_CONTRACT),
        "$.answer_gt.value",
        "empty",
        '{"answer": "", "annotation": [0, 0, 100, 50]}',
    ),
}
KINDS = list(BROKEN)

#: A good instance and a response that scores it partly (annotation slightly off).
GOOD = INSTANCES[0]
GOOD_RESPONSE = '<think>two boxes</think>{"answer": 2, "annotation": [[10, 10, 20, 20], [30, 30, 50, 61]]}'
PROMPT = "<|im_start|>user\nHow many?<|im_end|>\n<|im_start|>assistant\n"


def _assert_names(exc: InstanceError, kind: str) -> None:
    _, path, word, _ = BROKEN[kind]
    assert any(problem.path == path for problem in exc.problems), (path, exc.problems)
    assert path in str(exc) and word in str(exc)


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    """Every test starts with empty instance caches (the spy counts compilations)."""
    _common.clear_instance_caches()
    openrlhf._logged.clear()
    yield
    _common.clear_instance_caches()


@pytest.fixture
def compile_spy(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Records every real compilation: ``InstanceCache.compile`` calls the module's ``compile_instance``."""
    calls: list[Any] = []
    real = instances_module.compile_instance

    def spy(data: Any, *, record: str | None = None) -> Any:
        calls.append(data)
        return real(data, record=record)

    monkeypatch.setattr(instances_module, "compile_instance", spy)
    return calls


def test_the_lenient_scorer_still_scores_every_broken_kind() -> None:
    """The problem the adapters fix: ``score_trace_response`` (unchanged, lenient) gives a number, no refusal."""
    partial = []
    for kind, (inst, _, _, response) in BROKEN.items():
        result = score_trace_response(response=response, **inst)
        assert isinstance(result["overall"], float)
        partial.append(result["overall"] > 0 or result["annotation_reward"] > 0)
        assert kind and any(p.path == BROKEN[kind][1] for p in instance_problems(inst))
    assert all(partial)  # a silent (partial) reward for each of them


# --------------------------------------------------------------------------- verl


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("as_string", [True, False], ids=["json", "mapping"])
def test_verl_naive_manager_raises_and_the_next_row_scores(kind: str, as_string: bool) -> None:
    inst, _, _, response = BROKEN[kind]
    extra_info = {"index": 0, "split": "train", "num_turns": None, "rollout_reward_scores": {}}
    # verl 0.9.1 experimental/reward_loop/reward_manager/naive.py l.75-84: a sync compute_score is run in the
    # loop's executor with keywords data_source, solution_str, ground_truth, extra_info; no try around it, and
    # reward_loop.py l.138-143 gathers without return_exceptions, so the step stops with this exception.
    with pytest.raises(InstanceError) as caught:
        verl.compute_score(
            data_source="trace_tasks",
            solution_str=response,
            ground_truth=as_json(inst) if as_string else inst,
            extra_info=dict(extra_info),
        )
    _assert_names(caught.value, kind)
    # verl passes no row index; its preprocessing scripts put one in extra_info, which the error names
    assert str(caught.value).startswith("ground_truth (dataset row extra_info['index']=0): invalid instance: ")
    good = verl.compute_score(
        data_source="trace_tasks", solution_str=GOOD_RESPONSE, ground_truth=as_json(GOOD), extra_info=dict(extra_info)
    )
    expected = reference(GOOD_RESPONSE, GOOD, extra_info=extra_info)
    assert good["score"] == good["acc"] == expected["overall"]
    assert {k: v for k, v in good.items() if k not in ("score", "acc")} == {k: expected[k] for k in CHARTED_KEYS}


@pytest.mark.parametrize("kind", KINDS)
def test_verl_batch_manager_raises_naming_the_row(kind: str) -> None:
    inst, _, _, response = BROKEN[kind]
    # verl workers/reward_manager/batch.py l.70-76 (the legacy batch manager): compute_score(data_sources=<numpy
    # object array>, solution_strs=<list>, ground_truths=<list>, extra_infos=<array>, **reward_kwargs), no try.
    call = functools.partial(
        verl.compute_score_batch,
        data_sources=np.array(["trace_tasks"] * 2, dtype=object),
        extra_infos=np.array([{"index": 0}, {"index": 1}], dtype=object),
        format_weight=0.1,
    )
    with pytest.raises(
        InstanceError, match=r"^ground_truths\[1\] \(dataset row extra_info\['index'\]=1\): invalid instance"
    ) as caught:
        call(solution_strs=[GOOD_RESPONSE, response], ground_truths=[as_json(GOOD), as_json(inst)])
    _assert_names(caught.value, kind)
    (good,) = verl.compute_score_batch(
        data_sources=np.array(["trace_tasks"], dtype=object),
        solution_strs=[GOOD_RESPONSE],
        ground_truths=[as_json(GOOD)],
        extra_infos=np.array([{"index": 0}], dtype=object),
        format_weight=0.1,
    )
    assert good["score"] == reference(GOOD_RESPONSE, GOOD, format_weight=0.1, extra_info={"index": 0})["overall"]


# --------------------------------------------------------------------------- TRL


def _trl_kwargs(rows: list[tuple[str, dict[str, Any]]], metrics: list[tuple[str, float]]) -> dict[str, Any]:
    """What TRL 1.16 GRPOTrainer._calculate_rewards passes (trl/trainer/grpo_trainer.py l.1583-1594)."""
    return {
        "prompts": [[{"role": "user", "content": "How many?"}] for _ in rows],
        "completions": [[{"role": "assistant", "content": r}] for r, _ in rows],
        "completion_ids": [[1, 2, 3] for _ in rows],
        "answer_gt": [json.dumps(i["answer_gt"]) for _, i in rows],
        "annotation_gt": [json.dumps(i["annotation_gt"]) for _, i in rows],
        "reward_contract": [json.dumps(i["reward_contract"]) for _, i in rows],
        "image": ["img.png" for _ in rows],
        "trainer_state": object(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: metrics.append((name, value)),
    }


@pytest.mark.parametrize("kind", KINDS)
def test_trl_reward_function_raises_instead_of_none(kind: str) -> None:
    inst, _, _, response = BROKEN[kind]
    func = trl.make_reward_func()
    metrics: list[tuple[str, float]] = []
    # TRL 1.16 trl/trainer/grpo_trainer.py l.1626-1628: reward_func(prompts=..., completions=...,
    # completion_ids=..., **reward_kwargs) with no try, so the exception stops training with its message.
    # None would become NaN (l.1630), "not applicable", and hide the broken row: never returned for one.
    with pytest.raises(InstanceError, match=r"^position 1 in this call: invalid instance") as caught:
        func(**_trl_kwargs([(GOOD_RESPONSE, GOOD), (response, inst)], metrics))
    _assert_names(caught.value, kind)
    assert metrics == []  # refused before anything was scored or logged
    got = func(**_trl_kwargs([(GOOD_RESPONSE, GOOD)], metrics))
    assert got == [reference(GOOD_RESPONSE, GOOD)["overall"]]
    for component in trl.make_component_reward_funcs():
        with pytest.raises(InstanceError):
            component(**_trl_kwargs([(response, inst)], []))


def test_trl_rows_without_an_instance_stay_not_applicable() -> None:
    # Not a broken instance: a non-trace row of a mixed dataset (all three columns empty) is still None.
    func = trl.make_reward_func()
    got = func(
        prompts=["a", "b"],
        completions=[GOOD_RESPONSE, GOOD_RESPONSE],
        answer_gt=[GOOD["answer_gt"], None],
        annotation_gt=[GOOD["annotation_gt"], None],
        reward_contract=[GOOD["reward_contract"], None],
    )
    assert got == [reference(GOOD_RESPONSE, GOOD)["overall"], None]


# --------------------------------------------------------------------------- EasyR1


@pytest.mark.parametrize("kind", KINDS)
def test_easyr1_batch_function_raises_naming_the_input(kind: str) -> None:
    inst, _, _, response = BROKEN[kind]
    # EasyR1 verl/workers/reward/function.py l.87-95 (HEAD): reward_inputs of {"response", "response_length",
    # "ground_truth"} and self.reward_fn(reward_inputs), a functools.partial with reward_function_kwargs
    # (l.133), no try; the trainer's ray.get (verl/trainer/ray_trainer.py l.519) re-raises it.
    reward_fn = functools.partial(easyr1.compute_score, format_weight=0.1)
    inputs = [
        {"response": GOOD_RESPONSE, "response_length": 20, "ground_truth": as_json(GOOD)},
        {"response": response, "response_length": 20, "ground_truth": as_json(inst)},
    ]
    with pytest.raises(
        InstanceError, match=r"^reward_inputs\[1\]\.ground_truth \(position 1 in this call\): invalid instance"
    ) as caught:
        reward_fn(inputs)
    _assert_names(caught.value, kind)
    (good,) = reward_fn(inputs[:1])
    expected = reference(GOOD_RESPONSE, GOOD, format_weight=0.1)
    assert good == {key: expected[key] for key in good} and good.keys() >= {"overall", "accuracy", *CHARTED_KEYS}


# --------------------------------------------------------------------------- OpenRLHF


@pytest.mark.parametrize("kind", KINDS)
def test_openrlhf_reward_file_logs_error_once_and_counts_the_refusal(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    inst, path, word, response = BROKEN[kind]
    label = as_json(inst)
    caplog.set_level(logging.INFO, logger="trace_tasks.integrations.openrlhf")
    # OpenRLHF 0.11.2 openrlhf/utils/agent.py l.288-290 and l.310-325: one sample per call,
    # reward_func([query], [prompt], [label]) in a thread, the query decoded with skip_special_tokens=False.
    # l.303-304 catch any exception and log it at INFO only (reward stays None): so by default the
    # sample scores 0, trace_refused is 1.0 (a metric of the step) and our own ERROR line names the cause.
    for _ in range(3):  # three rollouts of the same broken label
        got = openrlhf.reward_func([PROMPT + response + "<|im_end|>"], [PROMPT], [label])
        assert _first(got["rewards"]) == 0.0 and _first(got["extra_logs"][REFUSED_KEY]) == 1.0
        assert all(_first(v) == 0.0 for k, v in got["extra_logs"].items() if k != REFUSED_KEY)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, "one ERROR line per label content"
    message = errors[0].getMessage()
    assert path in message and word in message and "labels[0] (position 0 in this call): invalid instance" in message
    assert '"answer_gt"' in message  # the row itself
    # The next sample, a good label, scores exactly as score_trace_response does.
    good = openrlhf.reward_func([PROMPT + GOOD_RESPONSE + "<|im_end|>"], [PROMPT], [as_json(GOOD)])
    expected = reference(GOOD_RESPONSE, GOOD)
    values = {key: _first(value) for key, value in good["extra_logs"].items()}
    assert values == pytest.approx({**{key: expected[key] for key in CHARTED_KEYS}, REFUSED_KEY: 0.0})
    assert _first(good["rewards"]) == pytest.approx(expected["overall"])


@pytest.mark.parametrize("kind", KINDS)
def test_openrlhf_on_invalid_raise_logs_error_once_then_raises(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    inst, path, _word, response = BROKEN[kind]
    caplog.set_level(logging.INFO, logger="trace_tasks.integrations.openrlhf")
    reward_func = openrlhf.make_reward_func(on_invalid="raise")
    # OpenRLHF 0.9.0 openrlhf/utils/remote_rm_utils.py l.49-83: ray.remote(reward_func) on chunks, ray.get with no
    # try (experience_maker.py l.418): the exception stops the run with its message.
    for _ in range(2):
        with pytest.raises(InstanceError, match=r"^labels\[0\] \(position 0 in this call\): invalid instance") as caught:
            reward_func([PROMPT + response], [PROMPT], [as_json(inst)])
        _assert_names(caught.value, kind)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and path in errors[0].getMessage()


def _first(values: Any) -> float:
    # OpenRLHF 0.11.2 trainer/ppo_utils/samples_generator.py l.289-292 reads each extra_logs value with
    # .flatten()[0].item() when it is a tensor.
    return values.flatten()[0].item() if hasattr(values, "flatten") else values[0]


def test_openrlhf_label_that_is_no_instance_is_logged_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="trace_tasks.integrations.openrlhf")
    got = openrlhf.reward_func([PROMPT + GOOD_RESPONSE], [PROMPT], ["{not json"])
    assert _first(got["extra_logs"][REFUSED_KEY]) == 1.0
    with pytest.raises(ValueError, match=r"labels\[0\] \(position 0 in this call\) is a string but not JSON"):
        openrlhf.make_reward_func(on_invalid="raise")([PROMPT + GOOD_RESPONSE], [PROMPT], ["{not json"])
    assert [r.levelno for r in caplog.records] == [logging.ERROR]  # once per label content


def test_openrlhf_score_queries_raises_for_the_server() -> None:
    # The HTTP server scores through score_queries: the same refusal, without the log line.
    inst, *_ = BROKEN["zero_area_target"]
    with pytest.raises(InstanceError, match=r"^labels\[1\]: invalid instance: \$\.annotation_gt\.value"):
        openrlhf.score_queries([GOOD_RESPONSE, GOOD_RESPONSE], None, [as_json(GOOD), as_json(inst)])


# --------------------------------------------------------------------------- Ray Data (the batch function)


@pytest.mark.parametrize("kind", KINDS)
def test_ray_batch_function_reports_the_problems_in_the_error_column(kind: str) -> None:
    pa = pytest.importorskip("pyarrow")
    from trace_tasks.integrations.ray import _score_arrow_batch

    inst, path, word, response = BROKEN[kind]
    # The function score_dataset hands to Ray Data's map_batches(batch_format="pyarrow"), called as Ray calls it.
    batch = pa.Table.from_pylist(
        [
            {"response": GOOD_RESPONSE, "instance": as_json(GOOD)},
            {"response": response, "instance": as_json(inst)},
            {"response": GOOD_RESPONSE, "instance": as_json(GOOD)},
        ]
    )
    out = _score_arrow_batch(
        batch, response_column="response", instance_columns="instance", options={}, prefix="trace_", error_column="error"
    )
    rows = out.to_pylist()
    assert rows[1]["trace_error"].startswith("InstanceError: instance: invalid instance: ")
    assert path in rows[1]["trace_error"] and word in rows[1]["trace_error"]
    assert all(rows[1]["trace_" + key] == 0.0 for key in stable_keys())
    expected = reference(GOOD_RESPONSE, GOOD)
    for row in (rows[0], rows[2]):
        assert row["trace_error"] is None  # an Arrow string column: one null kind
        assert {key: row["trace_" + key] for key in stable_keys()} == {key: expected[key] for key in stable_keys()}


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.usefixtures("ray_session")
def test_ray_score_dataset_keeps_going_past_broken_rows() -> None:
    ray = pytest.importorskip("ray")
    from trace_tasks.integrations.ray import score_dataset

    records = [{"id": 2 * n, "response": GOOD_RESPONSE, "instance": as_json(GOOD)} for n in range(len(KINDS))]
    records += [{"id": 2 * n + 1, "response": BROKEN[k][3], "instance": as_json(BROKEN[k][0])} for n, k in enumerate(KINDS)]
    out = sorted(score_dataset(ray.data.from_items(records), instance_columns="instance").take_all(), key=lambda r: r["id"])
    expected = reference(GOOD_RESPONSE, GOOD)
    for n, kind in enumerate(KINDS):
        good, bad = out[2 * n], out[2 * n + 1]
        assert good["error"] is None and good["overall"] == expected["overall"]
        assert BROKEN[kind][1] in bad["error"] and bad["overall"] == 0.0


# --------------------------------------------------------------------------- a GRPO group compiles once


GROUP = 16
GROUP_RESPONSES = [GOOD_RESPONSE, "", '{"answer": 2}', '{"answer": 3, "annotation": [[10, 10, 20, 20]]}'] * (GROUP // 4)


def test_verl_group_compiles_once(compile_spy: list[Any]) -> None:
    label = as_json(GOOD)
    # verl 0.9.1 reward_loop.py l.138-143: one compute_score call per rollout (run_single on data[i:i+1]).
    got = [verl.compute_score("trace_tasks", r, label, extra_info={"index": 7}) for r in GROUP_RESPONSES]
    assert len(compile_spy) == 1
    assert [g["score"] for g in got] == [reference(r, GOOD, extra_info={"index": 7})["overall"] for r in GROUP_RESPONSES]
    # A mapping ground truth (parquet gives numpy arrays) is cached by content too: same instance, no new compile.
    verl.compute_score(
        "trace_tasks",
        GOOD_RESPONSE,
        {**GOOD, "annotation_gt": {"type": "bbox_set", "value": np.array(GOOD["annotation_gt"]["value"])}},
    )
    assert len(compile_spy) == 1


def test_trl_group_compiles_once(compile_spy: list[Any]) -> None:
    func = trl.make_reward_func()
    got = func(**_trl_kwargs([(r, GOOD) for r in GROUP_RESPONSES], []))
    assert len(compile_spy) == 1
    assert got == [reference(r, GOOD)["overall"] for r in GROUP_RESPONSES]


def test_easyr1_group_compiles_once(compile_spy: list[Any]) -> None:
    got = easyr1.compute_score([{"response": r, "response_length": 1, "ground_truth": as_json(GOOD)} for r in GROUP_RESPONSES])
    assert len(compile_spy) == 1
    assert [g["overall"] for g in got] == [reference(r, GOOD)["overall"] for r in GROUP_RESPONSES]


def test_openrlhf_group_compiles_once(compile_spy: list[Any]) -> None:
    # OpenRLHF 0.11.2 agent.py l.310-325: batch_size = 1, one reward_func call per rollout.
    got = [openrlhf.reward_func([PROMPT + r], [PROMPT], [as_json(GOOD)]) for r in GROUP_RESPONSES]
    assert len(compile_spy) == 1
    assert [_first(g["rewards"]) for g in got] == pytest.approx([reference(r, GOOD)["overall"] for r in GROUP_RESPONSES])


def test_ray_batch_group_compiles_once(compile_spy: list[Any]) -> None:
    pa = pytest.importorskip("pyarrow")
    from trace_tasks.integrations.ray import _score_arrow_batch

    batch = pa.Table.from_pylist([{"response": r, "instance": as_json(GOOD)} for r in GROUP_RESPONSES])
    out = _score_arrow_batch(
        batch, response_column="response", instance_columns="instance", options={}, prefix="", error_column="error"
    )
    assert len(compile_spy) == 1
    assert out.column("overall").to_pylist() == [reference(r, GOOD)["overall"] for r in GROUP_RESPONSES]


@pytest.mark.parametrize("kind", ["zero_area_target", "integer_answer_null"])
def test_a_broken_group_is_validated_once_too(kind: str, compile_spy: list[Any]) -> None:
    label = as_json(BROKEN[kind][0])
    for response in GROUP_RESPONSES:
        with pytest.raises(InstanceError):
            verl.compute_score("trace_tasks", response, label)
    assert len(compile_spy) == 1  # failures are cached by content as well


def test_the_shared_cache_is_bounded() -> None:
    assert _common.INSTANCE_CACHE.maxsize == 4096
