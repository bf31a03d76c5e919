"""OpenRLHF reward file, driven the way OpenRLHF calls it (copied from the released wheels, without Ray or vLLM).

* OpenRLHF 0.11.2 (current, ``--reward.remote_url reward_func.py --data.label_key KEY``):
  ``openrlhf/utils/agent.py`` ``SingleTurnAgentExecutor`` loads the file's
  ``reward_func`` (l.196-205) and calls it once per sample,
  ``reward_func([query], [prompt], [label])`` in a thread (l.286-293,
  l.307-325), the query decoded with ``skip_special_tokens=False`` (l.288); it
  takes ``rewards_info_list[0]`` and its ``rewards``/``scores``/``extra_logs``
  (l.293-302) and catches any exception at INFO (l.303-304);
  ``trainer/ppo_utils/samples_generator.py`` l.289-292 turns each
  ``extra_logs`` value into a one-element tensor (``.flatten()[0].item()``).
* OpenRLHF 0.9.0 (``--remote_rm_url reward_func.py --label_key KEY``):
  ``openrlhf/utils/remote_rm_utils.py`` l.42-83 wraps ``reward_func`` in
  ``ray.remote`` and calls it on chunks of ``micro_rollout_batch_size``;
  ``trainer/ppo_utils/experience_maker.py`` l.208-245
  (``update_samples_with_rewards``) concatenates ``rewards``, ``scores`` and
  each ``extra_logs`` key with ``torch.cat(torch.as_tensor(...))``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from trace_tasks.integrations import openrlhf
from trace_tasks.integrations._common import CHARTED_KEYS, REFUSED_KEY, stable_keys

from .helpers import INSTANCES, as_json, pairs, reference

PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>How many?<|im_end|>\n<|im_start|>assistant\n"


def _values(seq: Any) -> list[float]:
    return seq.tolist() if hasattr(seq, "tolist") else list(seq)


def _flat(value: Any) -> float:
    # OpenRLHF 0.11.2 trainer/ppo_utils/samples_generator.py l.289-292
    return value.flatten()[0].item() if hasattr(value, "flatten") else float(np.asarray(value).reshape(-1)[0])


def execute_0_11(reward_func: Any, query: str, prompt: str, label: Any) -> dict[str, Any]:
    """OpenRLHF 0.11.2 openrlhf/utils/agent.py l.286-304: one sample, the result's first entry, errors at INFO."""
    output: dict[str, Any] = {"reward": None, "scores": None, "extra_logs": {}}
    try:
        rewards_info_list = [reward_func([query], [prompt], [label])]  # l.307-325: asyncio.to_thread + gather
        rewards_info = rewards_info_list[0] if rewards_info_list else None
        if rewards_info:
            score_value = rewards_info.get("scores")
            if score_value is None:
                score_value = rewards_info.get("rewards")
            output.update(
                reward=rewards_info.get("rewards"),
                scores=score_value,
                extra_logs=rewards_info.get("extra_logs") or {},
            )
    except Exception:  # logger.info(f"[SingleTurnExecutor] Failed to fetch reward from remote RM: {e}")
        pass
    info = {key: _flat(value) for key, value in output["extra_logs"].items()}  # samples_generator.py l.289-292
    return {"reward": None if output["reward"] is None else _flat(output["reward"]), "info": info}


def get_rewards_0_9(
    reward_func: Any, queries: list[str], prompts: list[str], labels: list[Any], micro_batch: int
) -> dict[str, Any]:
    """OpenRLHF 0.9.0 remote_rm_utils.py l.51-83 (chunks of micro_rollout_batch_size) and
    experience_maker.py l.218-231 (concatenate rewards, scores and every extra_logs key of the first chunk)."""
    rewards_info = [
        reward_func(queries[i : i + micro_batch], prompts[i : i + micro_batch], labels[i : i + micro_batch])
        for i in range(0, len(queries), micro_batch)
    ]
    cat = np.concatenate
    return {
        "rewards": cat([np.asarray(info["rewards"]) for info in rewards_info]).tolist(),
        "scores": cat([np.asarray(info["scores"]) for info in rewards_info]).tolist(),
        "extra_logs": {
            key: cat([np.asarray(info["extra_logs"][key]) for info in rewards_info]).tolist()
            for key in rewards_info[0]["extra_logs"]
        },
    }


def test_per_sample_calls_of_0_11_equal_the_scorer() -> None:
    reward_func = openrlhf.make_reward_func(format_weight=0.1)  # the one-line reward file
    for n, (response, inst) in enumerate(pairs()):
        query = PROMPT + response + "<|im_end|>" + "<|endoftext|>" * (n % 3)
        got = execute_0_11(reward_func, query, PROMPT, as_json(inst))
        want = reference(response, inst, format_weight=0.1)
        assert got["reward"] == pytest.approx(want["overall"])
        assert list(got["info"]) == [*CHARTED_KEYS, REFUSED_KEY]
        assert got["info"] == pytest.approx({**{k: want[k] for k in CHARTED_KEYS}, REFUSED_KEY: 0.0})


def test_chunked_calls_of_0_9_concatenate_with_the_same_keys() -> None:
    rows = pairs()
    queries = [PROMPT + r + "</s>" for r, _ in rows]
    labels = [as_json(i) for _, i in rows]
    got = get_rewards_0_9(openrlhf.make_reward_func(log_keys="all"), queries, [PROMPT] * len(rows), labels, micro_batch=4)
    expected = [reference(r, i) for r, i in rows]
    assert got["rewards"] == pytest.approx([e["overall"] for e in expected])
    assert got["scores"] == got["rewards"]
    assert list(got["extra_logs"]) == [*stable_keys(), REFUSED_KEY]
    for key in stable_keys():
        assert got["extra_logs"][key] == pytest.approx([e[key] for e in expected]), key


