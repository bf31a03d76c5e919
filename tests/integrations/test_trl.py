"""TRL adapter, called the way ``GRPOTrainer`` calls reward functions.

Shapes follow TRL v1.x ``trl/trainer/grpo_trainer.py`` (``_calculate_rewards``):
``reward_func(prompts=prompts, completions=completions,
completion_ids=completion_ids_list, **reward_kwargs)`` where ``reward_kwargs``
holds every dataset column except ``prompt``/``completion`` as a list, plus
``trainer_state``, ``log_extra`` and ``log_metric``. Conversational completions
are ``[{"role": "assistant", "content": text}]``. ``None`` means "not applicable".
The reward's ``__name__`` labels it in the logs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trace_tasks.integrations.trl import LOGGED_COMPONENTS, completion_text, make_component_reward_funcs, make_reward_func

from .helpers import INSTANCES, pairs, reference


def _trl_kwargs(rows: list[tuple[str, dict]], *, conversational: bool, json_columns: bool = False) -> dict[str, Any]:
    """The keyword arguments GRPOTrainer builds for one batch."""
    metrics: list[tuple[str, float]] = []
    enc = json.dumps if json_columns else (lambda v: v)
    completions: list[Any] = [[{"role": "assistant", "content": r}] if conversational else r for r, _ in rows]
    return {
        "prompts": [[{"role": "user", "content": "Q?"}] if conversational else "Q?" for _ in rows],
        "completions": completions,
        "completion_ids": [[1, 2, 3] for _ in rows],
        "answer_gt": [enc(i["answer_gt"]) for _, i in rows],
        "annotation_gt": [enc(i["annotation_gt"]) for _, i in rows],
        "reward_contract": [enc(i["reward_contract"]) for _, i in rows],
        "image_size": [i.get("image_size") for _, i in rows],
        "image": ["img.png" for _ in rows],  # an unrelated dataset column
        "trainer_state": object(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: metrics.append((name, value)),
        "_metrics": metrics,
    }


@pytest.mark.parametrize("conversational", [False, True])
@pytest.mark.parametrize("json_columns", [False, True])
def test_overall_equals_scorer(conversational: bool, json_columns: bool) -> None:
    rows = pairs()
    kwargs = _trl_kwargs(rows, conversational=conversational, json_columns=json_columns)
    metrics = kwargs.pop("_metrics")
    func = make_reward_func()
    got = func(**kwargs)
    expected = [reference(r, i) for r, i in rows]
    assert got == [e["overall"] for e in expected]
    assert func.__name__ == "trace_overall"
    logged = dict(metrics)
    assert set(logged) == {f"trace/{name}" for name in LOGGED_COMPONENTS}
    for name in LOGGED_COMPONENTS:
        assert logged[f"trace/{name}"] == pytest.approx(sum(e[name] for e in expected) / len(expected))


def test_component_functions_for_reward_weights() -> None:
    rows = pairs()
    kwargs = _trl_kwargs(rows, conversational=False)
    kwargs.pop("_metrics")
    funcs = make_component_reward_funcs(format_weight=0.1)
    assert [f.__name__ for f in funcs] == ["trace_answer", "trace_annotation", "trace_format"]
    expected = [reference(r, i, format_weight=0.1) for r, i in rows]
    for func, key in zip(funcs, ["answer_reward", "annotation_reward", "format"], strict=False):
        assert func(**kwargs) == [e[key] for e in expected]


def test_positional_call_and_no_log_metric() -> None:
    (response, inst) = pairs()[0]
    func = make_reward_func("annotation_reward", trace_reward_mode="answer")
    got = func(
        ["Q?"],
        [response],
        answer_gt=[inst["answer_gt"]],
        annotation_gt=[inst["annotation_gt"]],
        reward_contract=[inst["reward_contract"]],
    )
    assert got == [reference(response, inst, trace_reward_mode="answer")["annotation_reward"]]


def test_rows_without_an_instance_are_not_applicable() -> None:
    (response, inst) = pairs()[0]
    func = make_reward_func()
    got = func(
        prompts=["a", "b"],
        completions=[response, response],
        answer_gt=[inst["answer_gt"], None],
        annotation_gt=[inst["annotation_gt"], None],
        reward_contract=[inst["reward_contract"], None],
    )
    assert got == [reference(response, inst)["overall"], None]


def test_conversation_text_extraction() -> None:
    assert completion_text([{"role": "user", "content": "x"}]) == ""
    assert (
        completion_text(
            [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]
        )
        == "ab"
    )
    assert completion_text([{"role": "assistant", "content": "first"}, {"role": "assistant", "content": "last"}]) == "last"
    assert completion_text([{"role": "assistant", "content": None}]) == ""


def test_caller_mistakes_raise() -> None:
    with pytest.raises(ValueError, match="unknown component"):
        make_reward_func("nonsense")
    with pytest.raises(ValueError, match="unknown scorer option"):
        make_reward_func(answer_wieght=1.0)
    with pytest.raises(ValueError, match="answer_weight"):
        make_reward_func(answer_weight=-1)
    func = make_reward_func()
    with pytest.raises(ValueError, match="lacks the column"):
        func(prompts=["q"], completions=["a"], answer_gt=[INSTANCES[0]["answer_gt"]])
    inst = INSTANCES[0]
    with pytest.raises(ValueError, match="row 0"):
        func(
            prompts=["q"],
            completions=["a"],
            answer_gt=[inst["answer_gt"]],
            annotation_gt=[None],
            reward_contract=[inst["reward_contract"]],
        )
    with pytest.raises(ValueError, match="values for 2 completions"):
        func(
            prompts=["q", "q"],
            completions=["a", "b"],
            answer_gt=[inst["answer_gt"]],
            annotation_gt=[inst["annotation_gt"]],
            reward_contract=[inst["reward_contract"]],
        )
