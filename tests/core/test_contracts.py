"""Reward contracts (docs/contracts.md §9 and §10), the resolver, and the contract gate (§5.6)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import trace_plugins_bbox.plugin
from trace_tasks import (
    ANSWER_REWARD_CONTRACT_ID,
    REWARD_CONTRACT_VERSION,
    AnnotationParseError,
    AnnotationScore,
    AnnotationTypeSpec,
    MissingFamilyError,
    PluginConflictError,
    RewardContract,
    ScoringContext,
    get_registry,
    hookimpl,
    plugins,
    resolve_annotation_reward_contract_id,
    resolve_reward_contract,
    score_trace_response,
    validate_reward_contract_payload,
)
from trace_tasks.core.reward_contracts import contract_problems
from trace_tasks.plugins import _registry as registry_module

from ..support.resolver_table import RESOLVER_TABLE
from .helpers import LEADING_KEYS, contract

#: docs/contracts.md §10, exactly.
RESOLVER_TABLE = RESOLVER_TABLE


def valid_payload() -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "bbox_set_soft_iou_v0", "type": "bbox_set"},
    }


def with_change(path: Sequence[str], value: Any) -> dict[str, Any]:
    payload = copy.deepcopy(valid_payload())
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return payload


# --- constants and resolver table ------------------------------------------------------------


def test_constants() -> None:
    assert REWARD_CONTRACT_VERSION == "v0"
    assert ANSWER_REWARD_CONTRACT_ID == "answer_exact_match_v0"


@pytest.mark.parametrize(("annotation_type", "reward_id"), sorted(RESOLVER_TABLE.items()))
def test_resolver_table_is_the_documented_one(annotation_type: str, reward_id: str) -> None:
    assert resolve_annotation_reward_contract_id(annotation_type) == reward_id


def test_installed_types_are_exactly_the_resolver_table() -> None:
    registry = get_registry()
    assert {name: entry.current_reward_id for name, entry in registry.annotation_types.items()} == RESOLVER_TABLE


def test_resolver_strips_the_type() -> None:
    assert resolve_annotation_reward_contract_id("  bbox\n") == "bbox_soft_iou_v0"


@pytest.mark.parametrize("empty", ["", "   ", None, 5])
def test_resolver_rejects_an_empty_type(empty: Any) -> None:
    with pytest.raises(ValueError, match="reward_contract requires a non-empty annotation type"):
        resolve_annotation_reward_contract_id(empty)


@pytest.mark.parametrize("unknown", ["polygon", "integer", "BBOX", "physics_point_map", "bbox_soft_iou_v0"])
def test_resolver_rejects_an_unknown_type(unknown: str) -> None:
    with pytest.raises(ValueError, match=f"^unsupported annotation type for reward_contract: {unknown}"):
        resolve_annotation_reward_contract_id(unknown)


def test_resolver_suggests_a_close_name() -> None:
    with pytest.raises(ValueError, match="did you mean 'bbox_set'"):
        resolve_annotation_reward_contract_id("bbox_sett")


def test_resolve_reward_contract() -> None:
    resolved = resolve_reward_contract(answer_type=" string ", annotation_type=" point_set ")
    assert isinstance(resolved, RewardContract)
    assert resolved.to_dict() == {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "string"},
        "annotation": {"id": "point_set_soft_distance_v0", "type": "point_set"},
    }
    assert (resolved.answer.id, resolved.annotation.type) == ("answer_exact_match_v0", "point_set")


@pytest.mark.parametrize(
    "answer_type", ["integer", "number", "string", "boolean", "option_letter", "pi_expression", "index_list", "matrix"]
)
def test_every_answer_type_uses_exact_match(answer_type: str) -> None:
    assert resolve_reward_contract(answer_type=answer_type, annotation_type="bbox").answer.id == "answer_exact_match_v0"


def test_resolve_reward_contract_rejects_bad_types() -> None:
    with pytest.raises(ValueError, match="non-empty answer type"):
        resolve_reward_contract(answer_type="", annotation_type="bbox")
    with pytest.raises(ValueError, match="non-empty annotation type"):
        resolve_reward_contract(answer_type="integer", annotation_type=" ")
    with pytest.raises(ValueError, match="unsupported annotation type for reward_contract: mask"):
        resolve_reward_contract(answer_type="integer", annotation_type="mask")
    with pytest.raises(ValueError, match="unsupported answer type"):
        resolve_reward_contract(answer_type="fraction", annotation_type="bbox")


# --- validate_reward_contract_payload: one test per rule and per message ---------------------


def test_valid_payload_passes() -> None:
    assert validate_reward_contract_payload(valid_payload()) is None
    assert validate_reward_contract_payload(valid_payload(), answer_type="integer", annotation_type="bbox_set") is None
    assert validate_reward_contract_payload(valid_payload(), answer_type=" integer ", annotation_type=" bbox_set ") is None


@pytest.mark.parametrize("payload", [None, [], "v0", 5])
def test_payload_must_be_an_object(payload: Any) -> None:
    assert validate_reward_contract_payload(payload) == "reward_contract must be an object"


@pytest.mark.parametrize("version", ["v1", "V0", " v0", 0, None])
def test_rule_1_version_is_v0(version: Any) -> None:
    message = "reward_contract_version must be 'v0'"
    assert validate_reward_contract_payload(with_change(["reward_contract_version"], version)) == message
    payload = valid_payload()
    del payload["reward_contract_version"]
    assert validate_reward_contract_payload(payload) == message


@pytest.mark.parametrize("side", ["answer", "annotation"])
@pytest.mark.parametrize("value", [None, "x", ["id", "type"]])
def test_sides_must_be_objects(side: str, value: Any) -> None:
    assert validate_reward_contract_payload(with_change([side], value)) == (
        f"reward_contract.{side} must be an object with keys {{id, type}}"
    )


@pytest.mark.parametrize("side", ["answer", "annotation"])
@pytest.mark.parametrize("key", ["id", "type"])
@pytest.mark.parametrize("value", ["", "  ", None, 5])
def test_side_fields_must_be_non_empty_strings(side: str, key: str, value: Any) -> None:
    assert validate_reward_contract_payload(with_change([side, key], value)) == (
        f"reward_contract.{side}.{key} must be a non-empty string"
    )


@pytest.mark.parametrize("answer_id", ["answer_fuzzy", "answer_exact_match_v1", "answer_exact_match"])
def test_rule_2_answer_id_is_exact_match_v0(answer_id: str) -> None:
    assert validate_reward_contract_payload(with_change(["answer", "id"], answer_id)) == (
        "reward_contract.answer.id must be 'answer_exact_match_v0'"
    )


def test_rule_3_answer_type_matches_answer_gt() -> None:
    assert validate_reward_contract_payload(valid_payload(), answer_type="number") == (
        "reward_contract.answer.type must match answer_gt.type"
    )


def test_rule_4_annotation_id_is_the_resolver_output() -> None:
    payload = with_change(["annotation", "id"], "point_set_soft_distance_v0")
    assert validate_reward_contract_payload(payload, answer_type="integer", annotation_type="bbox_set") == (
        "reward_contract.annotation.id must match the resolved contract for annotation_gt.type (bbox_set_soft_iou_v0)"
    )


def test_rule_4_without_annotation_gt_checks_the_payloads_own_type() -> None:
    # The id must be the one resolved for the type the payload itself declares (helper record
    # aux-0099 recorded the old behaviour, where any current id passed: tests/conformance/deviations.tsv).
    payload = with_change(["annotation", "id"], "point_set_soft_distance_v0")
    assert validate_reward_contract_payload(payload) == (
        "reward_contract.annotation.id must match the resolved contract for reward_contract.annotation.type "
        "(bbox_set_soft_iou_v0)"
    )
    assert validate_reward_contract_payload(payload, answer_type="integer") == validate_reward_contract_payload(payload)
    assert validate_reward_contract_payload(valid_payload()) is None


def test_rule_4_without_annotation_gt_needs_a_known_declared_type() -> None:
    payload = with_change(["annotation", "type"], "polygon")
    message = validate_reward_contract_payload(payload)
    assert message is not None and message.startswith("unsupported annotation type for reward_contract: polygon")


def test_every_broken_rule_is_listed_with_its_path() -> None:
    payload = with_change(["reward_contract_version"], "v9")
    payload["answer"]["id"] = "bogus"
    payload["annotation"] = {"id": "bbox_soft_iou_v9", "type": "bbox"}
    problems = contract_problems(payload, answer_type="number", annotation_type="bbox")
    assert [(p.rule, p.path) for p in problems] == [
        ("version", "$.reward_contract.reward_contract_version"),
        ("answer_id", "$.reward_contract.answer.id"),
        ("current", "$.reward_contract.annotation.id"),
        ("answer_type", "$.reward_contract.answer.type"),
    ]
    assert problems[0].message == validate_reward_contract_payload(payload)  # the documented first message
    assert "got 'v9'" in problems[0].explained
    assert "the current id for annotation type 'bbox' is 'bbox_soft_iou_v0'" in problems[2].explained


def test_rule_5_annotation_type_matches_annotation_gt() -> None:
    message = "reward_contract.annotation.type must match annotation_gt.type"
    assert validate_reward_contract_payload(valid_payload(), annotation_type="bbox") == message
    assert validate_reward_contract_payload(valid_payload(), annotation_type="polygon") == message


def test_unknown_annotation_gt_type_is_reported() -> None:
    payload = with_change(["annotation", "type"], "polygon")
    message = validate_reward_contract_payload(payload, annotation_type="polygon")
    assert message is not None and message.startswith("unsupported annotation type for reward_contract: polygon")


@pytest.mark.parametrize("reward_id", ["bbox_set_soft_iou_v9", "bbox_set_soft_iou", "bbox_set_iou_v0", "BBOX_SET_SOFT_IOU_V0"])
def test_rule_6_non_current_ids_are_rejected(reward_id: str) -> None:
    assert validate_reward_contract_payload(with_change(["annotation", "id"], reward_id)) == (
        "reward_contract.annotation.id must be one of {" + ", ".join(sorted(RESOLVER_TABLE.values())) + "}"
    )


# --- missing official families ---------------------------------------------------------------


@pytest.fixture
def no_families(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core alone: a registry built without entry points (restored afterwards)."""
    monkeypatch.setattr(registry_module, "_current", plugins.build_registry(load_entry_points=False))


