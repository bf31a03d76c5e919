"""A tiny randomly initialised Llama, its tokenizer and the datasets, all built locally (nothing is downloaded).

The vocabulary holds whole responses as single tokens (right, partly right,
wrong, unparseable), so a random model's completions get varied rewards, and
GRPO has advantages to work with. Imported only after ``trl`` is found (the
opt-in layer's environment); the default test environment has no torch.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

# Offline before transformers or datasets are imported: a test that tried to download would fail, not wait.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from datasets import Dataset
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from trace_tasks import resolve_reward_contract
from trace_tasks.integrations.trl import completion_text

SPECIAL = ["<pad>", "<eos>", "<unk>", "<user>", "<assistant>"]
#: Responses the model can emit as one token each (no spaces inside: the pre-tokenizer splits on whitespace).
RESPONSE_TOKENS = [
    '{"answer":2,"annotation":[[10,10,20,20]]}',
    '{"answer":2,"annotation":[[0,0,5,5]]}',
    '{"answer":3,"annotation":[[10,10,20,20]]}',
    '{"answer":"B","annotation":[0,0,100,50]}',
    '{"answer":"A","annotation":[0,0,100,50]}',
    '{"answer":',
    "<think>",
    "</think>",
]
WORDS = ["how", "many", "boxes", "which", "option", "is", "it", "?", "the", "answer"]

CHAT_TEMPLATE = (
    "{% for message in messages %}<{{ message['role'] }}> {{ message['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<assistant> {% endif %}"
)


def tokenizer() -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate([*SPECIAL, *RESPONSE_TOKENS, *WORDS])}
    core = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    tok.chat_template = CHAT_TEMPLATE
    return tok


def model(vocab_size: int, seed: int = 0) -> LlamaForCausalLM:
    import torch

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config)


def trace_instance(answer: dict[str, Any], annotation: dict[str, Any]) -> dict[str, str]:
    """The three instance columns as JSON strings (one Arrow type whatever the geometry)."""
    contract = resolve_reward_contract(answer_type=answer["type"], annotation_type=annotation["type"]).to_dict()
    return {"answer_gt": json.dumps(answer), "annotation_gt": json.dumps(annotation), "reward_contract": json.dumps(contract)}


TRACE_ROWS: list[dict[str, str]] = [
    {
        "question": "how many boxes ?",
        **trace_instance({"type": "integer", "value": 2}, {"type": "bbox_set", "value": [[10, 10, 20, 20]]}),
    },
    {
        "question": "which option is it ?",
        **trace_instance({"type": "option_letter", "value": "B"}, {"type": "bbox", "value": [0, 0, 100, 50]}),
    },
]
#: A row another reward function handles: the three instance columns are empty.
OTHER_ROW: dict[str, Any] = {"question": "the answer ?", "answer_gt": None, "annotation_gt": None, "reward_contract": None}


def other_task_reward(completions: list[Any], answer_gt: list[Any], **kwargs: Any) -> list[Optional[float]]:
    """The reward of the other task in a mixed dataset: its rows only (TRL's ``None`` on trace rows)."""
    return [None if gt is not None else float(len(completion_text(c)) % 2) for c, gt in zip(completions, answer_gt, strict=True)]


def dataset(rows: list[dict[str, Any]], *, conversational: bool = False, repeat: int = 1) -> Dataset:
    """``prompt`` (a string, or a one-message conversation) and the instance columns, ``repeat`` times over."""
    records = []
    for row in rows * repeat:
        prompt: Any = [{"role": "user", "content": row["question"]}] if conversational else row["question"]
        records.append({"prompt": prompt, **{k: v for k, v in row.items() if k != "question"}})
    return Dataset.from_list(records)


def grpo_args(output_dir: str, **overrides: Any) -> Any:
    """Two steps on CPU, two completions per prompt, short completions, no reporting or checkpoints."""
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "output_dir": output_dir,
        "max_steps": 2,
        "per_device_train_batch_size": 4,
        "num_generations": 2,
        "max_completion_length": 4,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": [],
        "use_cpu": True,
        "seed": 0,
        "log_completions": False,
        "dataloader_num_workers": 0,
        "bf16": False,
        "fp16": False,
    }
    settings.update(overrides)
    return GRPOConfig(**settings)
