"""Validation and the instance cache survive caller values nested 50,000 deep under a raised recursion limit
(issue 37, item 4).

The scorer already refused such answers (``MAX_ANSWER_DEPTH``), but validation
first keyed the answer and the contract by their pickle to remember its checks
(``data/_keys.content_key``), and the instance cache keys whole instances the
same way. The C pickler recurses once per level, bounded only by the
interpreter's recursion limit: with the limit raised, a 50,000-deep answer
overflowed the C stack (SIGSEGV) before any check could name it. Under a
raised limit a value is now walked first, iteratively; one nested deeper than
``MAX_JSON_DEPTH`` has no key, and the checks refuse it as the scorer does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from trace_tasks.data._keys import content_key
from trace_tasks.limits import MAX_JSON_DEPTH


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture
def raised_recursion_limit() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20 * MAX_JSON_DEPTH)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.usefixtures("raised_recursion_limit")
def test_under_a_raised_limit_only_plain_shallow_values_are_keyed() -> None:
    # From Python 3.12 the C pickler recurses under the interpreter's own C recursion bound, whatever
    # sys.setrecursionlimit says, and refuses a value this deep: it then has no key (it is checked every
    # time, never cached), which is all a key's absence means. Python 3.11's pickler follows the raised limit.
    at_the_limit = content_key(_deep(MAX_JSON_DEPTH))
    assert (
        (at_the_limit is not None) if sys.version_info < (3, 12) else (at_the_limit in (None, content_key(_deep(MAX_JSON_DEPTH))))
    )
    assert content_key(_deep(MAX_JSON_DEPTH + 2)) is None
    assert content_key({"a": {"b": _deep(MAX_JSON_DEPTH + 2)}}) is None
    assert content_key({(1, (2, (3,))): 2}) is not None  # tuple keys are walked too
    assert content_key({"m": np.zeros((3, 3))}) is not None
    # What the pickler reaches through __reduce__ cannot be measured from outside: no key.
    assert content_key({"a": np.array([object()], dtype=object)}) is None
    # The keys themselves do not change.
    value = {"answer_gt": {"type": "integer", "value": 7}, "metadata": {"width": 640}}
    key = content_key(value)
    sys.setrecursionlimit(1000)
    assert content_key(value) == key


def test_under_the_default_limit_nothing_changes() -> None:
    assert sys.getrecursionlimit() <= MAX_JSON_DEPTH  # pytest's default; the pickler's own check holds here
    assert content_key({"a": np.array([1], dtype=object)}) is not None


@pytest.mark.slow
def test_deep_caller_values_do_not_crash_validation_or_the_cache() -> None:
    # In a child process: a crash there is SIGSEGV, exit -11.
    script = textwrap.dedent(
        """
        import sys
        sys.setrecursionlimit(200_000)
        from trace_tasks.data import InstanceCache, compile_instance, instance_problems, instance_warnings, score_instance
        from trace_tasks.errors import InstanceError

        deep = []
        for _ in range(50_000):
            deep = [deep]

        def instance(answer_type="index_list", answer=(1,), contract_answer=None, metadata=None):
            row = {
                "id": "r1",
                "answer_gt": {"type": answer_type, "value": list(answer) if isinstance(answer, tuple) else answer},
                "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
                "reward_contract": {
                    "reward_contract_version": "v0",
                    "answer": contract_answer or {"id": "answer_exact_match_v0", "type": answer_type},
                    "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
                },
            }
            if metadata is not None:
                row["metadata"] = metadata
            return row

        rows = {
            "index_list": instance(answer=deep),
            "matrix": instance("matrix", {"a": deep}),
            "string": instance("string", {"a": deep}),
            "contract": instance(contract_answer={"id": "answer_exact_match_v0", "type": "index_list", "x": deep}),
            "metadata": instance(metadata={"notes": deep}),
        }
        cache = InstanceCache()
        for name, row in rows.items():
            problems = [p.path + ": " + p.message for p in instance_problems(row)]
            instance_warnings(row)
            try:
                compile_instance(row)
                compiled = "ok"
            except InstanceError:
                compiled = "refused"
            try:
                cache.compile(row)
                cached = "ok"
            except InstanceError:
                cached = "refused"
            try:
                reward = score_instance(row, '{"answer": [1], "annotation": [0, 0, 10, 10]}')["answer_reward"]
            except InstanceError:
                reward = "refused"
            print(name, compiled, cached, reward, " | ".join(problems))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()}
    assert lines["index_list"].startswith(
        "refused refused refused $.answer_gt.value: an index_list answer is nested more than 256"
    )
    assert lines["matrix"].startswith("refused refused refused $.answer_gt.value: a matrix answer is nested more than 256")
    assert lines["string"].startswith("refused refused refused $.answer_gt.value: a string answer must be a non-empty string")
    # A deep extra key of the contract or deep metadata does not matter to scoring: valid, scored.
    assert lines["contract"] == "ok ok 1.0 "
    assert lines["metadata"] == "ok ok 1.0 "
