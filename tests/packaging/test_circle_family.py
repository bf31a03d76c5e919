"""A third-party family (``examples/circle_family``) installed beside the trace-core wheel.

The trace-core wheel is built from the repository as it is: if these tests pass,
a new family needs no change in the core. Everything goes through the public
API in a fresh virtual environment: ``resolve_reward_contract``,
``validate_reward_contract_payload``, ``score_trace_response`` and the
``trace-tasks plugins`` console script.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ..support.resolver_table import RESOLVER_TABLE

pytestmark = [pytest.mark.packaging, pytest.mark.slow]

CORE = "trace-core"
CIRCLE = "trace-plugins-circle"
OFFICIAL = ("trace-plugins-bbox", "trace-plugins-point", "trace-plugins-segment")
CIRCLE_TABLE = {"circle": "circle_soft_iou_v0", "circle_set": "circle_set_soft_iou_v0"}

#: Two unit circles whose centres are 1 apart: the lens is 2·(π/3) - √3/2 (two
#: 60° sectors minus the rhombus of side 1), so IoU = lens / (2π - lens).
LENS = 2 * math.pi / 3 - math.sqrt(3) / 2
UNIT_PAIR_IOU = LENS / (2 * math.pi - LENS)

#: name -> (annotation type, target value, predicted annotation, expected reward or None for parse failure)
CASES: dict[str, tuple[str, Any, Any, float | None]] = {
    "identical": ("circle", [10, 10, 5], [10, 10, 5], 1.0),
    "partial_unit_pair": ("circle", [0, 0, 1], [1, 0, 1], UNIT_PAIR_IOU),
    "contained": ("circle", [0, 0, 2], [0, 0, 1], 0.25),
    "disjoint": ("circle", [0, 0, 1], [5, 0, 1], 0.0),
    "string_value": ("circle", [10, 10, 5], "(10, 10, 5)", 1.0),
    "zero_radius": ("circle", [10, 10, 5], [10, 10, 0], None),
    "negative_radius": ("circle", [10, 10, 5], [10, 10, -5], None),
    "boolean_coordinate": ("circle", [10, 10, 5], [True, 10, 5], None),
    "set_permuted": ("circle_set", [[0, 0, 1], [40, 40, 8]], [[40, 40, 8], [0, 0, 1]], 1.0),
    "set_extra_circle": ("circle_set", [[0, 0, 1]], [[0, 0, 1], [50, 50, 1]], 0.5),
    "set_missing_circle": ("circle_set", [[0, 0, 1], [50, 50, 1], [90, 90, 3]], [[50, 50, 1]], 1 / 3),
    "set_duplicates_do_not_pay": ("circle_set", [[0, 0, 1]], [[0, 0, 1], [0, 0, 1]], 0.5),
    "set_single_flat_circle": ("circle_set", [[0, 0, 1]], [0, 0, 1], 1.0),
    "set_both_empty": ("circle_set", [], [], 1.0),
    "set_prediction_empty": ("circle_set", [[0, 0, 1]], [], 0.0),
    "set_partial": ("circle_set", [[0, 0, 1], [100, 100, 4]], [[1, 0, 1], [100, 100, 4]], (UNIT_PAIR_IOU + 1) / 2),
    "set_bad_item": ("circle_set", [[0, 0, 1]], [[0, 0]], None),
}

#: Hostile responses for a circle_set instance: each must score, never raise.
HOSTILE = [
    "",
    "no json here",
    '{"answer": 3, "annotation": [[0, 0, 1e400]]}',
    '{"answer": 3, "annotation": [[1e308, 1e308, 1e308], [0, 0, 1]]}',
    '{"answer": 3, "annotation": "[[0, 0, ' + "(" * 5000 + '"}',
    '{"answer": 3, "annotation": {"circles": [[0, 0, 1]]}}',
    '{"answer": 3, "annotation": [' + ", ".join(["[0, 0, 1]"] * 300) + "]}",
    '```json\n{"answer": 3, "annotation": [[0, 0, "1"]]}\n```',
]

SCRIPT = """
import json, sys
from trace_tasks import (
    MissingFamilyError, get_registry, resolve_annotation_reward_contract_id, resolve_reward_contract,
    score_trace_response, validate_reward_contract_payload,
)

cases, hostile = json.loads(sys.argv[1]), json.loads(sys.argv[2])
registry = get_registry()
contracts = {
    t: resolve_reward_contract(answer_type="integer", annotation_type=t).to_dict() for t in ("circle", "circle_set")
}

def score(annotation_type, target, response, reward_contract):
    return score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": annotation_type, "value": target},
        reward_contract=reward_contract,
    )

out = {
    "plugins": {p.name: [p.distribution, p.entry_point, list(p.annotation_types)] for p in registry.plugins},
    "resolved": {t: resolve_annotation_reward_contract_id(t) for t in registry.annotation_types},
    "contracts": contracts,
    "valid": {t: validate_reward_contract_payload(c, answer_type="integer", annotation_type=t) for t, c in contracts.items()},
    "cases": {
        name: score(t, target, json.dumps({"answer": 3, "annotation": pred}), contracts[t])
        for name, (t, target, pred, _) in cases.items()
    },
    "hostile": [score("circle_set", [[0, 0, 1]], text, contracts["circle_set"]) for text in hostile],
    "wrong_id": score("circle", [0, 0, 1], json.dumps({"answer": 3, "annotation": [0, 0, 1]}),
                      dict(contracts["circle"], annotation={"id": "circle_soft_iou_v1", "type": "circle"})),
}
try:
    resolve_reward_contract(answer_type="integer", annotation_type="bbox")
    out["bbox"] = None