def test_a_broken_label_is_a_metric_of_the_step_not_a_missing_reward() -> None:
    broken = {**INSTANCES[1], "annotation_gt": {"type": "bbox", "value": [5, 5, 5, 50]}}
    (response, _inst) = pairs()[0]
    got = execute_0_11(openrlhf.reward_func, PROMPT + response, PROMPT, as_json(broken))
    assert got["reward"] == 0.0 and got["info"][REFUSED_KEY] == 1.0  # not None: the step's metrics show it
    assert (
        execute_0_11(openrlhf.make_reward_func(on_invalid="raise"), PROMPT + response, PROMPT, as_json(broken))["reward"] is None
    )


def test_score_queries_gives_plain_lists_and_exact_values() -> None:
    rows = pairs()
    result = openrlhf.score_queries(
        [PROMPT + r for r, _ in rows], [PROMPT] * len(rows), [i for _, i in rows], {"format_weight": 0.3}
    )
    expected = [reference(r, i, format_weight=0.3) for r, i in rows]
    assert result["rewards"] == [e["overall"] for e in expected]
    assert list(result["extra_logs"]) == list(stable_keys())
    assert all(isinstance(v, float) for v in result["extra_logs"]["format"])


def test_response_extraction() -> None:
    assert openrlhf.extract_response("PROMPT{}<|im_end|>\n<|endoftext|>", "PROMPT") == "{}"
    assert openrlhf.extract_response("{} </s>", "other prompt") == "{}"
    assert openrlhf.extract_response("{}<|not a token|>", "") == "{}<|not a token|>"
    assert openrlhf.extract_response("{}</s><pad><pad><pad>", "") == "{}"
    assert openrlhf.extract_response("{}[SEP][PAD][PAD]", "") == "{}"
    assert openrlhf.extract_response(None, "x") == ""
    # A million fake tokens is stripped in linear time (a slicing loop would take minutes).
    assert openrlhf.extract_response("{}" + "<|x|>" * 200_000, "") == "{}"
    assert openrlhf.extract_response("{}" + "<pad>" * 200_000, "") == "{}"


def test_options_from_environment_for_the_ready_made_function(monkeypatch: pytest.MonkeyPatch) -> None:
    (response, inst) = pairs()[0]
    monkeypatch.setenv(openrlhf.OPTIONS_ENV, json.dumps({"trace_reward_mode": "answer"}))
    got = openrlhf.reward_func([response], [""], [inst])
    assert _values(got["rewards"]) == pytest.approx([reference(response, inst, trace_reward_mode="answer")["overall"]])
    monkeypatch.setenv(openrlhf.OPTIONS_ENV, json.dumps({"trace_reward_moda": "answer"}))
    with pytest.raises(ValueError, match="unknown scorer option"):
        openrlhf.reward_func([response], [""], [as_json(inst)])


def test_caller_mistakes_raise() -> None:
    (response, _inst) = pairs()[0]
    with pytest.raises(ValueError, match="same length"):
        openrlhf.reward_func([response], [""], [])
    with pytest.raises(ValueError, match="on_invalid"):
        openrlhf.make_reward_func(on_invalid="ignore")
    with pytest.raises(ValueError, match="unknown scorer option"):
        openrlhf.make_reward_func(formatweight=0.1)
    with pytest.raises(ValueError, match="log_keys"):
        openrlhf.make_reward_func(log_keys="some")


def _expanded(prompt: str, patches: int) -> str:
    """The prompt as OpenRLHF 0.11.2 decodes it into the query when the row has an image: the processor
    expanded the image's one ``<|image_pad|>`` into one per patch (``openrlhf/utils/vlm_utils.py`` l.106-107,
    ``openrlhf/utils/agent.py`` l.211-214), and ``agent.py`` l.288 decodes the observation tokens with
    ``skip_special_tokens=False``; l.290 then calls ``reward_func([query], [prompt], [label])`` with the
    prompt as it was (one pad)."""
    return prompt.replace("<|image_pad|>", "<|image_pad|>" * patches)


@pytest.mark.parametrize("patches", [1, 64, 1296])
def test_an_image_prompt_expanded_in_the_query_is_still_cut_off(patches: int) -> None:
    # The prompt no longer prefixed the query: the whole transcript was scored, a worked example in the
    # prompt ({"answer": ...}) read as the model's answer.
    worked = PROMPT.replace("How many?", 'How many? Answer as e.g. {"answer": 3, "annotation": [0, 0, 5, 5]}')
    for response, inst in pairs():
        query = _expanded(worked, patches) + response + "<|im_end|>"
        assert openrlhf.extract_response(query, worked) == openrlhf.strip_special_tokens(response + "<|im_end|>")
        got = openrlhf.reward_func([query], [worked], [as_json(inst)])
        assert _values(got["rewards"]) == [pytest.approx(reference(response, inst)["overall"])]


def test_two_images_and_a_video_in_one_prompt() -> None:
    prompt = "<|im_start|>user\n<|image_pad|> and <|image_pad|><|video_pad|>?<|im_end|>\n<|im_start|>assistant\n"
    query = prompt.replace("<|image_pad|>", "<|image_pad|>" * 9).replace("<|video_pad|>", "<|video_pad|>" * 5) + "7"
    assert openrlhf.extract_response(query, prompt) == "7"
    assert openrlhf.extract_response("another transcript 7", prompt) == "another transcript 7"  # not the prompt: whole
