"""``response_json_schema`` and the scorer agree both ways, on every type pair (issue 37, item 16).

* What the schema accepts parses: a constrained decoder held to the schema
  never writes a map key the parser refuses (blank, or one key twice once
  stripped) and so never earns a parse failure it could not avoid.
* What validation accepts as a target, written as canonical JSON (map keys
  stripped, as the parser reads them), the schema accepts: the one answer that scores is never outside the schema
  (``index_list`` targets such as ``[[1, 2], [3, 4]]``).

Values are checked with the ``jsonschema`` package (installed with the dev
group's ``ray`` extra) and with the dependency-free ``schema_problems``, which
must agree. The geometry a schema cannot state (``x0 < x1``, finite floats) is
kept valid in the generated values, as docs/contracts.md §3.8 says.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest

from trace_tasks import get_registry, instance_problems, response_json_schema, score_trace_response
from trace_tasks.family import schema_problems

from .helpers import contract

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the dev group (ray's dependency)")

ANSWER_TYPES = ("integer", "number", "string", "boolean", "option_letter", "pi_expression", "index_list", "matrix")
ANNOTATION_TYPES = sorted(get_registry().annotation_types)
#: Keys that stay distinct once stripped, and spellings the parser refuses or merges.
GOOD_KEYS = ("a", "B", "left hand", "x\ny", "ключ")
BAD_KEY_SETS = ([""], [" "], ["\t"], [" a"], ["a "], ["a\n"], ["a", " a"], ["a", "a\n"], ["\u00a0b"])
#: Answers a target may hold (validation's view), beyond each type's examples.
EXTRA_ANSWERS: dict[str, list[Any]] = {
    "index_list": [[[1, 2], [3, 4]], [0], ["a", 2], [[0], [[1]]], [1.5], [True], [{"k": 1}]],
    "matrix": [[[1, 2], [3, 4]], {"a": [1, 2]}, [[0.5]], {"r": {"c": 1}}],
    "integer": [0, -3],
    "number": [0.25, -1],
    "string": ["two words"],
}


def _annotation_values(name: str) -> list[Any]:
    """The type's examples, and for maps the same items under good and bad key sets."""
    spec = get_registry().annotation_types[name].spec
    assert spec is not None
    values: list[Any] = [copy.deepcopy(v) for v in spec.examples]
    if spec.shape in ("map", "set_map"):
        items = list(spec.examples[0].values())
        for keys in [*([k] for k in GOOD_KEYS), list(GOOD_KEYS[:3]), *BAD_KEY_SETS]:
            values.append({key: items[i % len(items)] for i, key in enumerate(keys)})
    return values


def _answers(answer_type: str) -> list[Any]:
    spec = get_registry().answer_types[answer_type]
    return [copy.deepcopy(v) for v in spec.examples] + EXTRA_ANSWERS.get(answer_type, [])


def _valid(value: Any, schema: dict[str, Any]) -> bool:
    by_package = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert by_package == (not schema_problems(value, schema)), (value, schema_problems(value, schema))
    return bool(by_package)


def _instance(answer_type: str, answer: Any, annotation_type: str, annotation: Any) -> dict[str, Any]:
    return {
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": annotation_type, "value": annotation},
        "reward_contract": contract(answer_type, annotation_type),
    }


@pytest.mark.parametrize("annotation_type", ANNOTATION_TYPES)
def test_what_the_schema_accepts_parses(annotation_type: str) -> None:
    checked = refused = 0
    for answer_type in ANSWER_TYPES:
        schema = response_json_schema(answer_type=answer_type, annotation_type=annotation_type)
        target = _instance(answer_type, _answers(answer_type)[0], annotation_type, _annotation_values(annotation_type)[0])
        for answer, annotation in itertools.product(_answers(answer_type)[:2], _annotation_values(annotation_type)):
            obj = {"answer": answer, "annotation": annotation}
            result = score_trace_response(response=json.dumps(obj, ensure_ascii=False), **target)
            parses = result["json_found"] == 1.0 and result["annotation_parse_ok"] == 1.0
            if _valid(obj, schema):
                checked += 1
                assert parses, (answer_type, annotation_type, obj)
            else:
                refused += 1
    assert checked and (refused or get_registry().annotation_types[annotation_type].spec.shape not in ("map", "set_map"))


@pytest.mark.parametrize("answer_type", ANSWER_TYPES)
def test_every_target_validation_accepts_is_inside_the_schema(answer_type: str) -> None:
    accepted = 0
    for annotation_type in ANNOTATION_TYPES:
        schema = response_json_schema(answer_type=answer_type, annotation_type=annotation_type)
        for answer in _answers(answer_type):
            for annotation in _annotation_values(annotation_type):
                if instance_problems(_instance(answer_type, answer, annotation_type, annotation)):
                    continue
                accepted += 1
                if isinstance(annotation, dict):  # the canonical keys: stripped, as the parser reads the target's
                    annotation = {key.strip(): value for key, value in annotation.items()}
                perfect = json.loads(json.dumps({"answer": answer, "annotation": annotation}))
                assert _valid(perfect, schema), (answer_type, annotation_type, perfect)
    assert accepted


def test_the_issue_cases() -> None:
    schema = response_json_schema(answer_type="index_list", annotation_type="point_map")
    assert _valid({"answer": [[1, 2], [3, 4]], "annotation": {"a": [1, 2]}}, schema)
    for keys in ([""], [" "], ["a", " a"]):
        assert not _valid({"answer": [1], "annotation": {k: [1, 2] for k in keys}}, schema), keys
