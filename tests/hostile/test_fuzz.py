"""Hypothesis fuzzing: random hostile responses never break the scorer, and scores are stable.

Responses are glued from JSON fragments, prose, fences, ``<answer>`` tags,
stray quotes and braces and arbitrary unicode (lone surrogates included).
Properties: no exception, sane values and flags (``helpers.check_result``),
determinism, and invariance under shuffling set items, reversing segment
endpoints and reordering mapping keys. The final-object scanners are also
checked against plain per-character reference scanners.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trace_tasks.reading import _extraction as extraction

from .helpers import score

pytestmark = pytest.mark.slow  # Hypothesis: hundreds of scored examples per test; -m "not slow" leaves them to the full run

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROPERTY = settings(max_examples=60, deadline=None)

ANY_CHAR = st.characters(blacklist_categories=())  # includes lone surrogates and controls
coords = st.integers(min_value=-50, max_value=250)
boxes = st.tuples(coords, coords, st.integers(1, 60), st.integers(1, 60)).map(lambda b: [b[0], b[1], b[0] + b[2], b[1] + b[3]])
points = st.lists(coords, min_size=2, max_size=2)
segments = st.lists(points, min_size=2, max_size=2)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True), st.text(ANY_CHAR, max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
payloads = st.fixed_dictionaries(
    {}, optional={"answer": json_values | st.just(7), "annotation": json_values | boxes | st.lists(boxes, max_size=4)}
)
fragments = st.one_of(
    payloads.map(json.dumps),
    payloads.map(repr),  # Python-literal spelling
    st.sampled_from(
        [
            "```",
            "```json\n",
            "\n```",
            "<answer>",
            "</answer>",
            "<think>",
            "</think>",
            '"',
            "'",
            "{",
            "}",
            "[",
            "]",
            "\\",
            '\\"',
            ":",
            ",",
            "\n",
            "answer",
            '"answer":',
            "NaN",
            "Infinity",
            "1e400",
            "\x00",
        ]
    ),
    st.text(max_size=30),
    st.text(ANY_CHAR, max_size=12),
)
responses = st.lists(fragments, max_size=12).map("".join)
annotation_types = st.sampled_from(["bbox", "bbox_set", "bbox_map", "point", "point_set", "segment_set", "point_set_map"])
TARGETS = {
    "bbox": [0, 0, 10, 10],
    "bbox_set": [[0, 0, 10, 10], [20, 20, 40, 40]],
    "bbox_map": {"a": [0, 0, 10, 10]},
    "point": [5, 5],
    "point_set": [[5, 5], [50, 50]],
    "segment_set": [[[0, 0], [10, 0]]],
    "point_set_map": {"a": [[5, 5]]},
}


@FUZZ
@given(response=responses, annotation_type=annotation_types, mode=st.sampled_from(["answer", "answer_and_annotation"]))
def test_random_responses_never_break_the_scorer(response: str, annotation_type: str, mode: str) -> None:
    first = score(response, annotation_type=annotation_type, annotation=TARGETS[annotation_type], mode=mode)
    second = score(response, annotation_type=annotation_type, annotation=TARGETS[annotation_type], mode=mode)
    assert first == second
    assert list(first) == list(second)


@FUZZ
@given(prefix=responses, answer=json_values, annotation=st.lists(boxes, max_size=5))
def test_a_final_object_after_any_prefix_is_found(prefix: str, answer: Any, annotation: list[list[int]]) -> None:
    final = json.dumps({"answer": answer, "annotation": annotation})
    result = score(prefix + "\n" + final, annotation_type="bbox_set", annotation=TARGETS["bbox_set"])
    assert result["format"] == 1.0
    assert result["json_found"] == 1.0
    assert result["annotation_parse_ok"] == 1.0


@PROPERTY
@given(preds=st.lists(boxes, min_size=1, max_size=12), targets=st.lists(boxes, min_size=1, max_size=6), data=st.data())
def test_shuffling_a_predicted_box_set_never_changes_the_score(preds: list[Any], targets: list[Any], data: Any) -> None:
    shuffled = data.draw(st.permutations(preds))
    a = score(json.dumps({"answer": 7, "annotation": preds}), annotation_type="bbox_set", annotation=targets)
    b = score(json.dumps({"answer": 7, "annotation": shuffled}), annotation_type="bbox_set", annotation=targets)
    assert a == b


@PROPERTY
@given(preds=st.lists(points, min_size=1, max_size=12), targets=st.lists(points, min_size=1, max_size=6), data=st.data())
def test_shuffling_a_predicted_point_set_never_changes_the_score(preds: list[Any], targets: list[Any], data: Any) -> None:
    shuffled = data.draw(st.permutations(preds))
    a = score(json.dumps({"answer": 7, "annotation": preds}), annotation_type="point_set", annotation=targets)
    b = score(json.dumps({"answer": 7, "annotation": shuffled}), annotation_type="point_set", annotation=targets)
    assert a == b


@PROPERTY
@given(preds=st.lists(segments, min_size=1, max_size=8), targets=st.lists(segments, min_size=1, max_size=4), data=st.data())
def test_reversing_and_shuffling_segments_never_changes_the_score(preds: list[Any], targets: list[Any], data: Any) -> None:
    flips = data.draw(st.lists(st.booleans(), min_size=len(preds), max_size=len(preds)))
    changed = [seg[::-1] if flip else seg for seg, flip in zip(preds, flips, strict=False)]
    changed = data.draw(st.permutations(changed))
    a = score(json.dumps({"answer": 7, "annotation": preds}), annotation_type="segment_set", annotation=targets)
    b = score(json.dumps({"answer": 7, "annotation": changed}), annotation_type="segment_set", annotation=targets)
    assert a == b


def test_every_order_of_a_tied_segment_set_gives_the_same_last_bit() -> None:
    # Found by the property above: assignments whose totals tie up to rounding; the solver's pick used to follow
    # the predictions' order, so a permutation changed the reward's last digit.
    preds = [[[0, 0], [0, 0]], [[0, 0], [0, 0]], [[0, 0], [85, -50]], [[0, 0], [86, -48]], [[0, 0], [86, -48]]]
    targets = [[[0, 100], [-2, 0]], [[0, 178], [0, 178]], [[0, 0], [0, 56]]]
    results = {
        json.dumps(score(json.dumps({"answer": 7, "annotation": list(order)}), annotation_type="segment_set", annotation=targets))
        for order in itertools.permutations(preds)
    }
    assert len(results) == 1


role_keys = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=5)


@PROPERTY
@given(
    pred=st.dictionaries(role_keys, st.lists(boxes, max_size=3), max_size=6),
    target=st.dictionaries(role_keys, st.lists(boxes, max_size=3), min_size=1, max_size=4),
    data=st.data(),
)
def test_reordering_mapping_keys_never_changes_the_score(pred: dict[str, Any], target: dict[str, Any], data: Any) -> None:
    order = data.draw(st.permutations(list(pred)))
    reordered = {key: pred[key] for key in order}
    a = score(json.dumps({"answer": 7, "annotation": pred}), annotation_type="bbox_set_map", annotation=target)
    b = score(json.dumps({"annotation": reordered, "answer": 7}), annotation_type="bbox_set_map", annotation=target)
    assert a == b


# Reference scanners: one Python step per character, written straight from the docstrings.


def _escaped(text: str, k: int) -> bool:
    run = 0
    while k - 1 - run >= 0 and text[k - 1 - run] == "\\":
        run += 1
    return run % 2 == 1


def _reference_balanced_start(text: str) -> int:
    depth = 0
    i = len(text) - 1
    while i >= 0:
        ch = text[i]
        if ch == '"':
            k = i - 1
            while k >= 0 and not (text[k] == '"' and not _escaped(text, k)):
                k -= 1
            if k < 0:
                return -1
            i = k - 1
            continue
        if ch == "}":
            depth += 1
        elif ch == "{":
            depth -= 1
            if depth == 0:
                return i
        i -= 1
    return -1


def _reference_top_level(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    depth = start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            k = i + 1
            while k < len(text) and text[k] != '"':
                k += 2 if text[k] == "\\" else 1
            if k >= len(text):
                return spans
            i = k + 1
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
        i += 1
    return spans


structural = st.lists(st.sampled_from(["{", "}", '"', "\\", "a", " ", "{{{", "}}}", '""', "\\\\"]), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=structural)
def test_scanners_match_per_character_references(text: str) -> None:
    assert extraction.top_level_objects(text) == _reference_top_level(text)
    if text.endswith("}"):
        assert extraction.balanced_object_start(text) == _reference_balanced_start(text)


# The numpy scans that take over from the Python ones on floods must agree with them
# exactly: checked against the same references, and through the whole extraction.
structural_unicode = st.lists(
    st.sampled_from(["{", "}", '"', "\\", "a", "é", "{{{", "}}}", '""', "\\\\", '\\"', "\U0001f600"]), max_size=60
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=structural_unicode)
def test_numpy_scanners_match_per_character_references(text: str) -> None:
    starts, ends = extraction._top_level_spans_np(text)
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == _reference_top_level(text)
    if text.endswith("}"):
        assert extraction._balanced_object_start_np(text) == _reference_balanced_start(text)


candidate_text = st.lists(
    st.sampled_from(
        ["{", "}", '"', "\\", " ", ":", "7", ",", '"answer"', "answer", "annotation", "[0, 0, 1, 1]", '{"answer": 1}', "é",
         "```", "<answer>", "</answer>", "'"]
    ),
    max_size=40,
).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(text=candidate_text)
def test_extraction_is_the_same_on_the_numpy_path(text: str) -> None:
    def extracted() -> tuple[Any, ...]:
        ext = extraction.extract(text, extraction.ANSWER_AND_ANNOTATION_KEYS)
        return ext.format, ext.payload, ext.last_answer_tag, ext.source

    python_path = extracted()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(extraction, "_PYTHON_STEPS", 0)
        assert extracted() == python_path
