"""The native common path gives exactly the pure pipeline's results (issue 41).

In the native build (``.ci/compiled``), :func:`trace_tasks.scoring._pipeline.run` first asks
``trace_tasks.scoring._native.score`` and keeps the Python steps for whatever it declines.
``_pipeline._native_score = None`` forces the pure pipeline; every result dict must then be the
same, key for key, in order and bit for bit, on the benchmark workloads, the conformance replay,
the hostile corpus and a fuzz aimed at the native path's edges (corners swapped, zero areas,
-0.0, huge and non-finite numbers, near ties, one flat box given as a set, sizes around the
matrix thresholds). In the pure build the module does not exist, so the comparisons have nothing
to compare and say so; the plan the pipeline derives from a family's declaration is tested in both.
"""

from __future__ import annotations

import copy
import json
import math
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trace_tasks import compile_instance, score_trace_response, scoring
from trace_tasks.plugins import get_registry
from trace_tasks.scoring import _pipeline
from trace_tasks.scoring._options import DEFAULT_OPTIONS

from ..conformance.records import load
from ..hostile.helpers import contract
from ..hostile.test_corpus import CASES
from ..support.benchmarks import import_benchmark

NATIVE = _pipeline._native_score is not None
needs_native = pytest.mark.skipif(
    not NATIVE, reason="the pure build has no native module; .ci/compiled runs these against the native build"
)


@contextmanager
def pure_path() -> Iterator[None]:
    """The Python steps alone: neither the native common path, nor the native preparation of ground truth, nor the
    native parse of the kernels' values (``make_parser``)."""
    saved = _pipeline._native_score, _pipeline._native_prepare, _pipeline._native_parse
    _pipeline._native_score = _pipeline._native_prepare = _pipeline._native_parse = None
    try:
        yield
    finally:
        _pipeline._native_score, _pipeline._native_prepare, _pipeline._native_parse = saved


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:  # a caller mistake: the same class either way
        return type(exc)


def _bits(value: Any) -> Any:
    return struct.pack("<d", value) if type(value) is float else value


