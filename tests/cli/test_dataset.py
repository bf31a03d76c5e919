"""The example dataset: generated deterministically, valid, and covering every type."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter

from tests.cli.helpers import COMBINED, DATA, INSTANCES, RESPONSES, read_jsonl
from trace_tasks.plugins import BUILTIN_ANSWER_TYPES, OFFICIAL_TYPES


def _generator():  # examples/ is not a package: load the script by path
    spec = importlib.util.spec_from_file_location("make_dataset", DATA / "make_dataset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_files_are_what_the_generator_writes() -> None:
    instances, responses = _generator().build()
    assert read_jsonl(INSTANCES) == json.loads(json.dumps(instances))
    assert read_jsonl(RESPONSES) == json.loads(json.dumps(responses))
    by_id = {row["id"]: row for row in read_jsonl(INSTANCES)}
    assert read_jsonl(COMBINED) == [{**by_id[r["id"]], "response": r["response"]} for r in read_jsonl(RESPONSES)]


def test_coverage_of_types_and_qualities() -> None:
    instances = read_jsonl(INSTANCES)
    types = Counter(row["annotation_gt"]["type"] for row in instances)
    assert set(types) == set(OFFICIAL_TYPES) and len(types) == 12
    assert set(types.values()) == {3}
    assert {row["answer_gt"]["type"] for row in instances} == {spec.name for spec in BUILTIN_ANSWER_TYPES}
    qualities = Counter(row["quality"] for row in read_jsonl(RESPONSES))
    assert qualities == {"good": 36, "partial": 36, "malformed": 18, "hostile": 18}
