"""OpenRLHF custom reward function, called the way OpenRLHF calls it.

Shapes follow OpenRLHF ``openrlhf/utils/remote_rm_utils.py`` (``RemoteRewardModel.get_rewards``):
the file's ``reward_func`` is wrapped in ``ray.remote`` and called positionally
with ``(queries, prompts, labels)`` slices, where queries are prompt + response
decoded with ``skip_special_tokens=False`` (``trainer/ppo_utils/experience_maker.py``)
and labels the ``--label_key`` column. ``update_samples_with_rewards`` concatenates
``rewards``, ``scores`` and each ``extra_logs`` key across chunks.
"""

from __future__ import annotations

import json

import pytest

from trace_tasks.integrations import openrlhf
from trace_tasks.integrations._common import stable_keys

from .helpers import as_json, pairs, reference

PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>How many?<|im_end|>\n<|im_start|>assistant\n"


def _values(seq) -> list[float]:
    return seq.tolist() if hasattr(seq, "tolist") else list(seq)


def test_reward_func_equals_scorer() -> None:
    rows = pairs()
    queries = [PROMPT + r + "<|im_end|>" + "<|endoftext|>" * (n % 3) for n, (r, _) in enumerate(rows)]
    result = openrlhf.reward_func(queries, [PROMPT] * len(rows), [as_json(i) for _, i in rows])
    expected = [reference(r, i) for r, i in rows]
    assert _values(result["rewards"]) == pytest.approx([e["overall"] for e in expected])
    assert _values(result["scores"]) == _values(result["rewards"])
    assert list(result["extra_logs"]) == list(stable_keys())
    for key, values in result["extra_logs"].items():
        assert _values(values) == pytest.approx([e[key] for e in expected]), key


def test_score_queries_gives_plain_lists_and_exact_values() -> None:
    rows = pairs()
    result = openrlhf.score_queries(
        [PROMPT + r for r, _ in rows], [PROMPT] * len(rows), [i for _, i in rows], {"format_weight": 0.3}
    )
    expected = [reference(r, i, format_weight=0.3) for r, i in rows]
    assert result["rewards"] == [e["overall"] for e in expected]
    assert all(isinstance(v, float) for v in result["extra_logs"]["format"])


def test_response_extraction() -> None:
    assert openrlhf.extract_response("PROMPT{}<|im_end|>\n<|endoftext|>", "PROMPT") == "{}"
    assert openrlhf.extract_response("{} </s>", "other prompt") == "{}"
    assert openrlhf.extract_response("{}<|not a token|>", "") == "{}<|not a token|>"
    assert openrlhf.extract_response(None, "x") == ""
    # A million fake tokens is stripped in linear time (a slicing loop would take minutes).
    assert openrlhf.extract_response("{}" + "<|x|>" * 200_000, "") == "{}"


def test_options_from_environment(monkeypatch) -> None:
    (response, inst) = pairs()[0]
    monkeypatch.setenv(openrlhf.OPTIONS_ENV, json.dumps({"trace_reward_mode": "answer"}))
    got = openrlhf.score_queries([response], None, [inst], openrlhf._options_from_env())
    assert got["rewards"] == [reference(response, inst, trace_reward_mode="answer")["overall"]]
    monkeypatch.setenv(openrlhf.OPTIONS_ENV, json.dumps({"trace_reward_moda": "answer"}))
    with pytest.raises(ValueError, match="unknown scorer option"):
        openrlhf.reward_func([response], [""], [as_json(inst)])


def test_caller_mistakes_raise() -> None:
    (response, _inst) = pairs()[0]
    with pytest.raises(ValueError, match="same length"):
        openrlhf.reward_func([response], [""], [])
    with pytest.raises(ValueError, match=r"labels\[0\]"):
        openrlhf.reward_func([response], [""], ["{not json"])