def _identical(a: Any, b: Any) -> bool:
    """The same result: dicts with the same keys in the same order and the same bits of every float."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_bits(x) == _bits(y) for x, y in zip(a.values(), b.values(), strict=True))
    return bool(a == b)


def _both(call: Callable[[], Any]) -> tuple[Any, Any]:
    native = _outcome(call)
    with pure_path():
        pure = _outcome(call)
    return native, pure


# --- the plan, in every build --------------------------------------------------------------------


def test_the_box_family_declares_its_kernel_and_others_keep_python() -> None:
    registry = get_registry()
    plans = {rid: _pipeline._native_plan(entry) for rid, entry in registry.reward_ids.items()}
    assert plans["bbox_soft_iou_v0"] == (0, 0, "annotation_assigned_iou_mean", "")
    assert plans["bbox_set_soft_iou_v0"] == (1, 0, "annotation_assigned_iou_mean", "")
    half = "annotation_point_half_life_px"
    assert plans["point_soft_distance_v0"] == (0, 1, "annotation_assigned_similarity_mean", half)
    assert plans["point_set_soft_distance_v0"] == (1, 1, "annotation_assigned_similarity_mean", half)
    assert plans["segment_soft_distance_v0"] == (0, 2, "annotation_assigned_similarity_mean", half)
    assert plans["segment_set_soft_distance_v0"] == (1, 2, "annotation_assigned_similarity_mean", half)
    assert plans["bbox_sequence_soft_iou_v0"] == (2, 0, "annotation_assigned_iou_mean", "")
    assert plans["point_map_soft_distance_v0"] == (3, 1, "annotation_assigned_similarity_mean", half)
    assert plans["bbox_set_map_soft_iou_v0"] == (4, 0, "annotation_assigned_iou_mean", "")
    assert plans["point_set_map_soft_distance_v0"] == (4, 1, "annotation_assigned_similarity_mean", half)
    official = {
        f"{family}{shape}" for family in ("bbox", "point", "segment") for shape in ("", "_set", "_sequence", "_map", "_set_map")
    }
    assert all(plan[0] == -1 for rid, plan in plans.items() if registry.reward_ids[rid].annotation_type not in official)


def test_an_overridden_score_hook_is_never_bypassed() -> None:
    from trace_plugins_bbox.plugin import BOX
    from trace_tasks.family import ShapeFamily

    class Mine(ShapeFamily):
        def trace_score_annotation(self, reward_id: str, prediction: Any, target: Any, context: Any) -> Any:
            return None

    family = Mine(BOX, {"bbox": ("scalar", "bbox_soft_iou_v0")})
    assert family.native_plan("bbox_soft_iou_v0", family.trace_score_annotation) is None
    plain = ShapeFamily(BOX, {"bbox": ("scalar", "bbox_soft_iou_v0")})
    assert plain.native_plan("bbox_soft_iou_v0", plain.trace_score_annotation) == (
        "scalar",
        "iou",
        "annotation_assigned_iou_mean",
        "",
    )
    assert plain.native_plan("bbox_soft_iou_v0", family.trace_score_annotation) is None  # another object's hook
    plain.scorers["bbox_soft_iou_v0"] = plain.scorers["bbox_soft_iou_v0"]  # the same scorer: still native
    assert plain.native_plan("bbox_soft_iou_v0", plain.trace_score_annotation) is not None
    plain.scorers["bbox_soft_iou_v0"] = lambda *a, **k: None
    assert plain.native_plan("bbox_soft_iou_v0", plain.trace_score_annotation) is None


# --- the comparisons, in the native build -----------------------------------------------------------


def _kwargs(kind: str, target: Any, response: str, answer: Any = 7) -> dict[str, Any]:
    return {
        "response": response,
        "answer_gt": {"type": "integer" if isinstance(answer, int) else "option_letter", "value": answer},
        "annotation_gt": {"type": kind, "value": target},
        "reward_contract": contract(kind, "integer" if isinstance(answer, int) else "option_letter"),
    }


@needs_native
def test_the_native_path_scores_the_common_case() -> None:
    """Not a silent fallback: the native function itself returns the result of the frequent shapes."""
    registry = get_registry()
    opts = DEFAULT_OPTIONS
    for kind, target, prediction in (
        ("bbox", [0, 0, 10, 10], [1, 1, 10, 10]),
        ("bbox_set", [[0, 0, 10, 10], [20, 20, 30, 30]], [[21, 20, 30, 30], [0, 1, 10, 10], [5, 5, 6, 6]]),
        ("point_set", [[5, 5], [50, 5]], [[5, 6], [48, 7.5]]),
        ("segment", [[0, 0], [10, 10]], [[10, 11], [0, 0]]),
        ("bbox_sequence", [[0, 0, 10, 10]], [[1, 1, 10, 10]]),
        ("point_map", {"a": [1, 2], "b": [5, 5]}, {" a": [1, 3], "c": [0, 0]}),
        ("bbox_set_map", {"a": [[0, 0, 10, 10], [20, 20, 30, 30]], "b": []}, {"a": [[1, 1, 10, 10]], "c": [[0, 0, 1, 1]]}),
        ("bbox_set_map", {"a": "[[0, 0, 10, 10]]"}, {"a": [[1, 1, 10, 10]]}),  # a value read as text: Python's
    ):
        kw = _kwargs(kind, target, json.dumps({"answer": 7, "annotation": prediction}))
        target_ = _pipeline.prepare_target(
            kw["answer_gt"], kw["annotation_gt"], kw["reward_contract"], opts, registry, (None,) * 4
        )
        got = _pipeline._native_run(kw["response"], opts, registry, target_)
        assert (got is None) == isinstance(target.get("a") if isinstance(target, dict) else None, str), kind
        if got is not None:
            with pure_path():
                assert _identical(got, score_trace_response(**kw))


@needs_native
@pytest.mark.parametrize("shape", ["bare", "fenced", "tagged", "grpo", "grpo-compiled", "mix"])
def test_native_equals_pure_on_the_benchmark_shapes(shape: str) -> None:
    bench = import_benchmark("bench_shapes")
    workload = bench.make_workloads(400, 20261204)[shape]
    runner = bench._runner(shape, workload)
    native, pure = _both(runner)
    assert isinstance(native, list) and len(native) == bench.responses_of(shape, workload)
    assert _identical(native, pure), shape


@needs_native
def test_native_equals_pure_on_the_perception_workloads() -> None:
    bench = import_benchmark("bench_perception")
    for i, item in enumerate(bench.make_items(1500, 20261204)):  # bbox_set, as its reward comparison scores them
        fields = {k: v for k, v in item.items() if k != "response"}
        native, pure = _both(lambda item=item, fields=fields: score_trace_response(response=item["response"], **fields))
        assert _identical(native, pure), i


@needs_native
def test_native_equals_pure_on_the_conformance_replay() -> None:
    compared = 0
    for record in load("original-scorer.jsonl"):
        kwargs = {
            k: v
            for k, v in record["kwargs"].items()
            if k not in ("trace_answer_scoring", "legacy_strict_scorer", "bbox_iou_threshold")
        }
        native, pure = _both(lambda kwargs=kwargs: score_trace_response(**kwargs))
        assert _identical(native, pure), record["id"]
        compared += 1
    assert compared >= 300


@needs_native
def test_native_equals_pure_on_the_hostile_corpus() -> None:
    for case in CASES:
        instance = {"answer": 7, "answer_type": "integer", "annotation_type": "bbox", "annotation": [0, 0, 10, 10]}
        instance.update(case.instance)
        kwargs = {
            "response": case.response,
            "answer_gt": {"type": instance["answer_type"], "value": instance["answer"]},
            "annotation_gt": {"type": instance["annotation_type"], "value": instance["annotation"]},
            "reward_contract": contract(instance["annotation_type"], instance["answer_type"]),
            **{k: v for k, v in instance.items() if k not in ("answer", "answer_type", "annotation_type", "annotation")},
        }
        native, pure = _both(lambda kwargs=kwargs: score_trace_response(**kwargs))
        assert _identical(native, pure), case.name


# The fuzz: numbers where the IoU's comparisons and roundings turn, written as JSON text.
_EDGE_NUMBERS = ["0", "-0.0", "1e308", "-1e308", "1e999", "NaN", "Infinity", "10", "10.0", "9.999999999999998",
                 "0.1", "0.30000000000000004", str(10**400), "true", "null", '"5"', "5e-324", "1"]  # fmt: skip
_number = st.one_of(
    st.integers(-5, 40).map(str),
    st.floats(-5, 40, allow_nan=False).map(repr),
    st.sampled_from(_EDGE_NUMBERS),
)


def _listed(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


_coords = {width: st.lists(_number, min_size=width, max_size=width).map(_listed) for width in (2, 4)}
_segment = st.tuples(_coords[2], _coords[2]).map(lambda ends: _listed(list(ends)))
ITEMS = {"bbox": _coords[4], "point": _coords[2], "segment": _segment}
_odd = st.one_of(
    st.lists(_number, min_size=1, max_size=5).map(_listed),
    st.sampled_from(['"[0, 0, 5, 5]"', "[[0, 0], [5, 5], [1, 1]]", "[[0, 0, 5, 5]]", "[]", "5", '{"x": 1}']),
)


def _predictions(family: str) -> st.SearchStrategy[str]:
    item = ITEMS[family]
    return st.one_of(
        item,  # one item (alone: promoted to a one-item set for boxes and points)
        st.lists(item, max_size=9).map(_listed),
        st.lists(item, min_size=30, max_size=70).map(_listed),  # past the numpy matrix crossovers
        st.lists(st.one_of(item, _odd), max_size=4).map(_listed),
        _odd,
        st.just('{"bboxes": [[0, 0, 5, 5]]}'),
        st.just("null"),
    )


_target_items = {
    "bbox": st.lists(st.integers(-3, 30), min_size=4, max_size=4),
    "point": st.lists(st.integers(-3, 30), min_size=2, max_size=2),
    "segment": st.lists(st.lists(st.integers(-3, 30), min_size=2, max_size=2), min_size=2, max_size=2),
}
_answers = st.sampled_from(["7", "8", '"7"', '"B"', '" b "', '"[1]"', "7.0", "true", "null", "[7]", '{"a": 7}', "-0.0"])
_keys = st.sampled_from(["a", "b", " a", "a ", "", " ", "A", "left", "\u00a0b", "c"])


def _map_predictions(family: str) -> st.SearchStrategy[str]:
    item = st.one_of(ITEMS[family], _odd)
    entries = st.lists(st.tuples(_keys, item), max_size=6)
    return st.one_of(
        entries.map(lambda pairs: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"),
        _predictions(family),
    )


def _set_map_predictions(family: str) -> st.SearchStrategy[str]:
    entries = st.lists(st.tuples(_keys, _predictions(family)), max_size=4)
    return st.one_of(
        entries.map(lambda pairs: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"),
        _predictions(family),
    )


_prefixes = st.sampled_from(
    [
        "",
        "Thinking.\n",
        "<think>x</think>\n",
        "```json\n",
        "```JSON \n",
        "```jsonc\n",
        "```json_x\n",
        "```Json",
        "```\n",
        "``` \n\n",
        '{"answer": 1}\n',
        "<answer>",
        # Reasoning that recovery reads past: a stray quote (hides what follows), braces, an earlier
        # fenced block, tag pair or escape.
        'label " the\n',
        "a {note} then { open\n",
        '```json\n{"answer": 2}\n```\n',
        '<answer>{"answer": 5}</answer>\n',
        '{"answer": "a\\"b"}\n',
    ]
)
_suffixes = st.sampled_from(
    ["", "\n", "  \n\t", "\n```", "```", "\n````", " Done.", "</answer>", ' "', " {", " }", "\n<answer>B</answer>"]
)
#: Scorer options: those the native path serves (any mode, formula, weights, half-life, the answer-tag and
#: tolerance switches) and those that keep the Python steps (a recovery policy, a frame, native reading).
_options = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "trace_reward_mode": st.sampled_from(["answer", "answer_and_annotation", "annotation_only"]),
            "trace_annotation_reward_formula": st.sampled_from(["gated", "additive"]),
            "answer_weight": st.sampled_from([0.5, 1, 0.3, 2.5]),
            "annotation_weight": st.sampled_from([0.5, 0.7, 1e-3]),
            "format_weight": st.sampled_from([0.0, 0.1, 0.5, 1.0]),
            "point_half_life_px": st.sampled_from([None, 1.0, 7.5, 1e-6]),
            "format_accept_answer_tag": st.booleans(),
            "answer_relative_tolerance": st.sampled_from([0.05, 0.0]),
            # A declared frame: the native path restates the official families' conversion.
            "prediction_frame": st.sampled_from(["pixel", "rel1000", "rel999", "rel1", "resized", "rel1000_yx"]),
            "model_image_size": st.sampled_from([[1000, 700], [28, 56]]),
        },
    ),
    st.sampled_from(
        [
            {"trace_recovery": "outside_think"},
            {"trace_recovery": "final_only"},
            {"prediction_frame": "rel1000"},  # no image size: refused before any response, in both builds
            {"annotation_native": True},
        ]
    ),
)


@st.composite
def _cases(draw: st.DrawFn) -> dict[str, Any]:
    family = draw(st.sampled_from(["bbox", "point", "segment"]))
    kind = family + draw(st.sampled_from(["", "_set", "_sequence", "_map", "_set_map"] if family != "segment" else ["", "_set"]))
    targets: Any = draw(st.lists(_target_items[family], min_size=kind == family, max_size=8))
    if kind.endswith("_set_map"):  # a few keys, each a set (a key may hold none)
        sets = [targets[i::3] for i in range(draw(st.integers(0, 3)))]
        targets = dict(zip(draw(st.lists(_keys, min_size=len(sets), max_size=len(sets), unique=True)), sets, strict=True))
    elif kind.endswith("_map"):
        targets = dict(
            zip(draw(st.lists(_keys, min_size=len(targets), max_size=len(targets), unique=True)), targets, strict=True)
        )
    keys = draw(
        st.sampled_from(["both", "answer", "extra", "annotation", "pretty", "reversed", "literal", "twice", "neither", "none"])
    )
    answer = draw(_answers)
    if kind.endswith("_set_map"):
        prediction = draw(_set_map_predictions(family))
    else:
        prediction = draw(_map_predictions(family) if kind.endswith("_map") else _predictions(family))
    body = {
        "both": f'{{"answer": {answer}, "annotation": {prediction}}}',
        "answer": f'{{"answer": {answer}}}',
        "extra": f'{{"answer": {answer}, "annotation": {prediction}, "note": 1}}',
        "annotation": f'{{"annotation": {prediction}}}',
        "pretty": f'{{\n  "answer": {answer},\n  "annotation": {prediction}\n}}',
        "reversed": f'{{"annotation": {prediction}, "answer": {answer}}}',
        "literal": f"{{'answer': {answer}, 'annotation': {prediction}}}",  # a Python literal: recovery reads it
        "twice": f'{{"answer": 3}} then {{"answer": {answer}, "annotation": {prediction}}} and {{"note": "{{"}}',
        # A final object holding neither key (recovered past), and no object at all (the atomic answer).
        "neither": f'{{"answer": {answer}, "annotation": {prediction}}}\n{{"note": {answer}}}',
        "none": f"The answer is {answer}.",
    }[keys]
    kw = _kwargs(
        kind, targets[0] if kind == family else targets, draw(_prefixes) + body + draw(_suffixes), draw(st.sampled_from([7, "B"]))
    )
    size = draw(st.sampled_from([None, [640, 480], [1, 1]]))
    if size is not None:
        kw["image_size"] = size
    kw.update(draw(_options))
    return kw


@needs_native
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kw=_cases())
def test_native_equals_pure_on_fuzzed_responses(kw: dict[str, Any]) -> None:
    native, pure = _both(lambda: score_trace_response(**kw))
    assert _identical(native, pure), kw
    record = {k: kw[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    if "image_size" in kw:
        record["image_size"] = kw["image_size"]
    options = {k: v for k, v in kw.items() if k not in (*record, "response")}
    compiled = _outcome(lambda: compile_instance(record))
    if not isinstance(compiled, type):
        native, pure = _both(lambda: compiled.score(kw["response"], **options))
        assert _identical(native, pure), kw


@needs_native
def test_near_ties_choose_the_pure_pipelines_pairs() -> None:
    """Assignments whose totals tie up to rounding: the native rows in np.lexsort's order give scipy the same problem."""
    rows = [[0, 0, 10, 10], [0, 0, 10, 10.000000000000002], [0.1, 0, 10, 10], [0, 0.30000000000000004, 10, 10]]
    for shift in range(4):
        prediction = rows[shift:] + rows[:shift]
        kw = _kwargs(
            "bbox_set", [[0, 0, 10, 10], [0, 0, 10, 10.1], [0.2, 0, 10, 10]], json.dumps({"answer": 7, "annotation": prediction})
        )
        native, pure = _both(lambda kw=kw: score_trace_response(**kw))
        assert _identical(native, pure)
        assert math.isfinite(native["annotation_reward"])


