"""Loading the recorded conformance calls (``data/``) with their encodings decoded."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def conformance_dir() -> Path:
    """The recorded calls, kept in ``data/`` beside this file (``data/README.md`` describes them).

    Kept in the repository so the replay runs from any clone; set
    TRACE_TASKS_CONFORMANCE_DIR to replay another set of records.
    """
    env = os.environ.get("TRACE_TASKS_CONFORMANCE_DIR")
    return Path(env) if env else HERE / "data"


_FLOATS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _set_path(record: dict[str, Any], path: str) -> None:
    parts = path.split("/")
    node: Any = record
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = _FLOATS[node[int(last)]]
    else:
        node[last] = _FLOATS[node[last]]


def decode_tagged(value: Any) -> Any:
    """Undo the helper records' tagged objects (``{"__tuple__": [...]}`` and friends)."""
    if isinstance(value, list):
        return [decode_tagged(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, inner),) = value.items()
            if tag == "__tuple__":
                return tuple(decode_tagged(v) for v in inner)
            if tag == "__set__":
                return {decode_tagged(v) for v in inner}
            if tag == "__complex__":
                return complex(*inner)
            if tag == "__ellipsis__":
                return Ellipsis
            if tag == "__bytes__":
                return inner.encode("latin-1")
            if tag == "__float__":
                return float(inner)
            if tag == "__dict_items__":
                return {decode_tagged(k): decode_tagged(v) for k, v in inner}
        return {k: decode_tagged(v) for k, v in value.items()}
    return value


def load(name: str) -> list[dict[str, Any]]:
    records = []
    with open(conformance_dir() / name, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            for path in record.get("nonfinite_paths", []):
                _set_path(record, path)
            records.append(record)
    return records


def load_deviations() -> dict[str, str]:
    """Record id -> the improvement (docs/contracts.md section) that explains why we differ."""
    out = {}
    with open(HERE / "deviations.tsv", encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            rid, reason = line.split("\t", 1)
            out[rid] = reason
    return out
