"""Shared builders and the checks every hostile case must pass."""

from __future__ import annotations

import math
from typing import Any

from trace_tasks import score_trace_response
from trace_tasks.core.reward_contracts import resolve_annotation_reward_contract_id
from trace_tasks.scoring import FLAG_KEYS, REWARD_KEYS

# The reward and flag keys come from the library; tests/core/helpers.py holds the tests' one independent copy.


def contract(annotation_type: str, answer_type: str = "integer") -> dict[str, Any]:
    """The current reward contract of an instance with these types."""
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": answer_type},
        "annotation": {"id": resolve_annotation_reward_contract_id(annotation_type), "type": annotation_type},
    }


def score(
    response: str,
    *,
    answer: Any = 7,
    answer_type: str = "integer",
    annotation_type: str = "bbox",
    annotation: Any = (0, 0, 10, 10),
    mode: str = "answer_and_annotation",
    **options: Any,
) -> dict[str, float]:
    """Score ``response`` against a small instance, then run :func:`check_result` on it."""
    result = score_trace_response(
        response=response,
        answer_gt={"type": answer_type, "value": answer},
        annotation_gt={"type": annotation_type, "value": list(annotation) if isinstance(annotation, tuple) else annotation},
        reward_contract=contract(annotation_type, answer_type),
        trace_reward_mode=mode,
        **options,
    )
    check_result(result)
    return result


def check_result(result: dict[str, float]) -> None:
    """Every value a finite float, every reward in [0, 1], every flag 0 or 1."""
    assert isinstance(result, dict)
    for key, value in result.items():
        assert type(value) is float, (key, value)
        assert math.isfinite(value), (key, value)
    for key in REWARD_KEYS:
        assert 0.0 <= result[key] <= 1.0, (key, result[key])
    for key in FLAG_KEYS:
        assert result[key] in (0.0, 1.0), (key, result[key])
    assert result["zero_reward"] == (1.0 if result["task_reward_raw"] == 0.0 else 0.0)


def flags(result: dict[str, float]) -> dict[str, float]:
    """The diagnostic flags of a result (what the corpus states for each case)."""
    return {
        "json_found": result["json_found"],
        "format_structure_ok": result["format_structure_ok"],
        "format_json_ok": result["format_json_ok"],
        "format_schema_ok": result["format_schema_ok"],
        "answer_parse_ok": result["answer_parse_ok"],
        "annotation_parse_ok": result["annotation_parse_ok"],
    }


def expect(
    *, found: float, structure: float, json_ok: float, schema: float, answer_ok: float = 1.0, annotation_ok: float
) -> dict[str, float]:
    """Expected flags, spelled short."""
    return {
        "json_found": found,
        "format_structure_ok": structure,
        "format_json_ok": json_ok,
        "format_schema_ok": schema,
        "answer_parse_ok": answer_ok,
        "annotation_parse_ok": annotation_ok,
    }


#: Nothing recovered: no final block, no mapping.
NOTHING = expect(found=0.0, structure=0.0, json_ok=0.0, schema=0.0, annotation_ok=0.0)
#: A balanced final object that does not parse, and nothing else recovered.
UNPARSED_BLOCK = expect(found=0.0, structure=1.0, json_ok=0.0, schema=0.0, annotation_ok=0.0)
#: A well-formed final object with exactly the answer-and-annotation keys.
WELL_FORMED = expect(found=1.0, structure=1.0, json_ok=1.0, schema=1.0, annotation_ok=1.0)
#: Well-formed object whose annotation does not parse.
BAD_ANNOTATION = expect(found=1.0, structure=1.0, json_ok=1.0, schema=1.0, annotation_ok=0.0)