@needs_native
def test_the_restated_solver_chooses_scipys_pairs() -> None:
    """The native path's assignment restates scipy's solver (1.14-1.18): the same pairs, ties and tall matrices included."""
    import random

    import numpy as np
    import scipy
    from scipy.optimize import linear_sum_assignment

    from trace_tasks.scoring import _native  # type: ignore[attr-defined]

    assert _native.scipy_restated("1.17.1") and _native.scipy_restated("1.14.0") and not _native.scipy_restated("1.19.0")
    if not _native.scipy_restated(scipy.__version__):
        pytest.skip(f"the native path calls scipy {scipy.__version__}'s own solver (it restates releases 1.14-1.18)")
    rng = random.Random(20261204)
    for trial in range(3000):
        rows, cols = rng.randint(1, 9), rng.randint(1, 9)
        values = [0.0, 0.25, 0.5, 1.0, 0.1 + 0.2, 0.3] if trial % 2 else None  # heavy ties, or continuous values
        matrix = [[rng.choice(values) if values else rng.random() for _ in range(cols)] for _ in range(rows)]
        expected = linear_sum_assignment(np.array(matrix), maximize=True)
        assert _native.assign(matrix) == (expected[0].tolist(), expected[1].tolist()), matrix


@needs_native
def test_the_native_distance_is_math_hypot() -> None:
    """The kernels' distance is math.hypot's value bit for bit: typical pixels, integers, every exponent, ties."""
    import random

    from trace_tasks.scoring import _native  # type: ignore[attr-defined]

    rng = random.Random(20261204)
    specials = [0.0, -0.0, 1e308, -1e308, 5e-324, 1e-310, 2.2250738585072014e-308, math.inf, -math.inf, math.nan, 3.0]
    for i in range(300_000):
        kind = i % 6
        if kind == 0:
            x, y = rng.uniform(-2000, 2000), rng.uniform(-2000, 2000)
        elif kind == 1:
            x, y = float(rng.randint(-3000, 3000)), float(rng.randint(-3000, 3000))
        elif kind == 2:
            x, y = (rng.uniform(-1, 1) * 10 ** rng.randint(-320, 308) for _ in range(2))
        elif kind == 3:
            x, y = rng.uniform(-1e-3, 1e-3), rng.uniform(-1e3, 1e3)
        elif kind == 4:
            x, y = rng.choice(specials), rng.choice([*specials, rng.uniform(-10, 10)])
        else:
            x = rng.uniform(-100, 100)
            y = x * rng.choice([1, -1, 1 + 1e-15, 0.5])
        got, expected = _native.hypot(x, y), math.hypot(x, y)
        assert _bits(got) == _bits(expected) or (math.isnan(got) and math.isnan(expected)), (x, y, got, expected)


