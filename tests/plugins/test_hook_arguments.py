"""Hook implementations may name only some of the spec's arguments, as pluggy allows.

The core calls the parse and score implementations directly (not through
pluggy), so it must pass each one only the arguments it names; otherwise such a
plugin would fail with a TypeError on every response, silently counted as a
parse failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_tasks import AnnotationScore, AnnotationTypeSpec, hookimpl, score_trace_response


class TerseFamily:
    """A family whose hooks name as few arguments as pluggy permits."""

    @hookimpl
    def trace_annotation_types(self) -> Sequence[AnnotationTypeSpec]:
        return [AnnotationTypeSpec("tally", ("tally_exact_v0",))]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "tally_exact_v0" if annotation_type == "tally" else None

    @hookimpl
    def trace_parse_annotation(self, value: object) -> int:
        return int(value)  # type: ignore[call-overload]

    @hookimpl
    def trace_score_annotation(self, prediction: int, target: int) -> AnnotationScore:
        return AnnotationScore(1.0 if prediction == target else 0.0, {"annotation_tally_difference": float(prediction - target)})


def test_implementations_with_fewer_arguments_are_called_correctly(register: Any) -> None:
    register(TerseFamily(), "terse")
    contract = {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "tally_exact_v0", "type": "tally"},
    }
    result = score_trace_response(
        response='{"answer": 1, "annotation": 5}',
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "tally", "value": 5},
        reward_contract=contract,
    )
    assert result["annotation_parse_ok"] == 1.0 and result["annotation_reward"] == 1.0
    assert result["annotation_tally_difference"] == 0.0
