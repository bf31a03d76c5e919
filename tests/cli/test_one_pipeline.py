"""One pipeline: ``explain --json``, ``score`` output rows and ``score_trace_response`` agree on every case.

The cases are the recorded conformance calls of ``score_trace_response`` and
the hostile corpus (floods, tags, truncation, deep nesting, big sets and
maps). Every case whose instance validates must give the same dict through
the lenient scorer, a compiled instance, its explanation run, the ``score``
command and ``explain --json``; an instance that validation refuses is an
error row in ``score`` and is refused by ``explain`` (exit 1, one line).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.records import decode_tagged, load
from tests.hostile.helpers import contract
from tests.hostile.test_corpus import CASES
from trace_tasks import InstanceError, compile_instance, instance_problems, score_trace_response
from trace_tasks.cli import main
from trace_tasks.scoring import options_from

OPTION_NAMES = (
    "trace_reward_mode",
    "answer_weight",
    "annotation_weight",
    "format_weight",
    "trace_annotation_reward_formula",
    "point_half_life_px",
    "trace_recovery",
    "format_accept_answer_tag",
)
#: The opt-in response policies of docs/contracts.md §3.7, run over the shape cases too.
POLICIES = (
    {"trace_recovery": "outside_think"},
    {"trace_recovery": "final_only", "format_accept_answer_tag": True},
    {"format_accept_answer_tag": True, "trace_reward_mode": "answer"},
)
INSTANCE_NAMES = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")
REQUIRED = ("answer_gt", "annotation_gt", "reward_contract")


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    """Equal dicts, key order included, NaN never expected (results are finite)."""
    return list(a) == list(b) and all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


def _conformance_cases() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """(id, instance, response, options) of every recorded scorer call that passes plain values."""
    cases = []
    for record in load("original-scorer.jsonl"):
        if record.get("fn") != "score_trace_response" or "exception" in record:
            continue
        kwargs = decode_tagged(record["kwargs"])
        if not isinstance(kwargs.get("response"), str) or set(kwargs) - {"response", *OPTION_NAMES, *INSTANCE_NAMES}:
            continue
        instance = {
            name: kwargs[name] for name in INSTANCE_NAMES if name in kwargs and (kwargs[name] is not None or name in REQUIRED)
        }
        options = {name: kwargs[name] for name in OPTION_NAMES if name in kwargs}
        try:
            options_from(options)
        except ValueError:  # a recorded call with options we refuse (a listed deviation): nothing to compare
            continue
        cases.append((record["id"], instance, kwargs["response"], options))
    return cases


def _corpus_cases() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    cases = []
    for case in CASES:
        spec = {"answer": 7, "answer_type": "integer", "annotation_type": "bbox", "annotation": [0, 0, 10, 10], **case.instance}
        instance = {
            "answer_gt": {"type": spec["answer_type"], "value": spec["answer"]},
            "annotation_gt": {"type": spec["annotation_type"], "value": spec["annotation"]},
            "reward_contract": contract(spec["annotation_type"], spec["answer_type"]),
        }
        for mode in ("answer_and_annotation", "answer"):
            cases.append((f"{case.name}-{mode}", instance, case.response, {"trace_reward_mode": mode}))
    return cases


def _instance(annotation_type: str, target: Any, answer: Any = 7) -> dict[str, Any]:
    return {
        "answer_gt": {"type": "integer", "value": answer},
        "annotation_gt": {"type": annotation_type, "value": target},
        "reward_contract": contract(annotation_type),
        "image_size": [1000, 1000],
    }


def _shape_cases() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """Floods, tags, truncation, big sets and maps: the shapes where copies of a pipeline drift apart."""
    boxes = [[i, i, i + 20, i + 20] for i in range(0, 600, 3)]
    points = {f"k{i}": [[i, j] for j in range(0, 200, 7)] for i in range(6)}
    final = '{"answer": 7, "annotation": %s}' % json.dumps(boxes[:150])
    cases = {
        "flood_braces": (_instance("bbox_set", boxes), "{}" * 20_000 + final),
        "flood_backticks": (_instance("bbox_set", boxes), "```" * 5_000 + final),
        "flood_escaped_braces": (
            _instance("bbox", [0, 0, 10, 10]),
            "\\{}" * 10_000 + '{"answer": 7, "annotation": [0, 0, 9, 9]}',
        ),
        "tagged_answer": (_instance("bbox", [0, 0, 10, 10]), "think... <answer>7</answer>"),
        "tagged_object": (_instance("bbox", [0, 0, 10, 10]), '<answer>{"answer": 7, "annotation": [1, 1, 10, 10]}</answer>'),
        "truncated_final_object": (_instance("bbox_set", boxes), final[:-3]),
        "big_set": (_instance("bbox_set", boxes), final),
        "big_set_map": (
            _instance("point_set_map", points),
            '{"answer": 7, "annotation": %s}' % json.dumps({k: v[::-1] for k, v in points.items()}),
        ),
        "map_missing_and_extra_keys": (
            _instance("bbox_map", {"a": [0, 0, 10, 10], "b": [5, 5, 9, 9]}),
            '```json\n{"answer": 6, "annotation": {"a": [0, 0, 9, 10], "zz": [1, 1, 2, 2]}}\n```',
        ),
        "literal_strings": (_instance("point_set", [[1, 1], [5, 5]]), "{'answer': 7, 'annotation': ['(1, 1)', '(5, 6)']}"),
        "draft_in_think": (
            _instance("bbox", [0, 0, 10, 10]),
            '<think>Candidate: {"answer": 7, "annotation": [0, 0, 10, 10]}</think>I cannot tell.',
        ),
        "r1_template": (
            _instance("bbox", [0, 0, 10, 10]),
            '<think>the box</think><answer>{"answer": 7, "annotation": [0, 0, 9, 10]}</answer>',
        ),
        "native_qwen_list": (
            _instance("bbox", [0, 0, 10, 10]),
            '{"answer": 7, "annotation": [{"bbox_2d": [0, 0, 10, 10], "label": "x"}]}',
        ),
        "normalised_point": (_instance("point", [905, 100]), '{"answer": 7, "annotation": [905, 100]}'),
    }
    out = []
    for name, (instance, response) in cases.items():
        for options in (
            {},
            {"trace_reward_mode": "answer"},
            {"trace_annotation_reward_formula": "additive", "format_weight": 0.25},
            *POLICIES,
        ):
            out.append((f"{name}-{len(out)}", instance, response, options))
    return out


CONFORMANCE = _conformance_cases()
CORPUS = _corpus_cases() + _shape_cases()


def test_the_cases_cover_what_the_issue_names() -> None:
    assert len(CONFORMANCE) > 300 and len(CORPUS) > 100
    names = " ".join(name for name, *_ in CORPUS)
    for shape in ("flood", "tag", "trunc", "deep"):
        assert shape in names, shape
    types = {
        instance.get("annotation_gt", {}).get("type")
        for _, instance, _, _ in CONFORMANCE
        if isinstance(instance.get("annotation_gt"), dict)
    }
    assert {"bbox_set", "bbox_set_map", "point_map", "segment_set"} <= types


@pytest.mark.parametrize(
    ("name", "instance", "response", "options"),
    CONFORMANCE + CORPUS,
    ids=lambda v: v if isinstance(v, str) and len(v) < 80 else "",
)
def test_compiled_and_explained_runs_give_the_lenient_dict(
    name: str, instance: dict[str, Any], response: str, options: dict[str, Any]
) -> None:
    lenient = score_trace_response(response=response, **instance, **options)
    try:
        compiled = compile_instance(instance)
    except InstanceError:
        assert instance_problems(instance)  # refused by validation: explain and score refuse it too (below)
        return
    assert _same(compiled.score(response, **options), lenient)
    result, trail = compiled.explain(response, options_from(options))
    assert _same(result, lenient), name
    assert trail.extraction is not None


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _cli_args(options: dict[str, Any]) -> list[str]:
    args = []
    flags = {
        "trace_reward_mode": "--mode",
        "answer_weight": "--answer-weight",
        "annotation_weight": "--annotation-weight",
        "format_weight": "--format-weight",
        "trace_annotation_reward_formula": "--formula",
        "point_half_life_px": "--point-half-life-px",
        "trace_recovery": "--recovery",
    }
    for name, value in options.items():
        if name == "format_accept_answer_tag":
            args += ["--format-accept-answer-tag"] if value else []
        else:
            args += [flags[name], str(value)]
    return args


def _cli_cases() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """The cases the command line can take: options it can spell, responses a JSON file can carry."""
    out = []
    for case in CONFORMANCE + CORPUS:
        _, _, response, options = case
        plain = {k: v for k, v in options.items() if k != "format_accept_answer_tag"}
        if len(response) > 300_000 or any(not isinstance(v, (str, int, float)) or isinstance(v, bool) for v in plain.values()):
            continue
        out.append(case)
    return out


CLI_CASES = _cli_cases()


@pytest.mark.slow
def test_explain_json_and_score_rows_equal_the_scorer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every case through both commands (one ``score`` run per option set, one ``explain --json`` per case)."""
    by_options: dict[str, list[tuple[str, dict[str, Any], str, dict[str, Any]]]] = {}
    for case in CLI_CASES:
        by_options.setdefault(json.dumps(case[3], sort_keys=True), []).append(case)
    checked = refused = 0
    for group in by_options.values():
        options = group[0][3]
        rows = [{"id": f"r{i}", **instance, "response": response} for i, (_, instance, response, _) in enumerate(group)]
        combined = _write(tmp_path / "combined.jsonl", rows)
        out = tmp_path / "scores.jsonl"
        assert main(["score", str(combined), "-o", str(out), "-q", *_cli_args(options)]) in (0, 1)
        capsys.readouterr()
        scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert len(scored) == len(rows)
        for line, ((name, instance, response, _), row) in enumerate(zip(group, scored, strict=True), start=1):
            lenient = score_trace_response(response=response, **instance, **options)
            code = main(["explain", "--instance", str(combined), "--line", str(line), "--json", *_cli_args(options)])
            printed = capsys.readouterr()
            if instance_problems(instance):
                assert "error" in row, name
                assert code == 1 and printed.out == "", name
                assert len(printed.err.strip().splitlines()) == 1 and "invalid instance" in printed.err, name
                refused += 1
                continue
            scores = {k: v for k, v in row.items() if isinstance(v, float) and k != "line"}
            assert all(scores[k] == lenient[k] for k in lenient), name
            assert code == 0, (name, printed.err)
            shown = json.loads(printed.out)
            assert shown["result"] == lenient, name
            assert list(shown["result"]) == list(lenient)
            assert set(shown["explanation"]) == {"extraction", "answer", "annotation"}
            checked += 1
    assert checked > 300 and refused > 0