#: Texts recovery has to read with care: braces, quotes, escapes, fences and tags around the keys.
_recovery_texts = st.lists(
    st.sampled_from(
        [
            *("{", "}", '"', "\\", "\\\\", "a", " ", "\n", "```", "```json\n", "<answer>", "</answer>", '"answer"', ": 1", ","),
            *('{"answer": 1}', '{"annotation": [1, 2]}', "{'answer': 2}", '{"note": 3}', "é", "🙂"),
        ]
    ),
    max_size=24,
).map("".join)


@needs_native
@settings(max_examples=3000, deadline=None)
@given(text=_recovery_texts)
def test_the_native_recovery_reads_what_the_pipeline_reads(text: str) -> None:
    """The native scan finds reading's top-level objects, and its recovery the payload reading recovers (or defers)."""
    from trace_tasks.reading._extraction import _Parser, recover_payload, top_level_objects
    from trace_tasks.scoring import _native  # type: ignore[attr-defined]

    assert _native.top_level_objects(text) == top_level_objects(text)
    found = _native.recovered(text)
    if found is not None:  # None: the pipeline looks (a literal, the whole response)
        payload, _ = recover_payload(text, _Parser())
        if found is _native.NOTHING:
            assert payload is None
        else:
            assert type(payload) is dict and json.dumps(found) == json.dumps(payload)


#: Answers as a JSON decoder gives them, with the near misses the canonical form must tell apart or join.
_json_answers = st.recursive(
    st.one_of(
        st.integers(-3, 3),
        st.sampled_from([True, False, None, 1.0, -0.0, 0.5, 2.0, 1e16, 1e300, math.inf, -math.inf, math.nan, 10**20]),
        st.sampled_from(["a", "A", " a ", "b", "", "1", "[1]", "true", "ß", "SS", "\u00a0a"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "A", " a", "b", "1", "ß", "ss"]), inner, max_size=3),
    ),
    max_leaves=8,
)


@needs_native
@settings(max_examples=3000, deadline=None)
@given(prediction=_json_answers, target=_json_answers, reads_json=st.booleans())
def test_the_native_answer_comparison_is_the_pipelines(prediction: Any, target: Any, reads_json: bool) -> None:
    """In C, answer_exact_match_v0 on JSON's own values agrees with matches_answer_target (or defers to it)."""
    from trace_tasks.scoring import _native  # type: ignore[attr-defined]
    from trace_tasks.scoring._answers import answer_target, matches_answer_target

    if isinstance(prediction, str) and reads_json:
        return  # a string that may be JSON is read first: the native path leaves it to the pipeline's function
    for prepared in (answer_target(target, reads_json_strings=reads_json), answer_target(prediction)):
        expected = matches_answer_target(prediction, prepared, reads_json_strings=reads_json)
        found = _native.same(prediction, prepared)
        assert found == -1 or (found == 1) == expected, (prediction, prepared)
        if not isinstance(prediction, str) and "{" not in repr(prediction):  # it defers only colliding keys then
            assert found != -1, (prediction, prepared)


class _Text(str):
    """A str subclass: the native preparation leaves it to the pipeline."""


