"""Running the real ``trace-tasks`` command in a subprocess, and small file builders."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from trace_tasks import resolve_reward_contract

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
INSTANCES = DATA / "instances.jsonl"
RESPONSES = DATA / "responses.jsonl"
COMBINED = DATA / "combined.jsonl"


def run_cli(*args: str, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """``python -m trace_tasks.cli ARGS`` with stdout and stderr captured (bytes)."""
    return subprocess.run(
        [sys.executable, "-m", "trace_tasks.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def instance(
    id: str, answer: Any = 2, annotation_type: str = "bbox", value: Any = (0, 0, 10, 10), answer_type: str = "integer", **extra: Any
) -> dict[str, Any]:
    """An instance dict whose contract comes from the resolver."""
    contract = resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()
    return {
        "id": id,
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": annotation_type, "value": list(value) if isinstance(value, tuple) else value},
        "reward_contract": contract,
        **extra,
    }


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Write rows (dicts are JSON-encoded, strings written as they are) one per line."""
    text = "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def read_jsonl(data: bytes | str | Path) -> list[dict[str, Any]]:
    if isinstance(data, Path):
        data = gzip.open(data).read() if data.suffix == ".gz" else data.read_bytes()
    text = data.decode() if isinstance(data, bytes) else data
    return [json.loads(line) for line in text.splitlines()]


def count_lines(path: Path) -> int:
    return len(path.read_bytes().splitlines())
