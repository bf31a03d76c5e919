"""The optional msgspec decoder reads every text to what the standard library reads.

``trace-core[fast]`` installs msgspec, which ``literals.load_json`` tries first;
whatever it refuses goes to ``json``. Scores must not depend on which is
installed, so both decoders are run here on generated JSON (integers past 64
bits, extreme floats, escapes, duplicate keys, odd whitespace), on broken JSON
and on the edge cases where the two libraries disagree, and the whole scorer is
run both ways on the benchmark workload.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trace_tasks.reading._literals as literals
from trace_tasks import score_trace_response

from ..support.benchmarks import import_benchmark

pytest.importorskip("msgspec", reason="the optional msgspec decoder (the 'fast' extra) is not installed")

FAST = literals._make_json_loads(fast=True)
STDLIB = literals._make_json_loads(fast=False)


def _outcome(loads: Any, text: str) -> tuple[str, str]:
    try:
        value = loads(text)
    except Exception as exc:
        return "error", type(exc).__name__
    return "ok", repr(value) + repr(type(value))  # repr: -0.0, NaN and int-vs-float all show


def test_the_fast_decoder_is_in_use() -> None:
    assert literals.JSON_DECODER == "msgspec"
    assert FAST is not STDLIB


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63 - 3, max_value=2**64 + 3),
    st.integers(min_value=-(2**64), max_value=-(2**63) + 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e300, max_value=1.7e308),
    st.text(),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=16
)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, compact=st.booleans(), ascii_only=st.booleans(), pad=st.sampled_from(["", " ", "\n", "\t \r\n"]))
def test_generated_json_reads_alike(value: Any, compact: bool, ascii_only: bool, pad: str) -> None:
    text = pad + json.dumps(value, separators=(",", ":") if compact else (", ", ": "), ensure_ascii=ascii_only) + pad
    assert _outcome(FAST, text) == _outcome(STDLIB, text)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, cut=st.integers(min_value=0, max_value=200), junk=st.text(max_size=3))
def test_broken_json_reads_alike(value: Any, cut: int, junk: str) -> None:
    text = json.dumps(value)
    cut = min(cut, len(text))
    text = text[:cut] + junk + text[cut:]
    assert _outcome(FAST, text) == _outcome(STDLIB, text)


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "[Infinity, -Infinity]",
        "1e400",
        "-1e400",
        "1" + "0" * 400 + ".5",
        "1.5e-400",
        "123456789012345678901234567890",
        "-9223372036854775809",
        "18446744073709551616",
        "-0",
        "-0.0",
        "0e99999",
        '{"a": 1, "b": 2, "a": 3}',
        '"\\ud800"',
        '"\ud800"',  # a lone surrogate in the text itself
        '"a\nb"',
        "\ufeff{}",
        '{"answer": 1} x',
        "[1, 2,]",
        "",
        " ",
        '"\\u0000"',
        "2.2250738585072011e-308",
        "4.9e-324",
    ],
)
def test_edge_cases_read_alike(text: str) -> None:
    assert _outcome(FAST, text) == _outcome(STDLIB, text)
    # reading's decode_json (the reward server's label texts): json.loads' values and errors
    assert _outcome(literals.decode_json, text) == _outcome(json.loads, text)


def test_scores_do_not_depend_on_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    items = import_benchmark("workload").make_batch(240, seed=11)
    fast = [score_trace_response(**item) for item in items]
    monkeypatch.setattr(literals, "_json_loads", STDLIB)
    stdlib = [score_trace_response(**item) for item in items]
    assert repr(fast) == repr(stdlib)