_gt_types = st.sampled_from(["integer", " string ", "option_letter", "number", "boolean", "matrix", "nope", 7, None])
_answer_gts = st.one_of(
    st.fixed_dictionaries({"type": _gt_types, "value": _json_answers}),
    st.fixed_dictionaries({"type": _gt_types}),
    st.sampled_from([None, [], "7", {"type": _Text("integer"), "value": 7}, {"value": "[1, 2]"}, {"value": " {"}]),
)
_annotation_gts = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["bbox", " point ", "segment_set", "nope", 3, _Text("bbox")]), "value": st.just([1, 2, 3, 4])}
    ),
    st.sampled_from([None, {"type": "bbox"}, {"value": [1, 2]}, "bbox"]),
)
_contracts = st.fixed_dictionaries(
    {},
    optional={
        "answer": st.sampled_from([None, {"id": "answer_exact_match_v0"}, {"id": "answer_relaxed_match_v0"}, "x", {}]),
        "annotation": st.sampled_from(
            [
                {"id": "bbox_soft_iou_v0"},
                {"id": "bbox_soft_iou_v0", "type": "bbox"},
                {"id": "bbox_soft_iou_v0", "type": " bbox"},
                {"id": "bbox_soft_iou_v0", "type": "point"},
                {"id": "point_soft_distance_v0", "type": 1},
                {"id": "segment_set_soft_distance_v0"},
                None,
                "bbox",
            ]
        ),
    },
)
_TARGET_FIELDS = ("answer", "answer_parse_ok", "reads_json", "type_name", "entry", "reward", "problem", "relaxed")


#: Ground truth the contract lets be scored (the native preparation's case), each part varied.
_scorable = st.tuples(
    st.fixed_dictionaries({"type": st.sampled_from(["integer", "string", " option_letter", "matrix"]), "value": _json_answers}),
    st.just({"type": "bbox", "value": [1, 2, 3, 4]}),
    st.fixed_dictionaries(
        {"annotation": st.sampled_from([{"id": "bbox_soft_iou_v0"}, {"id": "bbox_soft_iou_v0", "type": " bbox "}])},
        optional={"answer": st.sampled_from([{"id": "answer_exact_match_v0"}, {}]), "reward_contract_version": st.just("v0")},
    ),
)


@needs_native
@settings(max_examples=3000, deadline=None)
@given(parts=st.one_of(_scorable, st.tuples(_answer_gts, _annotation_gts, _contracts)), size=st.sampled_from([None, [640, 480]]))
def test_the_native_preparation_is_the_pipelines(parts: tuple[Any, Any, Any], size: Any) -> None:
    """The native preparation of raw ground truth gives the pipeline's target (or leaves it to the pipeline)."""
    from trace_tasks.scoring import _native  # type: ignore[attr-defined]

    answer_gt, annotation_gt, contract = parts
    registry = get_registry()
    sizes = (size, None, None, None)
    native = _native.prepare(
        answer_gt, annotation_gt, contract, registry, sizes, _pipeline.Target, _pipeline._UNSEARCHED,
        _pipeline.answer_target, "answer_relaxed_match_v0",
    )  # fmt: skip
    with pure_path():
        expected = _outcome(
            lambda: _pipeline.prepare_target(answer_gt, annotation_gt, contract, DEFAULT_OPTIONS, registry, sizes)
        )
    if native is None:
        return
    assert isinstance(expected, _pipeline.Target)
    for field in _TARGET_FIELDS:
        assert repr(getattr(native, field)) == repr(getattr(expected, field)), field
    assert native._value is expected._value and native._sizes == expected._sizes and native._size is expected._size


# --- sets of REDUCE_MIN_CELLS cells and more: the grouped match (family._matching._match_grouped) ---------------


def _native_run(kw: dict[str, Any]) -> dict[str, float] | None:
    """What the native function itself returns for ``kw`` (None: it declined and the Python steps score it)."""
    registry = get_registry()
    target = _pipeline.prepare_target(
        kw["answer_gt"], kw["annotation_gt"], kw["reward_contract"], DEFAULT_OPTIONS, registry, (None,) * 4
    )
    return _pipeline._native_run(kw["response"], DEFAULT_OPTIONS, registry, target)


def _large_item(rng: Any, family: str, grid: int) -> Any:
    def number() -> float:
        return rng.randint(0, grid) if rng.random() < 0.7 else rng.uniform(0, grid)

    if family == "bbox":
        x, y = number(), number()
        return [x, y, x + rng.randint(1, 4), y + rng.randint(1, 4)]
    if family == "point":
        return [number(), number()]
    return [[number(), number()], [number(), number()]]


def _large_sets(rng: Any, family: str, n: int, m: int, copies: str) -> tuple[list[Any], list[Any]]:
    """A target of m items and a prediction of n: distinct, or copies of a few items on one side or both."""
    grid = rng.choice([3, 10, 60])  # a small grid: many equal similarities, conflicts for the same columns
    targets = [_large_item(rng, family, grid) for _ in range(m)]
    if copies in ("targets", "both"):
        few = targets[: rng.randint(1, 7)]
        targets = [json.loads(json.dumps(rng.choice(few))) for _ in range(m)]
    if rng.random() < 0.3:  # the targets themselves, shuffled, then more
        predictions = [json.loads(json.dumps(t)) for t in targets[:n]] + [_large_item(rng, family, grid) for _ in range(n - m)]
        rng.shuffle(predictions)
    else:
        predictions = [_large_item(rng, family, grid) for _ in range(n)]
    if copies in ("predictions", "both"):
        few = predictions[: rng.randint(1, 12)]
        predictions = [rng.choice(few) for _ in range(n)]
    return targets, predictions