@pytest.mark.parametrize(
    ("annotation_gt", "why"),
    [
        ({"type": "bbox", "value": [5, 5, 5, 9]}, "zero-area"),
        (
            {"type": "bbox_set_map", "value": {f"k{i}": f"[({i}, 0, {i + 10}, 10)]" for i in range(400)}},
            "MAX_TARGET_LITERAL_BUDGET",
        ),
    ],
)
def test_explain_refuses_what_validation_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], annotation_gt: dict[str, Any], why: str
) -> None:
    instance = {
        "id": "bad",
        "answer_gt": {"type": "integer", "value": 1},
        "annotation_gt": annotation_gt,
        "reward_contract": contract(annotation_gt["type"]),
    }
    assert any(why in problem.message for problem in instance_problems(instance))
    path = _write(tmp_path / "bad.jsonl", [instance])
    response = '{"answer": 1, "annotation": %s}' % json.dumps(annotation_gt["value"])
    for extra in ([], ["--json"]):
        code = main(["explain", "--instance", str(path), "--line", "1", "--response", response, *extra])
        printed = capsys.readouterr()
        assert code == 1 and printed.out == ""
        (line,) = printed.err.strip().splitlines()
        assert line.startswith("trace-tasks explain: error: ") and why in line
    code = main(
        ["score", str(path), "--responses", str(_write(tmp_path / "r.jsonl", [{"id": "bad", "response": response}])), "-q"]
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert code == 1 and rows and all("error" in row for row in rows)


def test_an_empty_target_with_an_empty_response_is_not_explained_as_a_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = {
        "id": "empty",
        "answer_gt": {"type": "integer", "value": 1},
        "annotation_gt": {"type": "bbox", "value": []},
        "reward_contract": contract("bbox"),
    }
    assert instance_problems(instance)
    path = _write(tmp_path / "empty.jsonl", [instance])
    assert main(["explain", "--instance", str(path), "--line", "1", "--response", ""]) == 1
    assert "match: yes" not in capsys.readouterr().out