@pytest.fixture
def bbox_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only trace-plugins-bbox installed."""
    registry = plugins.build_registry([("bbox", trace_plugins_bbox.plugin.family)], load_entry_points=False)
    monkeypatch.setattr(registry_module, "_current", registry)


@pytest.mark.parametrize(
    ("annotation_type", "distribution"),
    [("bbox", "trace-plugins-bbox"), ("point_set_map", "trace-plugins-point"), ("segment", "trace-plugins-segment")],
)
def test_missing_family_names_the_package(no_families: None, annotation_type: str, distribution: str) -> None:
    with pytest.raises(MissingFamilyError, match=f"pip install {distribution}") as info:
        resolve_annotation_reward_contract_id(annotation_type)
    assert not isinstance(info.value, ValueError)
    assert isinstance(info.value, ImportError)
    assert (info.value.annotation_type, info.value.distribution) == (annotation_type, distribution)
    with pytest.raises(MissingFamilyError):
        resolve_reward_contract(answer_type="integer", annotation_type=annotation_type)


def test_missing_family_is_per_family(bbox_only: None) -> None:
    assert resolve_annotation_reward_contract_id("bbox_set") == "bbox_set_soft_iou_v0"
    with pytest.raises(MissingFamilyError, match="pip install trace-plugins-point"):
        resolve_annotation_reward_contract_id("point")
    with pytest.raises(ValueError, match="unsupported annotation type"):
        resolve_annotation_reward_contract_id("polygon")


def test_validation_surfaces_a_missing_family(bbox_only: None) -> None:
    payload = {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "point_soft_distance_v0", "type": "point"},
    }
    with pytest.raises(MissingFamilyError, match="trace-plugins-point"):
        validate_reward_contract_payload(payload)


POINT_CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "point_soft_distance_v0", "type": "point"},
}


def score_point(mode: str) -> dict[str, float]:
    return score_trace_response(
        response='{"answer": 7, "annotation": [1, 2]}',
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "point", "value": [1, 2]},
        reward_contract=POINT_CONTRACT,
        trace_reward_mode=mode,
    )


def test_scoring_a_missing_family_raises_in_answer_and_annotation_mode(bbox_only: None) -> None:
    with pytest.raises(MissingFamilyError, match="pip install trace-plugins-point"):
        score_point("answer_and_annotation")


def test_answer_mode_serves_without_the_family(no_families: None) -> None:
    result = score_point("answer")
    assert result["answer_reward"] == 1.0
    assert result["overall"] == 1.0
    assert result["annotation_parse_ok"] == 0.0
    assert result["annotation_reward"] == 0.0
    assert list(result) == list(LEADING_KEYS)  # no installed types: no one-hot, no diagnostics


# --- a family registered in-process ---------------------------------------------------------


class WidgetFamily:
    """A tiny family: ``test_widget`` annotations are labels; the reward is an exact hit."""

    @hookimpl
    def trace_annotation_types(self) -> Sequence[AnnotationTypeSpec]:
        return [AnnotationTypeSpec("test_widget", ("test_widget_hit_v0", "test_widget_hit_v1"))]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "test_widget_hit_v1" if annotation_type == "test_widget" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise AnnotationParseError("a widget label is a non-empty string")
        return value.strip()

    @hookimpl
    def trace_score_annotation(self, reward_id: str, prediction: str, target: str, context: ScoringContext) -> AnnotationScore:
        hit = 1.0 if prediction == target else 0.0
        return AnnotationScore(hit, {"annotation_widget_hit": hit, "annotation_widget_half_life_px": context.half_life_px})


@pytest.fixture
def widget_family() -> Iterator[None]:
    plugins.register_plugin(WidgetFamily(), "test-widget-family")
    try:
        yield
    finally:
        plugins.unregister_plugin("test-widget-family")


def widget_contract(reward_id: str = "test_widget_hit_v1") -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": reward_id, "type": "test_widget"},
    }


def test_family_resolves_its_current_id(widget_family: None) -> None:
    assert resolve_annotation_reward_contract_id("test_widget") == "test_widget_hit_v1"
    assert resolve_reward_contract(answer_type="integer", annotation_type="test_widget").to_dict() == widget_contract()
    assert resolve_annotation_reward_contract_id("bbox") == "bbox_soft_iou_v0"  # official families still there


def test_family_contract_validation(widget_family: None) -> None:
    assert validate_reward_contract_payload(widget_contract(), annotation_type="test_widget") is None
    retired = validate_reward_contract_payload(widget_contract("test_widget_hit_v0"))
    assert retired is not None and retired.startswith("reward id 'test_widget_hit_v0' is not current: rebuild the contracts")
    assert "(they will name 'test_widget_hit_v1')" in retired
    assert "; reward_contract.annotation.id must be one of {" in retired  # the rule, last


def test_family_scores_through_the_core(widget_family: None) -> None:
    result = score_trace_response(
        response='{"answer": 7, "annotation": " knob "}',
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "test_widget", "value": "knob"},
        reward_contract=widget_contract(),
        point_half_life_px=12,
    )
    assert result["annotation_reward"] == 1.0
    assert result["annotation_parse_ok"] == 1.0
    assert result["overall"] == 1.0
    keys = list(result)
    assert keys[-3:] == ["annotation_type_test_widget", "annotation_widget_hit", "annotation_widget_half_life_px"]
    assert result["annotation_type_test_widget"] == 1.0
    assert result["annotation_widget_half_life_px"] == 12.0


def test_retired_family_id_gets_no_annotation_reward(widget_family: None) -> None:
    result = score_trace_response(
        response='{"answer": 7, "annotation": "knob"}',
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "test_widget", "value": "knob"},
        reward_contract=widget_contract("test_widget_hit_v0"),
    )
    assert (result["annotation_reward"], result["annotation_parse_ok"]) == (0.0, 0.0)


def test_unregistering_removes_the_family() -> None:
    plugins.register_plugin(WidgetFamily(), "test-widget-family")
    plugins.unregister_plugin("test-widget-family")
    with pytest.raises(ValueError, match="unsupported annotation type"):
        resolve_annotation_reward_contract_id("test_widget")


def test_register_plugin_refuses_conflicts(widget_family: None) -> None:
    with pytest.raises(PluginConflictError):
        plugins.register_plugin(WidgetFamily(), "test-widget-family")
    with pytest.raises(PluginConflictError, match="test_widget"):
        plugins.register_plugin(WidgetFamily(), "another-widget-family")
    # The refused plugins left no trace: the registry still builds and has one owner.
    assert get_registry().annotation_types["test_widget"].plugin == "test-widget-family"


# --- the contract gate while scoring --------------------------------------------------------


def gate(
    annotation_gt: Any, reward_contract: Any, response: str = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
) -> tuple[float, float]:
    result = score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 7},
        annotation_gt=annotation_gt,
        reward_contract=reward_contract,
    )
    return result["annotation_reward"], result["annotation_parse_ok"]


BOX = {"type": "bbox", "value": [0, 0, 10, 10]}


def test_gate_open_for_a_resolved_contract() -> None:
    assert gate(BOX, contract()) == (1.0, 1.0)
    assert gate({"type": " bbox ", "value": [0, 0, 10, 10]}, contract()) == (1.0, 1.0)


@pytest.mark.parametrize("annotation_gt", [None, [0, 0, 10, 10], {"value": [0, 0, 10, 10]}, {"type": 5, "value": [0, 0, 10, 10]}])
def test_gate_closed_for_an_untyped_annotation_gt(annotation_gt: Any) -> None:
    assert gate(annotation_gt, contract()) == (0.0, 0.0)


def test_gate_closed_for_an_unknown_type() -> None:
    assert gate({"type": "polygon", "value": [0, 0, 10, 10]}, contract()) == (0.0, 0.0)


def test_gate_closed_when_the_contract_type_differs() -> None:
    mismatched = contract()
    mismatched["annotation"]["type"] = "bbox_set"
    assert gate(BOX, mismatched) == (0.0, 0.0)


@pytest.mark.parametrize("reward_id", ["bbox_set_soft_iou_v0", "bbox_soft_iou_v1", "", None])
def test_gate_closed_when_the_contract_id_is_not_current_for_the_type(reward_id: Any) -> None:
    wrong = contract()
    wrong["annotation"]["id"] = reward_id
    assert gate(BOX, wrong) == (0.0, 0.0)


@pytest.mark.parametrize("reward_contract", [None, {}, {"annotation": None}, "bbox_soft_iou_v0"])
def test_gate_closed_without_an_annotation_contract(reward_contract: Any) -> None:
    assert gate(BOX, reward_contract) == (0.0, 0.0)


@pytest.mark.parametrize("response", ['{"answer": 7}', '{"answer": 7, "annotation": null}'])
def test_missing_prediction_scores_zero(response: str) -> None:
    assert gate(BOX, contract(), response) == (0.0, 0.0)


def test_parsing_follows_the_declared_type() -> None:
    # A box is not a point, and a scalar contract rejects a set-shaped value.
    point_gt = {"type": "point", "value": [5, 5]}
    assert gate(point_gt, contract(annotation_type="point")) == (0.0, 0.0)
    assert gate(BOX, contract(), '{"answer": 7, "annotation": [[0, 0, 10, 10]]}') == (0.0, 0.0)
