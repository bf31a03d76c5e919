"""Deep nesting never reaches a recursive parser, whatever the recursion limit (issue 17, item 1),
and the literal reader refuses values JSON cannot hold (item 8).

The JSON decoder recurses once per level and is bounded only by
``sys.getrecursionlimit()``: a host that raises the limit to 100,000 (many ML
codebases do) used to die with SIGSEGV on ``[`` * 100,000. Nesting is now
measured first against ``MAX_JSON_DEPTH``, everywhere text is decoded: the
response's candidates, answer and annotation strings the model wrote, and the
caller's strings (answer and annotation targets, image sizes in metadata).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from trace_tasks.limits import MAX_JSON_DEPTH
from trace_tasks.reading import _literals as literals
from trace_tasks.scoring import answer_target, find_image_size, matches_answer_target

from .helpers import BAD_ANNOTATION, UNPARSED_BLOCK, WELL_FORMED, expect, flags, score

#: Deep enough that a decoder without the check would parse it under a raised limit
#: (and shallow enough that it cannot overflow the C stack if the check were missing).
IN_PROCESS_DEPTH = 5_000


@pytest.fixture
def raised_recursion_limit() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(4 * IN_PROCESS_DEPTH)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.usefixtures("raised_recursion_limit")  # the default limit (1,000) could bite just inside
def test_json_nesting_bound_is_exact() -> None:
    assert literals.load_json(_nested(MAX_JSON_DEPTH))[1]
    assert literals.load_json(_nested(MAX_JSON_DEPTH + 1)) == (None, False)
    assert literals.load_json('{"a":' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH)[1]
    assert literals.load_json('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)) == (None, False)


def test_brackets_inside_json_strings_do_not_count() -> None:
    deep_text = "[" * (4 * MAX_JSON_DEPTH)
    assert literals.load_json('{"answer": "' + deep_text + '"}') == ({"answer": deep_text}, True)
    # An escaped quote does not end the string; an escaped backslash before a quote does.
    assert literals.load_json('["\\"' + deep_text + '"]')[1]
    assert not literals.load_json('["\\\\"' + deep_text + '"]')[1]


def test_json_nesting_check_agrees_with_a_character_walk() -> None:
    # The vectorised check against the obvious loop, on every short text of this alphabet.
    import itertools

    def walk(text: str) -> int:
        depth = peak = i = 0
        while i < len(text):
            ch = text[i]
            if ch == '"':
                i += 1
                while i < len(text) and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif ch in "[{":
                depth += 1
                peak = max(peak, depth)
            elif ch in "]}":
                depth -= 1
            i += 1
        return peak

    for length in range(6):
        for chars in itertools.product('[{]"\\x', repeat=length):
            text = "".join(chars)
            codes = literals._codes(text)
            steps = literals._JSON_STEPS[codes]
            steps[literals.inside_json_strings(codes) == 1] = 0
            assert literals._peak_nesting(codes, steps) == walk(text), text


@pytest.mark.usefixtures("raised_recursion_limit")
def test_deep_final_object_is_a_parse_failure_under_a_raised_limit() -> None:
    response = '{"answer": ' + _nested(IN_PROCESS_DEPTH) + "}"
    assert flags(score(response, mode="answer")) == expect(found=0.0, structure=1.0, json_ok=0.0, schema=0.0, annotation_ok=0.0)


@pytest.mark.usefixtures("raised_recursion_limit")
def test_deep_strings_the_model_wrote_are_not_decoded() -> None:
    deep = _nested(IN_PROCESS_DEPTH)
    # An annotation string is read as JSON first: too deep, so the annotation fails.
    result = score('{"answer": 7, "annotation": "' + deep + '"}')
    assert flags(result) == BAD_ANNOTATION
    assert result["answer_reward"] == 1.0
    # An answer string stays a string: equal to the same string, not to a list.
    assert matches_answer_target(deep, answer_target(deep))
    assert not matches_answer_target(deep, answer_target([[[]]]))


@pytest.mark.usefixtures("raised_recursion_limit")
def test_deep_caller_strings_are_not_decoded() -> None:
    deep = _nested(IN_PROCESS_DEPTH)
    # A target annotation given as a too-deep string does not parse: no annotation reward.
    result = score('{"answer": 7, "annotation": [0, 0, 10, 10]}', annotation=deep)
    assert result["annotation_reward"] == 0.0
    assert result["answer_reward"] == 1.0
    # An image size hidden in a too-deep string is not found.
    assert find_image_size({"image_size": "[" * IN_PROCESS_DEPTH + "[640, 480]" + "]" * IN_PROCESS_DEPTH}) is None
    assert find_image_size({"image_size": "[640, 480]"}) == (640.0, 480.0)


@pytest.mark.slow
def test_no_crash_at_any_depth_under_a_recursion_limit_of_100000() -> None:
    # The 200 KB payload and its relatives, in a child process: a crash there is SIGSEGV.
    script = textwrap.dedent(
        """
        import sys
        sys.setrecursionlimit(100_000)
        from trace_tasks import score_trace_response
        from trace_tasks.scoring._image_size import find_image_size

        deep = "[" * 100_000 + "]" * 100_000
        contract = {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "index_list"},
            "annotation": {"id": "bbox_iou_v0", "type": "bbox"},
        }
        def run(response, answer=[1], annotation=[0, 0, 10, 10], **extra):
            return score_trace_response(
                response=response,
                answer_gt={"type": "index_list", "value": answer},
                annotation_gt={"type": "bbox", "value": annotation},
                reward_contract=contract,
                **extra,
            )
        results = [
            run('{"answer": ' + deep + "}"),
            run('{"answer": "' + deep + '", "annotation": "' + deep + '"}'),
            run('{"answer": [1], "annotation": [0, 0, 10, 10]}', answer=deep, annotation=deep),
            run('{"answer": [1], "annotation": [0, 0, 10, 10]}', metadata={"image_size": deep}),
            run("{'answer': " + "(" * 100_000 + "}"),
            run(deep),
        ]
        assert find_image_size(deep) is None
        print(" ".join(str(r["format_json_ok"]) for r in results))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.split() == ["0.0", "1.0", "1.0", "1.0", "0.0", "0.0"]


# --- item 8: values JSON cannot hold ---------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    ["{1j}", "1+2j", "b'x'", "...", "[0, (1, b'')]", "{1j: 2}", "{'k': {(1, ...): 2}}"],
    ids=["set_of_complex", "complex", "bytes", "ellipsis", "nested_bytes", "complex_key", "ellipsis_in_key"],
)
def test_literal_holding_odd_values_is_not_parsed(answer: str) -> None:
    response = "{'answer': " + answer + ", 'annotation': [0, 0, 10, 10]}"
    assert flags(score(response)) == expect(found=0.0, structure=1.0, json_ok=0.0, schema=0.0, annotation_ok=0.0)
    assert literals.load_literal(answer) == (None, False)


def test_literal_sets_and_tuples_still_parse() -> None:
    assert flags(score("{'answer': {7}, 'annotation': (0, 0, 10, 10)}")) == WELL_FORMED
    assert literals.load_literal("{'a': set(), 'b': {(1, 2.5), None, True}}")[1]


def test_odd_literal_annotation_string_is_not_parsed() -> None:
    assert literals.read_annotation_string("(0, 0, 10, 10j)") == (None, False)
    assert flags(score("{'answer': 7, 'annotation': (0, 0, 10, 10j)}")) == UNPARSED_BLOCK