@needs_native
def test_large_sets_are_native_and_equal_pure() -> None:
    """Sets of 4,096 cells and more (copies collapsed, the own-best shortcut, the expanded solve with and
    without dropped columns, tall and wide): the native function scores every one, as the pure pipeline does."""
    import random

    from trace_tasks.family import _assignment

    rng = random.Random(20261205)
    solved = {"expanded": 0, "dropped": 0, "compiled": 0}
    solve = _assignment._solve_expanded

    def counting(arr: Any, rows: Any, cols: Any, budget: Any) -> Any:
        solved["expanded"] += 1
        n = int(rows.sum())
        solved["dropped"] += len(rows) * n < int(cols.clip(max=n).sum())
        return solve(arr, rows, cols, budget)

    _assignment._solve_expanded = counting
    try:
        for trial in range(240):
            family = ("bbox", "point", "segment")[trial % 3]
            n, m = rng.choice([(64, 64), (100, 100), (70, 60), (130, 40), (40, 130), (8, 600), (600, 8), (2, 3000), (1, 5000)])
            copies = rng.choice(["none", "none", "predictions", "targets", "both"])
            targets, predictions = _large_sets(rng, family, n, m, copies)
            kw = _kwargs(f"{family}_set", targets, json.dumps({"answer": 7, "annotation": predictions}))
            got = _native_run(kw)
            assert got is not None, (family, n, m, copies)
            with pure_path():
                pure = score_trace_response(**kw)
            assert _identical(got, pure), (family, n, m, copies)
            # A prepared target too (validation refuses the largest: a complete answer could exceed the budget).
            compiled = _outcome(
                lambda kw=kw: compile_instance({k: kw[k] for k in ("answer_gt", "annotation_gt", "reward_contract")})
            )
            if not isinstance(compiled, type):
                native, pure = _both(lambda compiled=compiled, kw=kw: compiled.score(kw["response"]))
                assert _identical(native, pure), (family, n, m, copies)
                solved["compiled"] += 1
    finally:
        _assignment._solve_expanded = solve
    # the solver's paths were taken, not only the shortcut, and prepared targets were compared
    assert solved["expanded"] >= 20 and solved["dropped"] >= 2 and solved["compiled"] >= 100, solved


@needs_native
def test_large_set_map_keys_are_native_and_equal_pure() -> None:
    import random

    rng = random.Random(20261206)
    for trial in range(60):
        family = ("bbox", "point")[trial % 2]
        target: dict[str, Any] = {}
        prediction: dict[str, Any] = {}
        for key in ("a", "b", "c")[: rng.randint(1, 3)]:
            n, m = rng.choice([(64, 64), (80, 60), (5, 900), (3, 4)])
            target[key], prediction[key] = _large_sets(rng, family, n, m, rng.choice(["none", "predictions", "both"]))
        kw = _kwargs(f"{family}_set_map", target, json.dumps({"answer": 7, "annotation": prediction}))
        got = _native_run(kw)
        assert got is not None, trial
        with pure_path():
            assert _identical(got, score_trace_response(**kw)), trial


@needs_native
def test_large_sets_past_the_budget_stay_python() -> None:
    """Where Python's budget raises (the parse failure), the native function declines and the results agree."""
    import random

    rng = random.Random(7)

    def near(count: int) -> list[list[float]]:  # points close together: the predictions want the same targets
        return [[rng.uniform(0, 5), rng.uniform(0, 5)] for _ in range(count)]

    for targets, predictions in (
        (near(400), near(500)),  # 400 targets: the solver's 400² x 500 work is past their budget
        ([[i, 0] for i in range(1000)], [[i, 1] for i in range(1001)]),  # 1,001,000 cells: past MAX_MATRIX_CELLS
    ):
        kw = _kwargs("point_set", targets, json.dumps({"answer": 7, "annotation": predictions}))
        assert _native_run(kw) is None
        native, pure = _both(lambda kw=kw: score_trace_response(**kw))
        assert _identical(native, pure) and pure["annotation_parse_ok"] == 0.0


_grid_number = st.one_of(st.integers(0, 4).map(str), st.sampled_from(["-0.0", "0.0", "2.0", "1e308"]))  # -0.0 == 0.0: one group
_grid_point = st.lists(_grid_number, min_size=2, max_size=2).map(_listed)
_grid_box = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 2), st.integers(1, 2)).map(
    lambda t: _listed([str(t[0]), str(t[1]), str(t[0] + t[2]), str(t[1] + t[3])])
)


@needs_native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    family=st.sampled_from(["bbox", "point"]),
    data=st.data(),
)
def test_native_equals_pure_on_fuzzed_large_sets(family: str, data: st.DataObject) -> None:
    """Sets of 64 to 90 items on a tiny grid: copies, ties and conflicts everywhere, past 4,096 cells."""
    item = _grid_box if family == "bbox" else _grid_point
    targets = data.draw(st.lists(item, min_size=64, max_size=90))
    predictions = data.draw(st.lists(st.one_of(item, st.sampled_from(targets)), min_size=64, max_size=90))
    kw = _kwargs(f"{family}_set", [json.loads(t) for t in targets], '{"answer": 7, "annotation": ' + _listed(predictions) + "}")
    got = _native_run(kw)
    assert got is not None
    with pure_path():
        assert _identical(got, score_trace_response(**kw))


@needs_native
def test_the_pipelines_codes_are_the_native_modules() -> None:
    """The codes the pipeline passes are the module's constants (C enums, still importable by name)."""
    from trace_tasks.scoring import _native  # type: ignore[attr-defined]

    assert _pipeline.NATIVE_SHAPES == {
        "scalar": _native.SCALAR,
        "set": _native.SET,
        "sequence": _native.SEQUENCE,
        "map": _native.MAP,
        "set_map": _native.SET_MAP,
    }
    assert _pipeline._NATIVE_KERNELS == {
        "iou": _native.IOU,
        "soft_point": _native.SOFT_POINT,
        "soft_segment": _native.SOFT_SEGMENT,
    }
    assert list(_pipeline._NATIVE_MODES.values()) == [_native.BOTH, _native.ANSWER_ONLY, _native.ANNOTATION_ALONE]
    assert (_native.NO_REWARD, _native.UNKNOWN) == (-2, -1)
    # The label lane's (data._quick): each built-in answer type's rule, each kernel's drawing, the rule bits' order.
    assert _pipeline.NATIVE_ANSWER_RULES == {
        "integer": _native.WHOLE,
        "number": _native.REAL,
        "string": _native.TEXT,
        "option_letter": _native.LITERAL_TEXT,
        "pi_expression": _native.LITERAL_TEXT,
        "boolean": _native.TRUTH,
        "index_list": _native.INDICES,
        "matrix": _native.GRID,
    }
    assert _pipeline.NATIVE_KERNEL_DRAWINGS == {_native.IOU: "box", _native.SOFT_POINT: "point", _native.SOFT_SEGMENT: "polyline"}
    from trace_tasks.data._quick import LANE_RULES

    bits = (_native.NORMALIZED, _native.ZERO_SEGMENT, _native.DUPLICATE, _native.SINGLE_KEY, _native.EMPTY_MAP)
    bits += (_native.MISSING_SIZE, _native.CONFLICTING_SIZE)
    assert [1 << n for n in range(len(LANE_RULES))] == list(bits)


