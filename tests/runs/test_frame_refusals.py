"""A declared frame an instance cannot be scored in is refused by every run, as ``score_trace_response`` refuses it.

``trace-tasks score --prediction-frame`` (and ``trace_tasks.runs``) scored such an instance as if the model had
written nothing (``annotation_reward`` 0, exit 0); docs/cli.md says it is refused, naming the frame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import run_cli
from trace_tasks import resolve_reward_contract, score_trace_batch, score_trace_response
from trace_tasks.errors import OptionError
from trace_tasks.runs._metrics import score_batch_with_metrics

CONTRACT = resolve_reward_contract(answer_type=None, annotation_type="bbox").to_dict()
RESPONSE = json.dumps({"annotation": [156, 185, 365, 556]})


def _row(row_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": row_id,
        "answer_gt": None,
        "annotation_gt": {"type": "bbox", "value": [300, 200, 700, 600]},
        "reward_contract": CONTRACT,
        "response": RESPONSE,
        **extra,
    }


ROWS = [_row("sized", image_size=[1920, 1080]), _row("no size"), _row("too wide", image_size=[2010, 10])]
#: What each row's refusal names, per frame (None: scored).
REFUSED = {
    "rel1000": {"sized": None, "no size": "needs the image size", "too wide": None},
    "resized": {"sized": None, "no size": "needs the image size", "too wide": "aspect ratio 201"},
}


def _scored(row: dict[str, Any], frame: str) -> dict[str, float] | str:
    """``score_trace_response``'s result for the row, or its refusal's message."""
    kwargs = {k: v for k, v in row.items() if k != "id"}
    try:
        return score_trace_response(trace_reward_mode="annotation_only", prediction_frame=frame, **kwargs)
    except OptionError as exc:
        return str(exc)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("frame", sorted(REFUSED))
def test_score_refuses_the_rows_score_trace_response_refuses(tmp_path: Path, frame: str, workers: str) -> None:
    source, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    done = run_cli(
        "score", str(source), "-o", str(out), "--mode", "annotation_only", "--prediction-frame", frame, "--workers", workers
    )
    got = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert done.returncode == (1 if any(REFUSED[frame].values()) else 0)
    for row in ROWS:
        want, scored = REFUSED[frame][row["id"]], _scored(row, frame)
        if want is None:
            assert isinstance(scored, dict) and "error" not in got[row["id"]]
            assert got[row["id"]]["annotation_reward"] == scored["annotation_reward"]
        else:
            assert isinstance(scored, str) and want in scored
            assert want in got[row["id"]]["error"] and "annotation_reward" not in got[row["id"]]
    assert got["sized"]["annotation_reward"] > 0  # the frame was applied: the rel1000 / resized box overlaps


@pytest.mark.parametrize("frame", sorted(REFUSED))
def test_the_batch_and_the_metrics_path_refuse_them_too(frame: str) -> None:
    items = [{k: v for k, v in row.items() if k != "id"} for row in ROWS]
    options = {"trace_reward_mode": "annotation_only", "prediction_frame": frame}
    for got in (score_trace_batch(items, **options), score_batch_with_metrics(items, **options)):
        for row, result in zip(ROWS, got, strict=True):
            want = REFUSED[frame][row["id"]]
            assert ("error" in result) == (want is not None), (row["id"], result)
            if want is not None:
                assert want in result["error"]