except MissingFamilyError as exc:
    out["bbox"] = exc.distribution
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def circle_only(make_venv: Any) -> Any:
    return make_venv(CORE, CIRCLE).run_json(SCRIPT, json.dumps(CASES), json.dumps(HOSTILE))


def test_circle_family_is_found_through_its_entry_point(circle_only: Any) -> None:
    assert circle_only["plugins"]["circle"] == [CIRCLE, "circle = trace_plugins_circle.plugin:family", ["circle", "circle_set"]]
    assert circle_only["resolved"] == CIRCLE_TABLE


def test_builder_emits_a_valid_circle_contract(circle_only: Any) -> None:
    for annotation_type, reward_id in CIRCLE_TABLE.items():
        assert circle_only["contracts"][annotation_type] == {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": reward_id, "type": annotation_type},
        }
        assert circle_only["valid"][annotation_type] is None


@pytest.mark.parametrize("name", sorted(CASES))
def test_circle_scores_through_the_public_scorer(circle_only: Any, name: str) -> None:
    annotation_type, _, _, expected = CASES[name]
    result = circle_only["cases"][name]
    assert result["answer_reward"] == 1.0
    assert result[f"annotation_type_{annotation_type}"] == 1.0
    if expected is None:
        assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0
        assert "annotation_assigned_iou_mean" not in result
    else:
        assert result["annotation_parse_ok"] == 1.0
        assert result["annotation_reward"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        # Gated formula with the default weights: answer * (0.5 + 0.5 * annotation).
        assert result["overall"] == pytest.approx(0.5 + 0.5 * expected, rel=1e-12)
        assert "annotation_assigned_iou_mean" in result


def test_hostile_responses_score_without_raising(circle_only: Any) -> None:
    results = circle_only["hostile"]
    assert len(results) == len(HOSTILE)
    for text, result in zip(HOSTILE, results, strict=False):
        assert 0.0 <= result["overall"] <= 1.0, text[:80]
        assert 0.0 <= result["annotation_reward"] <= 1.0, text[:80]
    # Overflowing coordinates are a parse failure; a radius that overflows a float too.
    assert results[2]["annotation_parse_ok"] == 0.0
    # A finite but huge circle parses; its area overflows, so its IoU counts as 0 and
    # only the exact unit circle scores: 1 matched of 2 predictions.
    assert results[3]["annotation_parse_ok"] == 1.0 and results[3]["annotation_reward"] == 0.5
    # The core's shapes read no wrapper key for circles; 300 identical circles share one match.
    assert results[5]["annotation_parse_ok"] == 0.0
    assert results[6]["annotation_reward"] == pytest.approx(1 / 300)


def test_non_current_circle_id_gets_no_annotation_reward(circle_only: Any) -> None:
    result = circle_only["wrong_id"]
    assert result["annotation_reward"] == 0.0 and result["annotation_parse_ok"] == 0.0
    assert result["answer_reward"] == 1.0


def test_official_types_still_name_their_family(circle_only: Any) -> None:
    assert circle_only["bbox"] == "trace-plugins-bbox"


def test_circle_beside_the_official_families(make_venv: Any) -> None:
    """All five wheels together: the resolver table of docs/contracts.md §10 plus two circle rows; official indicators first."""
    script = """
import json
from trace_tasks import get_registry, resolve_annotation_reward_contract_id, score_trace_response
registry = get_registry()
result = score_trace_response(
    response='{"answer": 3, "annotation": [0, 0, 1]}',
    answer_gt={"type": "integer", "value": 3},
    annotation_gt={"type": "circle", "value": [0, 0, 1]},
    reward_contract={"reward_contract_version": "v0", "answer": {"id": "answer_exact_match_v0", "type": "integer"},
                     "annotation": {"id": "circle_soft_iou_v0", "type": "circle"}},
)
print(json.dumps({
    "resolved": {t: resolve_annotation_reward_contract_id(t) for t in registry.annotation_types},
    "indicators": [k for k in result if k.startswith("annotation_type_")],
    "reward": result["annotation_reward"],
}))
"""
    out = make_venv(CORE, CIRCLE, *OFFICIAL).run_json(script)
    assert out["resolved"] == {**RESOLVER_TABLE, **CIRCLE_TABLE}
    official = [f"annotation_type_{t}" for t in RESOLVER_TABLE]
    assert sorted(out["indicators"][:12]) == sorted(official)
    assert out["indicators"][12:] == ["annotation_type_circle", "annotation_type_circle_set"]
    assert out["reward"] == 1.0


def test_installed_console_script_lists_the_circle_family(make_venv: Any) -> None:
    proc = make_venv(CORE, CIRCLE).run(["trace-tasks", "plugins"])
    assert proc.returncode == 0, proc.stderr
    assert "trace-plugins-circle" in proc.stdout
    assert "circle_soft_iou_v0*" in proc.stdout and "circle_set_soft_iou_v0*" in proc.stdout