@needs_native
@pytest.mark.parametrize("frame", ["rel1000", "rel999", "rel1", "resized", "rel1000_yx"])
def test_a_declared_frame_is_converted_natively_as_the_owner_converts(frame: str) -> None:
    """Each frame, each official shape: the native function itself scores it, with the pure pipeline's result."""
    from trace_tasks.scoring._options import options_from

    registry = get_registry()
    span = {"rel1000": 1000, "rel999": 999, "rel1": 1, "rel1000_yx": 1000}.get(frame)
    scale_x, scale_y = (span / 640, span / 480) if span else (1.0, 1.0)
    box, point, segment = [100.5, 40, 300, 220.25], [320, 240.5], [[10, 20], [600, 470]]
    cases = [
        ("bbox", box, box),
        ("bbox_set", [box, [0, 0, 640, 480]], [[1, 1, 630, 479], box, [5, 5, 6, 6]]),
        ("point_set", [point, [10, 10]], [[11, 9], point]),
        ("segment_set", [segment], [segment, [[0, 0], [1, 1]]]),
        ("bbox_set_map", {"a": [box], "b": [[0, 0, 64, 48]]}, {"a": [box], "b": [[1, 1, 60, 40]], "c": [box]}),
        ("point_map", {"a": point}, {"a": [330, 250]}),
    ]
    for kind, target, written in cases:

        def scaled(value: Any) -> Any:  # the prediction as the model writes it in the frame (pixels of 640x480)
            if isinstance(value, dict):
                return {k: scaled(v) for k, v in value.items()}
            if value and isinstance(value[0], (int, float)):
                pairs = [(round(value[i] * scale_x, 3), round(value[i + 1] * scale_y, 3)) for i in range(0, len(value), 2)]
                return [c for x, y in pairs for c in ((y, x) if frame.endswith("_yx") else (x, y))]
            return [scaled(v) for v in value]

        kw = _kwargs(kind, target, json.dumps({"answer": 7, "annotation": scaled(written)}))
        kw.update(prediction_frame=frame, image_size=[640, 480], model_image_size=[640, 480])
        native, pure = _both(lambda kw=kw: score_trace_response(**kw))
        assert _identical(native, pure), (frame, kind)
        assert native["annotation_reward"] > 0.45, (frame, kind, native["annotation_reward"])  # read in pixels: near
        opts = options_from({"prediction_frame": frame})
        target_ = _pipeline.prepare_target(
            kw["answer_gt"], kw["annotation_gt"], kw["reward_contract"], opts, registry, ([640, 480], None, None, None)
        )
        target_.model_size = (640.0, 480.0)
        assert isinstance(_pipeline._native_run(kw["response"], opts, registry, target_), dict), (frame, kind)


def test_the_official_families_declare_their_frame_conversion_restated() -> None:
    """The native path converts a declared frame only for an owner whose own hook scales flat x/y items."""
    import attrs

    registry = get_registry()
    for rid in ("bbox_set_soft_iou_v0", "point_soft_distance_v0", "segment_set_soft_distance_v0", "bbox_soft_iou_v0"):
        reward = registry.reward_ids[rid]
        assert _pipeline._native_frame(reward, registry.annotation_types[reward.annotation_type]), rid
    # The same type with another conversion (a family's own hook): the Python steps convert it.
    foreign = attrs.evolve(registry.annotation_types["bbox"], frame=lambda **kw: kw["value"])
    assert not _pipeline._native_frame(registry.reward_ids["bbox_soft_iou_v0"], foreign)


# --- the native parse of the kernels' values (make_parser), on every official type ---------------------

_NUMBER = st.one_of(
    st.integers(-5, 5),
    st.integers(-(10**400), 10**400),
    st.floats(-1e3, 1e3),
    st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, True, False, None, "1"]),
)
_FLAT = st.lists(_NUMBER, min_size=1, max_size=5)  # right and wrong lengths; swapped corners, zero areas, odd numbers
_RAW_ITEM = st.one_of(
    _FLAT, st.lists(st.lists(_NUMBER, min_size=2, max_size=2), min_size=2, max_size=2), st.tuples(_NUMBER, _NUMBER)
)
_KEY = st.one_of(st.sampled_from(["a", " a", "a ", "", " ", "B", "b"]), st.integers(0, 2))
_RAW_VALUE = st.one_of(
    _RAW_ITEM,
    st.lists(_RAW_ITEM, max_size=4),
    st.dictionaries(_KEY, st.one_of(_RAW_ITEM, st.lists(_RAW_ITEM, max_size=3)), max_size=3),
    st.builds(lambda items: {"bboxes": items}, st.lists(_RAW_ITEM, max_size=2)),
    st.builds(json.dumps, st.lists(st.lists(st.integers(0, 9), min_size=4, max_size=4), max_size=2)),
)


def _parsed_outcome(name: str, value: Any) -> Any:
    """The parse hook's value (floats as their bits) or the error it raises (its class and message)."""
    entry = get_registry().annotation_types[name]
    try:
        parsed = entry.parse(annotation_type=name, value=copy.deepcopy(value))  # a parse must not change the raw value
    except Exception as exc:
        return (type(exc), str(exc))
    return json.dumps(parsed, default=repr, sort_keys=False) + repr(_float_bits(parsed))


def _float_bits(value: Any) -> Any:
    if isinstance(value, dict):
        return [(key, _float_bits(item)) for key, item in value.items()]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, *(_float_bits(item) for item in value)]
    return struct.pack("<d", value) if type(value) is float else value


@needs_native
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(get_registry().annotation_types)), value=_RAW_VALUE)
def test_the_native_parse_is_the_familys(name: str, value: Any) -> None:
    """Every official type's parse hook gives the same value (bit for bit) or the same error with and without the
    native parse: values it takes (plain lists, dicts of them) and values it leaves to Python (strings, tuples,
    wrappers, odd keys, refused items)."""
    native = _parsed_outcome(name, value)
    with pure_path():
        assert native == _parsed_outcome(name, value)


