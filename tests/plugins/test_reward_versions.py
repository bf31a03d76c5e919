"""A family offering ``..._v1`` beside ``..._v0`` (docs/plugins.md "Offering a new reward version").

With no user pin, only the owner's default (the id ``trace_resolve_reward_id``
names) is current: the builder emits it, the scorer honours only it, the
validator rejects the other, and the registry explains which id is current
(and the pin that would change it) when asked about the old one. Pins are
tested in ``test_contract_v2.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trace_tasks import (
    PluginValidationError,
    UnknownRewardIdError,
    get_registry,
    resolve_annotation_reward_contract_id,
    resolve_reward_contract,
    score_trace_response,
    validate_reward_contract_payload,
)

from .interval_family import V0, V1, IntervalFamily, giou01, iou

TARGET = [0.0, 10.0]
NEAR_MISS = [12.0, 20.0]  # disjoint: v0 gives 0, v1 gives partial credit
OVERLAP = [5.0, 15.0]


def _contract(reward_id: str) -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": reward_id, "type": "interval"},
    }


def _score(prediction: Any, reward_contract: Any) -> dict[str, float]:
    return score_trace_response(
        response=json.dumps({"answer": 4, "annotation": prediction}),
        answer_gt={"type": "integer", "value": 4},
        annotation_gt={"type": "interval", "value": TARGET},
        reward_contract=reward_contract,
    )


@pytest.fixture
def family(register: Any) -> IntervalFamily:
    plugin = IntervalFamily(current=V1)
    register(plugin, "interval")
    return plugin


def test_both_versions_are_declared_and_v1_is_current(family: IntervalFamily) -> None:
    registry = get_registry()
    entry = registry.annotation_types["interval"]
    assert entry.reward_ids == (V0, V1)
    assert entry.current_reward_id == V1
    assert registry.reward_ids[V1].current and not registry.reward_ids[V0].current
    assert resolve_annotation_reward_contract_id(" interval ") == V1


def test_builder_emits_the_current_id(family: IntervalFamily) -> None:
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval")
    assert contract.to_dict() == _contract(V1)
    assert validate_reward_contract_payload(contract.to_dict(), answer_type="integer", annotation_type="interval") is None


def test_scorer_uses_the_current_version(family: IntervalFamily) -> None:
    built = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    near = _score(NEAR_MISS, built)
    assert near["annotation_parse_ok"] == 1.0
    assert near["annotation_reward"] == pytest.approx(giou01((12.0, 20.0), (0.0, 10.0)))
    assert 0.0 < near["annotation_reward"] < 0.5 and iou((12.0, 20.0), (0.0, 10.0)) == 0.0
    assert near["annotation_interval_reward_version"] == 1.0
    assert ("trace_score_annotation", (V1,)) in family.calls


def test_contract_naming_the_old_id_gets_no_annotation_reward(family: IntervalFamily) -> None:
    result = _score(OVERLAP, _contract(V0))
    assert result["annotation_reward"] == 0.0 and result["annotation_parse_ok"] == 0.0
    assert result["answer_reward"] == 1.0  # the answer is still scored
    assert result["annotation_type_interval"] == 1.0
    assert "annotation_interval_reward_version" not in result
    # The gate stops before the plugin: no version was asked to score anything.
    assert not any(name == "trace_score_annotation" for name, _ in family.calls)


def test_validator_rejects_the_old_id(family: IntervalFamily) -> None:
    message = validate_reward_contract_payload(_contract(V0), answer_type="integer", annotation_type="interval")
    assert message is not None and V1 in message
    # Rule 6 holds even without the instance's types: a non-current id is never valid.
    assert validate_reward_contract_payload(_contract(V0)) is not None


def test_check_reward_id_names_the_current_id_for_an_old_one(family: IntervalFamily) -> None:
    registry = get_registry()
    assert registry.check_reward_id(V1).annotation_type == "interval"
    with pytest.raises(UnknownRewardIdError, match=f"current id is '{V1}'"):
        registry.check_reward_id(V0)


@pytest.mark.parametrize("typo", ["interval_iou_vl", "intervall_iou_v1", "interval_iuo_v1"])
def test_check_reward_id_suggests_a_near_match_for_a_misspelled_id(family: IntervalFamily, typo: str) -> None:
    with pytest.raises(UnknownRewardIdError, match=r"did you mean .*'interval_iou_v1'") as caught:
        get_registry().check_reward_id(typo)
    assert isinstance(caught.value, ValueError)  # callers catching ValueError keep working


def test_the_family_not_the_core_chooses_the_version(register: Any) -> None:
    """Declaring v1 does not make it current: the owner's default is, the builder never picks "the latest" itself."""
    register(IntervalFamily(current=V0), "interval")
    assert resolve_reward_contract(answer_type="integer", annotation_type="interval").annotation.id == V0
    assert _score(OVERLAP, _contract(V0))["annotation_reward"] == pytest.approx(iou((5.0, 15.0), (0.0, 10.0)))
    assert _score(OVERLAP, _contract(V1))["annotation_parse_ok"] == 0.0


def test_current_id_must_be_declared(register: Any) -> None:
    with pytest.raises(PluginValidationError, match="interval_iou_v2"):
        register(IntervalFamily(current="interval_iou_v2"), "interval")
    # Nothing was left registered by the failed attempt.
    assert "interval" not in get_registry().annotation_types


def test_plugin_answer_type_is_usable_in_contracts_and_scoring(family: IntervalFamily) -> None:
    contract = resolve_reward_contract(answer_type="hex_color", annotation_type="interval").to_dict()
    assert contract["answer"] == {"id": "answer_exact_match_v0", "type": "hex_color"}
    result = score_trace_response(
        response=json.dumps({"answer": " #FFAA00 ", "annotation": TARGET}),
        answer_gt={"type": "hex_color", "value": "#ffaa00"},
        annotation_gt={"type": "interval", "value": TARGET},
        reward_contract=contract,
    )
    assert result["answer_reward"] == 1.0 and result["annotation_reward"] == 1.0


def test_unregistering_removes_the_family(register: Any) -> None:
    from trace_tasks.plugins import unregister_plugin

    register(IntervalFamily(), "interval")
    assert "interval" in get_registry().annotation_types
    unregister_plugin("interval")
    assert "interval" not in get_registry().annotation_types
    with pytest.raises(ValueError, match="unsupported annotation type"):
        resolve_annotation_reward_contract_id("interval")
