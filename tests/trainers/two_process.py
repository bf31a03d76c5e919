"""One process of a 2-process GRPOTrainer run on CPU (gloo), started by ``torch.distributed.run``.

``python -m torch.distributed.run --standalone --nproc_per_node 2 tests/trainers/two_process.py OUT_DIR [--naive-logging]``

The dataset alternates a trace row and a row of another task, unshuffled, with
one prompt per process per step: rank 0's batches hold trace rows only, rank
1's none. Each rank writes ``OUT_DIR/rank<N>.json``: the steps it finished, its
log history and what the trace reward returned to it (``None`` per completion
without an instance).

``--naive-logging`` is the control: a reward function that logs ``trace/*``
only when its batch held trace rows (what the adapter must not do). On TRL
1.0-1.13, which gather once per metric name a process logged, that run hangs in
its first metric flush; on TRL 1.14+ it finishes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

from tests.trainers import tiny
from trace_tasks.integrations.trl import make_reward_func


def main(out_dir: Path, naive_logging: bool) -> None:
    from trl import GRPOTrainer

    trace_reward = make_reward_func(log_metrics=not naive_logging)
    rows_seen: list[Optional[float]] = []

    def trace_overall(**kwargs: Any) -> list[Optional[float]]:
        out = trace_reward(**kwargs)
        rows_seen.extend(out)
        scored = [r for r in out if r is not None]
        if naive_logging and scored:  # nothing logged by a process whose batch had no trace row
            kwargs["log_metric"]("trace/overall", sum(scored) / len(scored))
        return out

    tok = tiny.tokenizer()
    trainer = GRPOTrainer(
        model=tiny.model(len(tok)),
        reward_funcs=[trace_overall, tiny.other_task_reward],
        # 2 processes x 2 completions = 1 prompt per process per step.
        args=tiny.grpo_args(str(out_dir / "run"), per_device_train_batch_size=2, shuffle_dataset=False),
        train_dataset=tiny.dataset([tiny.TRACE_ROWS[0], tiny.OTHER_ROW], repeat=4),
        processing_class=tok,
    )
    trainer.train()
    rank = int(os.environ["RANK"])
    result = {"steps": trainer.state.global_step, "log_history": trainer.state.log_history, "rows_seen": rows_seen}
    (out_dir / f"rank{rank}.json").write_text(json.dumps(result))


def close_process_group() -> None:
    """Leave the gloo group together, then tear it down, before the interpreter exits.

    Without this, the first rank to finish exits with the group alive: its
    TCPStore (rank 0 hosts it) or its gloo pairs vanish under the other rank,
    which then aborts at exit after training finished (issue 40: rank 1 failed
    1 run in 14). The barrier makes both ranks reach the teardown with nothing
    in flight; ``destroy_process_group`` closes the group in order.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main(Path(sys.argv[1]), naive_logging="--naive-logging" in sys.argv[2:])
    finally:
        close_process_group()
