"""One validation of an instance (``trace_tasks.data._instances``), compiled instances and their cache.

``BROKEN`` is the table of broken ground truth every data-facing tool must refuse
(the CLI and server tests import it): each case breaks one thing of a good
instance and names the ``$``-path and message of the problem it must report.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import attrs
import numpy as np
import pytest

import trace_plugins_bbox.plugin
from trace_tasks import (
    CompiledInstance,
    InstanceCache,
    InstanceError,
    Problem,
    RecordError,
    compile_instance,
    instance_problems,
    plugins,
    resolve_reward_contract,
    score_trace_response,
)
from trace_tasks.data import instance_report
from trace_tasks.plugins import _registry as registry_module

from ..conformance.records import load
from ..support.benchmarks import import_benchmark

GOOD_RESPONSE = '{"answer": 2, "annotation": [0, 0, 10, 10]}'


def contract(answer_type: str = "integer", annotation_type: str = "bbox") -> dict[str, Any]:
    return resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()


def good_instance(id: str = "good") -> dict[str, Any]:
    """A valid instance: integer 2, one box, a 640x480 image."""
    return {
        "id": id,
        "answer_gt": {"type": "integer", "value": 2},
        "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
        "reward_contract": contract(),
        "image_size": [640, 480],
    }


@attrs.frozen
class Case:
    """A good instance with one thing broken, and the problem it must report."""

    name: str
    breaks: Callable[[dict[str, Any]], None]
    path: str
    message: str

    def instance(self, id: str | None = None) -> dict[str, Any]:
        data = good_instance(id or self.name)
        self.breaks(data)
        return data


def _set(*path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def breaks(data: dict[str, Any]) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return breaks


def _annotation_type(name: str) -> Callable[[dict[str, Any]], None]:
    def breaks(data: dict[str, Any]) -> None:
        data["annotation_gt"]["type"] = name
        data["reward_contract"]["annotation"]["type"] = name  # a contract that agrees: only the type is wrong

    return breaks


def _string_answer(value: Any) -> Callable[[dict[str, Any]], None]:
    def breaks(data: dict[str, Any]) -> None:
        data["answer_gt"] = {"type": "string", "value": value}
        data["reward_contract"] = contract("string")

    return breaks


def _answer(answer_type: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def breaks(data: dict[str, Any]) -> None:
        data["answer_gt"] = {"type": answer_type, "value": value}
        data["reward_contract"] = contract(answer_type)

    return breaks


def _size_in_metadata(data: dict[str, Any]) -> None:
    del data["image_size"]
    data["metadata"] = {"image_size": [640, -1]}


def _without(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.pop(key)


#: The maintainers' table of broken ground truth, plus every check of an instance.
BROKEN: tuple[Case, ...] = (
    Case(
        "zero-area-box",
        _set("annotation_gt", "value", value=[5, 0, 5, 10]),
        "$.annotation_gt.value",
        "does not parse as bbox: zero-area box",
    ),
    Case(
        "non-numeric-coordinate",
        _set("annotation_gt", "value", value=[0, 0, "ten", 10]),
        "$.annotation_gt.value",
        "does not parse as bbox",
    ),
    Case(
        "non-finite-coordinate",
        _set("annotation_gt", "value", value=[0, 0, math.inf, 10]),
        "$.annotation_gt.value",
        "does not parse as bbox",
    ),
    Case(
        "annotation-type-BBOX",
        _annotation_type("BBOX"),
        "$.annotation_gt.type",
        "unknown annotation type 'BBOX' (did you mean 'bbox'?",
    ),
    Case("annotation-type-polygon", _annotation_type("polygon"), "$.annotation_gt.type", "unknown annotation type 'polygon'"),
    Case(
        "reward-id-v9",
        _set("reward_contract", "annotation", "id", value="bbox_soft_iou_v9"),
        "$.reward_contract.annotation.id",
        "unknown annotation reward id 'bbox_soft_iou_v9'",
    ),
    Case(
        "contract-version-v9",
        _set("reward_contract", "reward_contract_version", value="v9"),
        "$.reward_contract.reward_contract_version",
        "reward_contract_version must be 'v0'; got 'v9'",
    ),
    Case(
        "answer-id-bogus",
        _set("reward_contract", "answer", "id", value="bogus"),
        "$.reward_contract.answer.id",
        "reward_contract.answer.id must be 'answer_exact_match_v0'",
    ),
    Case(
        "contract-type-bbox_set-on-bbox",
        _set("reward_contract", "annotation", value={"id": "bbox_set_soft_iou_v0", "type": "bbox_set"}),
        "$.reward_contract.annotation.type",
        "reward_contract.annotation.type must match annotation_gt.type",
    ),
    Case(
        "contract-id-of-another-type",
        _set("reward_contract", "annotation", "id", value="point_soft_distance_v0"),
        "$.reward_contract.annotation.id",
        "must match the resolved contract for annotation_gt.type (bbox_soft_iou_v0)",
    ),
    Case(
        "integer-answer-abc",
        _set("answer_gt", "value", value="abc"),
        "$.answer_gt.value",
        "an integer answer must be a whole number",
    ),
    Case("integer-answer-null", _set("answer_gt", "value", value=None), "$.answer_gt.value", "an integer answer cannot be null"),
    Case(
        "integer-answer-fraction",
        _set("answer_gt", "value", value=2.5),
        "$.answer_gt.value",
        "an integer answer must be a whole number",
    ),
    Case("string-answer-empty", _string_answer(""), "$.answer_gt.value", "a string answer is empty"),
    # What the scorer compares, after its own reading: a JSON-literal string is read first, keys are normalised.
    Case(
        "option-letter-json-empty-string",
        _answer("option_letter", '""'),
        "$.answer_gt.value",
        "the scorer reads it as '' before comparing",
    ),
    Case(
        "pi-expression-json-empty-string",
        _answer("pi_expression", ' "  " '),
        "$.answer_gt.value",
        "a pi_expression answer is empty",
    ),
    Case(
        "option-letter-json-number",
        _answer("option_letter", "7"),
        "$.answer_gt.value",
        "the scorer reads it as 7 before comparing",
    ),
    Case(
        "matrix-keys-collide",
        _answer("matrix", {"A": 1, "a": 2}),
        "$.answer_gt.value",
        "keys 'A', 'a' are one key once normalised",
    ),
    Case(
        "matrix-nested-keys-collide",
        _answer("matrix", [[1, 2], {"row": {" K": 1, "k": 2}}]),
        "$.answer_gt.value[1]['row']",
        "keys ' K', 'k' are one key once normalised",
    ),
    Case("answer-type-unknown", _set("answer_gt", "type", value="integr"), "$.answer_gt.type", "unknown answer type 'integr'"),
    Case("unknown-field", _set("extra_field", value=1), "$", "extra_field"),
    Case("missing-field", _without("annotation_gt"), "$.annotation_gt", "required field missing"),
    Case(
        "image-size-zero", _set("image_size", value=[0, 480]), "$.image_size", "must be [width, height], both finite numbers > 0"
    ),
    Case("image-size-in-metadata-unusable", _size_in_metadata, "$.metadata", "no usable size"),
)


def _case_id(case: Case) -> str:
    return case.name


# --- every kind of problem, with its path and message ----------------------------------------


def test_a_good_instance_has_no_problem() -> None:
    assert instance_problems(good_instance()) == []
    assert isinstance(compile_instance(good_instance()), CompiledInstance)


@pytest.mark.parametrize("case", BROKEN, ids=_case_id)
def test_every_broken_instance_is_reported_with_path_and_message(case: Case) -> None:
    problems = instance_problems(case.instance())
    assert any(p.path == case.path and case.message in p.message for p in problems), problems
    with pytest.raises(InstanceError) as info:
        compile_instance(case.instance(), record="data.jsonl line 3")
    assert info.value.problems == tuple(problems)
    assert str(info.value).startswith("data.jsonl line 3: invalid instance: ")
    assert f"{case.path}: " in str(info.value) and case.message in str(info.value)


def test_the_lenient_scorer_still_rewards_a_correct_answer_on_a_broken_instance() -> None:
    # Why validation exists: the low-level scorer stays lenient (docs/contracts.md §2: a silent 0.5).
    broken = BROKEN[0].instance()
    result = score_trace_response(
        response=GOOD_RESPONSE, **{k: broken[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}
    )
    assert result["overall"] == 0.5 and result["annotation_parse_ok"] == 0.0
    with pytest.raises(InstanceError, match="zero-area box"):
        compile_instance(broken)


def test_every_problem_is_reported_not_only_the_first() -> None:
    data = good_instance()
    data["answer_gt"]["value"] = "abc"
    data["annotation_gt"]["value"] = [5, 0, 5, 10]
    data["reward_contract"]["reward_contract_version"] = "v9"
    data["image_size"] = [640, 0]
    paths = [p.path for p in instance_problems(data)]
    assert paths == ["$.reward_contract.reward_contract_version", "$.answer_gt.value", "$.annotation_gt.value", "$.image_size"]


def test_not_an_object() -> None:
    assert instance_problems([1, 2]) == [Problem("$", "an instance must be a JSON object, got list")]
    with pytest.raises(InstanceError, match=r"\$: an instance must be a JSON object"):
        compile_instance([1, 2])  # type: ignore[arg-type]


def test_problem_and_error_forms() -> None:
    problem = Problem("$.a", "wrong")
    assert str(problem) == "$.a: wrong"
    error = InstanceError([problem, Problem("$.b", "also")], record="r1")
    assert isinstance(error, RecordError) and isinstance(error, ValueError)
    assert str(error) == "r1: invalid instance: $.a: wrong; $.b: also"
    assert error.path == "$.a" and error.record == "r1"
    again = pickle.loads(pickle.dumps(error))
    assert again.problems == error.problems and str(again) == str(error)


@pytest.mark.parametrize(
    ("answer_type", "value"),
    [
        ("integer", 7), ("integer", 7.0), ("integer", "7"), ("integer", -3), ("integer", np.int64(4)),
        ("number", 3.5), ("number", "3.5"), ("number", 0),
        ("string", "red"), ("option_letter", "B"), ("pi_expression", "12π"),
        ("boolean", True), ("boolean", np.bool_(False)),
        ("index_list", []), ("index_list", [2, "a"]), ("matrix", [[1, 2], [3, 4]]), ("matrix", {"a": [1]}),
    ],
)  # fmt: skip
def test_usable_answer_values(answer_type: str, value: Any) -> None:
    data = good_instance()
    data["answer_gt"] = {"type": answer_type, "value": value}
    data["reward_contract"] = contract(answer_type)
    assert [p for p in instance_problems(data) if p.path.startswith("$.answer_gt")] == []


@pytest.mark.parametrize(
    ("answer_type", "value", "message"),
    [
        ("integer", True, "must be a whole number"),
        ("integer", math.nan, "must be a whole number"),
        ("integer", "", "must be a whole number"),
        ("number", math.inf, "must be a finite number"),
        ("number", "abc", "must be a finite number"),
        ("number", None, "cannot be null"),
        ("string", "   ", "is empty"),
        ("string", 7, "must be a non-empty string, got 7"),
        ("option_letter", "", "is empty"),
        ("pi_expression", None, "cannot be null"),
        ("boolean", 1, "must be true or false"),
        ("boolean", "true", "must be true or false"),
        ("index_list", "1, 2", "must be a list"),
        ("index_list", None, "cannot be null"),
        ("index_list", [1, math.nan], "matches nothing"),
        ("matrix", 5, "must be nested lists"),
    ],
)
def test_unusable_answer_values(answer_type: str, value: Any, message: str) -> None:
    data = good_instance()
    data["answer_gt"] = {"type": answer_type, "value": value}
    data["reward_contract"] = contract(answer_type)
    problems = instance_problems(data)
    assert [p.path for p in problems] == ["$.answer_gt.value"], problems
    assert message in problems[0].message


def test_missing_family_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = plugins.build_registry([("bbox", trace_plugins_bbox.plugin.family)], load_entry_points=False)
    monkeypatch.setattr(registry_module, "_current", registry)
    data = good_instance()
    data["annotation_gt"] = {"type": "point", "value": [1, 2]}
    data["reward_contract"]["annotation"] = {"id": "point_soft_distance_v0", "type": "point"}
    problems = instance_problems(data)
    assert problems == [
        Problem(
            "$.annotation_gt.type",
            "annotation type 'point' belongs to the trace-plugins-point family, which is not installed: pip install trace-plugins-point",
        )
    ]


def test_a_response_field_is_the_callers_business() -> None:
    data = {**good_instance(), "response": "2"}
    assert [(p.path, "response" in p.message) for p in instance_problems(data)] == [("$", True)]


def test_instance_report_keeps_the_parsed_target() -> None:
    report = instance_report(good_instance())
    assert report.problems == () and report.parsed and report.annotation_type == "bbox"
    assert report.image_size == (640.0, 480.0)
    assert instance_report(BROKEN[0].instance()).parsed is False


# --- compiled instances score exactly as score_trace_response ---------------------------------

INSTANCE_FIELDS = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata")


def _same(a: Any, b: Any) -> bool:
    """Equal result dicts (keys in order; NaN equal to NaN), or the same exception type."""
    if isinstance(a, type) or isinstance(b, type):
        return a == b
    return list(a) == list(b) and all(x == y or (x != x and y != y) for x, y in zip(a.values(), b.values(), strict=True))


def _outcome(fn: Callable[[], dict[str, float]]) -> Any:
    try:
        return fn()
    except Exception as exc:  # the lenient scorer's caller errors: invalid options, a non-string response
        return type(exc)


def test_compiled_equals_the_lenient_scorer_on_the_conformance_replay() -> None:
    compared = 0
    for record in load("original-scorer.jsonl"):
        kwargs = dict(record["kwargs"])
        instance = {k: kwargs.pop(k) for k in INSTANCE_FIELDS if k in kwargs}
        try:
            compiled = compile_instance(instance)
        except InstanceError:
            continue  # broken ground truth: the lenient scorer's business, and validation refuses it
        response = kwargs.pop("response")
        lenient = _outcome(partial(score_trace_response, response=response, **instance, **kwargs))
        assert _same(_outcome(partial(compiled.score, response, **kwargs)), lenient), record["id"]
        if isinstance(response, str):
            group = _outcome(partial(compiled.score_group, [response, response], **kwargs))
            assert _same(group if isinstance(group, type) else group[1], lenient), record["id"]
        compared += 1
    assert compared >= 300  # most records hold valid ground truth


def test_compiled_equals_the_lenient_scorer_on_the_benchmark_workload() -> None:
    for item in import_benchmark("workload").make_batch(480, seed=7):
        instance = {k: item[k] for k in INSTANCE_FIELDS if k in item}
        options = {k: v for k, v in item.items() if k not in INSTANCE_FIELDS and k != "response"}
        compiled = compile_instance(instance)
        assert _same(compiled.score(item["response"], **options), score_trace_response(**item))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"trace_reward_mode": "answer"},
        {"trace_annotation_reward_formula": "additive", "answer_weight": 3, "annotation_weight": 1, "format_weight": 0.25},
        {"point_half_life_px": 7.5},
        {"image_size": [100, 100]},
        {"image_sizes": [[4000, 4000]]},
        {"metadata": {"width": 10, "height": 10}},
        {"extra_info": {"image_size": [2000, 2000]}},
        {"image_sizes": [[4000, 4000]], "extra_info": {"image_size": [10, 10]}, "point_half_life_px": "20"},
    ],
)
@pytest.mark.parametrize("own_size", [{"image_size": [640, 480]}, {"metadata": {"image_size": [900, 900]}}, {}])
def test_options_and_size_sources_reach_the_compiled_scorer(options: dict[str, Any], own_size: dict[str, Any]) -> None:
    instance = {
        "answer_gt": {"type": "integer", "value": 2},
        "annotation_gt": {"type": "point_set", "value": [[10, 10], [50, 60]]},
        "reward_contract": contract("integer", "point_set"),
        **own_size,
    }
    response = '{"answer": 2, "annotation": [[14, 12], [40, 66]]}'
    compiled = compile_instance(instance)
    merged = {**instance, **{k: v for k, v in options.items() if v is not None}}
    expected = score_trace_response(response=response, **merged)
    assert compiled.score(response, **options) == expected
    assert compiled.score_group([response, "{}"], **options)[0] == expected


def test_compiled_instance_holds_what_validation_computed() -> None:
    compiled = compile_instance({**good_instance(), "metadata": {"q": 1}})
    assert compiled.annotation_type == "bbox" and compiled.answer_type == "integer"
    assert compiled.target == (0.0, 0.0, 10.0, 10.0)
    assert compiled.image_size == (640.0, 480.0) and compiled.half_life_px == pytest.approx(28.0)
    assert compiled.reward_entry.reward_id == "bbox_soft_iou_v0"
    assert compiled.data["id"] == "good"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        compiled.target = None  # type: ignore[misc]
    assert not hasattr(compiled, "__dict__")


def test_compiled_scoring_keeps_the_caller_errors() -> None:
    compiled = compile_instance(good_instance())
    with pytest.raises(TypeError, match="response must be a str"):
        compiled.score(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="format_weight"):
        compiled.score("", format_weight=2)
    with pytest.raises(TypeError):
        compiled.score("", answer_gt={})  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="sequence of strings"):
        compiled.score_group("one string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="response must be a str"):
        compiled.score_group(["ok", 5])  # type: ignore[list-item]


def test_group_form_scores_each_response_in_order() -> None:
    compiled = compile_instance(good_instance())
    responses = [GOOD_RESPONSE, '{"answer": 2, "annotation": [0, 0, 5, 10]}', "2", "", '{"answer": 3}']
    assert compiled.score_group(responses) == [compiled.score(r) for r in responses]
    assert compiled.score_group([]) == []
    assert [r["overall"] for r in compiled.score_group(responses[:3])] == [1.0, 0.75, 0.5]


def test_a_rebuilt_registry_falls_back_to_the_lenient_scorer(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_instance(good_instance())
    before = compiled.score(GOOD_RESPONSE, image_sizes=[[10, 10]])
    monkeypatch.setattr(registry_module, "_current", plugins.build_registry())
    assert compiled.score(GOOD_RESPONSE, image_sizes=[[10, 10]]) == before
    assert compiled.score_group([GOOD_RESPONSE]) == [score_trace_response(response=GOOD_RESPONSE, **compiled.scoring_kwargs())]


# --- the cache ---------------------------------------------------------------------------------


def test_cache_is_keyed_by_content() -> None:
    cache = InstanceCache()
    first = cache.compile(good_instance())
    assert cache.compile(copy.deepcopy(good_instance())) is first
    assert cache.compile(json.loads(json.dumps(good_instance()))) is first  # read from JSON (its keys shared)
    other = good_instance()
    other["answer_gt"]["value"] = 2.0  # equal as answers, but other content
    assert cache.compile(other) is not first
    one, flag = good_instance(), good_instance()
    one["metadata"], flag["metadata"] = {"note": 1}, {"note": True}  # equal in Python, other content
    assert cache.compile(one) is not cache.compile(flag)
    assert (cache.hits, cache.misses, len(cache)) == (2, 4, 4)


def test_key_order_counts_but_changes_no_score() -> None:
    """The same content in another key order is compiled again (the key is exact bytes), with the same result."""
    cache = InstanceCache()
    first = cache.compile(good_instance())
    reordered = dict(reversed(list(good_instance().items())))
    again = cache.compile(reordered)
    assert again is not first and cache.misses == 2
    assert again.score(GOOD_RESPONSE) == first.score(GOOD_RESPONSE)


def test_a_group_compiles_its_instance_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_tasks.data import _cache as instances

    compiled = []
    real = instances.compile_instance
    monkeypatch.setattr(instances, "compile_instance", lambda data, **kw: compiled.append(1) or real(data, **kw))
    cache = InstanceCache()
    first = cache.compile(good_instance())
    assert all(cache.compile(good_instance()) is first for _ in range(7))  # a GRPO group of 8
    assert len(compiled) == 1 and (cache.hits, cache.misses) == (7, 1)


def test_cache_is_bounded_least_recently_used_first() -> None:
    cache = InstanceCache(maxsize=2)
    a, b, c = (good_instance(name) for name in "abc")
    compiled_a = cache.compile(a)
    cache.compile(b)
    assert cache.compile(a) is compiled_a  # a is now the most recent
    cache.compile(c)  # evicts b
    assert len(cache) == 2
    assert cache.compile(a) is compiled_a
    misses = cache.misses
    cache.compile(b)
    assert cache.misses == misses + 1
    assert len(InstanceCache(maxsize=0).compile(a).data) and len(InstanceCache(maxsize=0)) == 0
    with pytest.raises(ValueError, match="maxsize"):
        InstanceCache(maxsize=-1)


def test_cache_remembers_invalid_instances_by_content() -> None:
    cache = InstanceCache()
    broken = BROKEN[0].instance()
    with pytest.raises(InstanceError, match=r"^line 1: invalid instance: .*zero-area box") as first:
        cache.compile(broken, record="line 1")
    with pytest.raises(InstanceError, match=r"^line 9: invalid instance: ") as again:
        cache.compile(copy.deepcopy(broken), record="line 9")
    assert again.value.problems == first.value.problems
    assert (cache.hits, cache.misses) == (1, 1)


def test_cache_keys_numpy_values_with_their_dtype() -> None:
    cache = InstanceCache()
    data = good_instance()
    data["annotation_gt"]["value"] = np.array([0, 0, 10, 10])
    compiled = cache.compile(data)
    assert compiled.score(GOOD_RESPONSE)["overall"] == 1.0
    assert cache.compile(copy.deepcopy(data)) is compiled
    same_bits = good_instance()  # a float array of the int array's very bytes: other content, another key
    same_bits["annotation_gt"]["value"] = data["annotation_gt"]["value"].view(np.float64)
    assert same_bits["annotation_gt"]["value"].tobytes() == data["annotation_gt"]["value"].tobytes()
    other = cache.compile(same_bits)  # a box of denormal floats near 0: no longer the predicted box
    assert other is not compiled and other.score(GOOD_RESPONSE)["overall"] < 1.0
    assert cache.compile(data) is compiled


def test_cache_compiles_what_cannot_be_pickled_without_caching() -> None:
    cache = InstanceCache()
    data = good_instance()
    data["metadata"] = {"lock": threading.Lock()}
    compiled = cache.compile(data)
    assert compiled.score(GOOD_RESPONSE)["overall"] == 1.0
    assert len(cache) == 0 and cache.compile(data) is not compiled


def test_cache_empties_when_the_registry_is_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = InstanceCache()
    first = cache.compile(good_instance())
    monkeypatch.setattr(registry_module, "_current", plugins.build_registry())
    assert cache.compile(good_instance()) is not first
    assert len(cache) == 1


def _literal_set_map(keys: int) -> dict[str, Any]:
    """A bbox_set_map instance whose sets are Python-literal strings ``"[(x0, y0, x1, y1)]"``."""
    data = good_instance(f"literal-{keys}")
    value = {f"k{i}": f"[({i}, 0, {i + 10}, 10)]" for i in range(keys)}
    data["annotation_gt"] = {"type": "bbox_set_map", "value": value}
    data["reward_contract"] = contract(annotation_type="bbox_set_map")
    return data


def test_a_target_past_the_literal_budget_is_refused_where_the_lenient_scorer_gives_no_reward() -> None:
    data = _literal_set_map(400)  # 400 literal reads, each charged at least 64 characters: past 16 Ki
    response = '{"answer": 2, "annotation": {"k0": [[0, 0, 10, 10]]}}'
    lenient = score_trace_response(response=response, **{k: v for k, v in data.items() if k != "id"})
    assert lenient["annotation_parse_ok"] == 0.0  # the lenient scorer cannot parse it within the budget
    problems = instance_problems(data)
    assert [p.path for p in problems] == ["$.annotation_gt.value"]
    assert "MAX_TARGET_LITERAL_BUDGET" in problems[0].message and "JSON" in problems[0].message
    with pytest.raises(InstanceError):
        compile_instance(data)


def test_a_target_within_the_literal_budget_scores_alike_compiled_and_lenient() -> None:
    data = _literal_set_map(20)
    response = '{"answer": 2, "annotation": {"k0": [[0, 0, 10, 10]], "k1": [[1, 0, 11, 10]]}}'
    lenient = score_trace_response(response=response, **{k: v for k, v in data.items() if k != "id"})
    assert lenient["annotation_parse_ok"] == 1.0
    assert compile_instance(data).score(response) == lenient


def test_content_keys_ignore_sharing_and_keep_types() -> None:
    from trace_tasks.data._keys import content_key

    box = [0, 0, 10, 10]
    assert content_key([box, box]) == content_key([[0, 0, 10, 10], [0, 0, 10, 10]])  # sharing leaves no trace
    assert content_key({"v": 1}) != content_key({"v": 1.0}) != content_key({"v": True})
    assert content_key(np.array([1, 2])) != content_key(np.array([1, 2], dtype=np.int32))
    assert content_key(np.array([1, 2])) != content_key(np.array([[1, 2]]))  # same bytes, another shape
    cycle: list[Any] = []
    cycle.append(cycle)
    assert content_key(cycle) is None and content_key({"f": lambda: 0}) is None


def test_content_keys_from_reused_picklers_are_the_same_bytes() -> None:
    """Picklers are reused between keys: a failed key leaves no trace, and threads keying at once get each value's key."""
    import io

    from trace_tasks.data._keys import content_key

    def fresh(value: Any) -> bytes:  # what content_key computed with a new pickler per key
        out = io.BytesIO()
        pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.fast = True
        pickler.dump(value)
        return out.getvalue()

    values: list[Any] = [{"a": [1, 2.0, True, None, "x"]}, [[0, 0, 10, 10]] * 3, np.arange(4), {"k": {"v": -0.0}}]
    cycle: list[Any] = []
    cycle.append(cycle)
    for value in values:
        assert content_key(value) == fresh(value)
        assert content_key(cycle) is None and content_key({"f": lambda: 0}) is None  # a failure in between
        assert content_key(value) == fresh(value)
    found: list[list[bytes | None]] = []

    def key_all() -> None:
        found.append([content_key(value) for value in values * 50])

    threads = [threading.Thread(target=key_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [[fresh(value) for value in values * 50]] * 4


@pytest.mark.parametrize(
    ("field", "value", "path", "said"),
    [
        ("answer_gt", 1, "$.answer_gt", "must be a JSON object, got int"),
        ("answer_gt", [1], "$.answer_gt", "must be a JSON object, got list"),
        ("annotation_gt", None, "$.annotation_gt", "must be a JSON object, got null"),
        ("image_size", 1, "$.image_size", "must be [width, height], two numbers (or null)"),
        ("image_size", [1], "$.image_size", "must be [width, height], two numbers (or null)"),
        ("image_size", [1, 2, 3], "$.image_size", "must be [width, height], two numbers (or null)"),
    ],
)
def test_a_field_of_the_wrong_kind_says_what_it_must_be(field: str, value: Any, path: str, said: str) -> None:
    # The converter's own words were "unknown error ('int' object has no attribute 'keys')" and
    # "invalid value for type, expected Optional".
    problems = instance_problems({**good_instance(), field: value})
    assert (path, said) in [(p.path, p.message) for p in problems], problems