@needs_native
def test_the_native_parse_takes_the_plain_values() -> None:
    """The values of a dataset's labels are the native parse's: it answers them (it declines only the rest)."""
    registry = get_registry()
    plain = {
        "scalar": {"bbox": [3, 4, 1, 2], "point": [1.5, -0.0], "segment": [[0, 0], [1, 1]]},
        "set": {"bbox": [[0, 0, 1, 1], [2, 2, 3, 3]], "point": [[0, 0]], "segment": []},
    }
    for name, entry in registry.annotation_types.items():
        family, _, shape = name.partition("_")
        primitive_kernel = {"bbox": "iou", "point": "soft_point", "segment": "soft_segment"}[family]
        shape = shape or "scalar"
        parse = _pipeline.native_parser(primitive_kernel, shape)
        assert parse is not None, name
        item = plain["scalar"][family]
        value = {"scalar": item, "set": [item], "sequence": [item, item], "map": {" k ": item}, "set_map": {"k": [item]}}[shape]
        parsed = parse(value)
        assert parsed is not None and parsed == entry.parse(annotation_type=name, value=value), name
    assert _pipeline.native_parser("iou", "set")("[[0, 0, 1, 1]]") is None  # a string: the family reads it
    assert _pipeline.native_parser("circle", "set") is None and _pipeline.native_parser("iou", "ring") is None


def test_the_pure_build_always_needs_scipys_solver() -> None:
    with pure_path():
        assert not scoring.native_solves_assignments()


@needs_native
def test_native_solves_assignments_follows_the_installed_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy

    from trace_tasks.scoring import _native

    assert scoring.native_solves_assignments() is _native.scipy_restated(scipy.__version__)
    monkeypatch.setattr(_pipeline.importlib.metadata, "version", lambda name: "1.99.0")
    assert not scoring.native_solves_assignments()  # a release the module does not restate: scipy's own solver runs


@needs_native
def test_where_the_native_path_solves_sets_scoring_them_never_imports_scipys_solver() -> None:
    """What lets a process pool's workers skip ``scipy.optimize`` (runs._engine.preload): one process never imports it."""
    if not scoring.native_solves_assignments():
        pytest.skip("the installed scipy is a release the native module does not restate: its own solver is imported")
    program = """
import json, sys
from trace_tasks import resolve_reward_contract, score_trace_response
sets = {
    "bbox_set": [[0, 0, 10, 10], [20, 20, 40, 40], [50, 5, 60, 25]],
    "point_set": [[3, 4], [30, 40], [70, 10]],
    "segment_set": [[[0, 0], [10, 10]], [[20, 0], [20, 30]], [[40, 40], [60, 45]]],
}
for name, value in sets.items():
    contract = resolve_reward_contract(answer_type="integer", annotation_type=name).to_dict()
    predicted = list(reversed(value))[:2]
    result = score_trace_response(
        response=json.dumps({"answer": 3, "annotation": predicted}),
        answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": name, "value": value},
        reward_contract=contract,
        image_size=[100, 100],
    )
    assert 0 < result["annotation_reward"] < 1, (name, result)
print("scipy.optimize" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


class _Real(float):
    """A float subclass: ``float()`` makes a plain float of it."""


def _columns_python(results: list[Any], keys: tuple[str, ...]) -> tuple[list[float], dict[str, list[float]]]:
    """``scoring.columns`` with the native restatement off: the Python loop."""
    from trace_tasks.scoring import _results

    saved, _results._native_columns = _results._native_columns, None
    try:
        return scoring.columns(results, keys)
    finally:
        _results._native_columns = saved


def test_the_columns_loop_stacks_logs_as_openrlhf_reads_them() -> None:
    """The Python loop (both builds): 0.0 for a missing key, floats of numbers, overall clipped and NaN kept."""
    results: list[dict[str, Any]] = [{"overall": 1.5, "format": 1}, {}, {"overall": -0.0, "format": True}, {"overall": math.nan}]
    overall, logs = _columns_python(results, ("format", "overall", "format"))
    assert overall[:3] == [1.0, 0.0, -0.0] and math.copysign(1.0, overall[2]) == -1.0 and math.isnan(overall[3])
    assert list(logs) == ["format", "overall"]
    assert logs["format"] == [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]  # named twice: one list, appended twice a row
    assert all(type(v) is float for v in logs["format"]) and logs["overall"][:3] == [1.5, 0.0, -0.0]


_log_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            0.0,
            -0.0,
            1.0,
            1.0000000000000002,
            -1e-300,
            math.nan,
            -math.nan,
            struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0],
        ]
    ),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.floats(allow_nan=False).map(_Real),
)
_log_keys = st.sampled_from(["overall", "format", "answer_reward", "json_found", "zero_reward", "x"])


@settings(max_examples=1500, deadline=None)
@given(
    results=st.lists(st.dictionaries(_log_keys, _log_values, max_size=6), max_size=5),
    keys=st.lists(_log_keys, max_size=6).map(tuple),
)
def test_columns_are_the_adapters_loop_bit_for_bit(results: list[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """scoring.columns (in C in the native build) gives the per-row loop's values: every float's bits, NaN payloads and
    the sign of zero included, keys in order, a repeated key's list as the loop makes it; in both builds."""
    expected = _columns_python(results, keys)
    got = scoring.columns(results, keys)
    assert [_bits(v) for v in got[0]] == [_bits(v) for v in expected[0]]
    assert list(got[1]) == list(expected[1])
    for key in keys:
        assert [_bits(v) for v in got[1][key]] == [_bits(v) for v in expected[1][key]], key
        assert all(type(v) is float for v in got[1][key])


@needs_native
def test_the_native_columns_decline_what_python_reads() -> None:
    from collections import OrderedDict

    from trace_tasks.scoring import _native  # type: ignore[attr-defined]

    assert _native.columns([{"overall": 2.0}], ("overall",)) == ([1.0], {"overall": [2.0]})
    assert _native.columns([OrderedDict(overall=0.5)], ("overall",)) is None  # not a dict: Python's .get reads it
    assert _native.columns([{}], ("a", "a")) is None  # a repeated key: the loop appends twice to one list
    assert scoring.columns([OrderedDict(overall=0.5)], ("overall",)) == ([0.5], {"overall": [0.5]})
    assert scoring.columns([{}, {"a": 1}], ["a", "a"]) == ([0.0, 0.0], {"a": [0.0, 0.0, 1.0, 1.0]})
    with pytest.raises(ValueError):  # float("x"), as the loop raises
        _native.columns([{"overall": "x"}], ())
