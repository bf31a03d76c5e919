"""A third-party reward version (``examples/giou_bbox``) installed from its wheel beside the real families.

``trace-plugins-bbox-giou`` adds ``bbox_giou_v1`` for ``bbox``, a type it does
not own, and depends on trace-core only. In fresh virtual environments:

* with trace-plugins-bbox: installing it changes nothing (``bbox_soft_iou_v0``
  stays current, a v0 contract scores exactly as without it); with
  ``TRACE_TASKS_REWARD_IDS=bbox=bbox_giou_v1`` the builder emits v1, v1
  contracts score by GIoU (hand-computed values), and v0 contracts are refused
  and score annotation 0;
* without trace-plugins-bbox: the id is an orphan, and every way of using it
  fails with a message naming ``trace-plugins-bbox``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.packaging

CORE = "trace-core"
BBOX = "trace-plugins-bbox"
GIOU_DIST = "trace-plugins-bbox-giou"
V0 = "bbox_soft_iou_v0"
V1 = "bbox_giou_v1"
#: The box family's own pinnable click versions of bbox (issue 39), listed after its default.
CLICK = ["bbox_click_hit_v0", "bbox_click_soft_v0"]
PIN = {"TRACE_TASKS_REWARD_IDS": f"bbox={V1}"}

#: name -> (prediction, bbox_soft_iou_v0 reward, bbox_giou_v1 reward, or None for a parse failure) against [0, 0, 10, 10].
#: [5, 5, 15, 15]: intersection 25, union 175, hull 225: IoU 1/7, GIoU 1/7 - 50/225, reward (GIoU + 1) / 2 = 29/63.
#: [20, 0, 30, 10]: disjoint, union 200, hull 300: IoU 0, GIoU -1/3, reward 1/3.
CASES: dict[str, tuple[Any, float | None, float | None]] = {
    "identical": ([0, 0, 10, 10], 1.0, 1.0),
    "near": ([5, 5, 15, 15], 1 / 7, 29 / 63),
    "apart": ([20, 0, 30, 10], 0.0, 1 / 3),
    "corners_swapped": ([10, 10, 0, 0], 1.0, 1.0),  # the bbox owner's parse reorders them for both ids
    "string": ("[5, 5, 15, 15]", 1 / 7, 29 / 63),
    "zero_area": ([0, 0, 0, 10], None, None),
    "nan": (["NaN", 0, 10, 10], None, None),
}

SCRIPT = r"""
import json, sys
import importlib.metadata as md
from trace_tasks import (
    MissingFamilyError, TraceTasksError, get_registry, resolve_reward_contract, score_trace_response,
    validate_reward_contract_payload,
)

cases = json.loads(sys.argv[1])
out = {}
try:
    dist = md.metadata("trace-plugins-bbox-giou")
    out["metadata"] = {"requires": md.requires("trace-plugins-bbox-giou"), "license": dist.get("License-Expression")}
except md.PackageNotFoundError:
    out["metadata"] = None

def contract(rid):
    return {"reward_contract_version": "v0", "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": rid, "type": "bbox"}}

def score(rid, prediction):
    return score_trace_response(
        response=json.dumps({"answer": 3, "annotation": prediction}),
        answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
        reward_contract=contract(rid),
    )

try:
    registry = get_registry()
except TraceTasksError as exc:
    out["error"] = [type(exc).__name__, str(exc)]
    print(json.dumps(out))
    sys.exit(0)
out["plugins"] = {p.name: [p.distribution, p.entry_point, list(p.annotation_types), list(p.reward_ids)] for p in registry.plugins}
out["orphans"] = {rid: [e.annotation_type, e.plugin] for rid, e in registry.orphan_reward_ids.items()}
out["not_current"] = {rid: registry.not_current_message(rid) for rid in ("bbox_soft_iou_v0", "bbox_giou_v1")}
try:
    out["built"] = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
except MissingFamilyError as exc:
    out["missing"] = [exc.distribution, str(exc)]
    print(json.dumps(out))
    sys.exit(0)
entry = registry.annotation_types["bbox"]
out["bbox"] = {"reward_ids": list(entry.reward_ids), "default": entry.default_reward_id,
               "current": entry.current_reward_id, "pinned_by": entry.pinned_by}
out["valid"] = {rid: validate_reward_contract_payload(contract(rid), answer_type="integer", annotation_type="bbox")
                for rid in ("bbox_soft_iou_v0", "bbox_giou_v1")}
out["scores"] = {rid: {name: score(rid, case[0]) for name, case in cases.items()} for rid in ("bbox_soft_iou_v0", "bbox_giou_v1")}
print(json.dumps(out))
"""


def _run(venv: Any, env: dict[str, str] | None = None) -> Any:
    return venv.run_json(SCRIPT, json.dumps(CASES), env=env)


@pytest.fixture(scope="module")
def with_bbox(make_venv: Any) -> Any:
    return make_venv(CORE, BBOX, GIOU_DIST)


@pytest.fixture(scope="module")
def default(with_bbox: Any) -> Any:
    return _run(with_bbox)


@pytest.fixture(scope="module")
def pinned(with_bbox: Any) -> Any:
    return _run(with_bbox, PIN)


@pytest.fixture(scope="module")
def giou_only(make_venv: Any) -> Any:
    return make_venv(CORE, GIOU_DIST)


def _reward(result: dict[str, float]) -> float | None:
    return result["annotation_reward"] if result["annotation_parse_ok"] == 1.0 else None


def test_the_wheel_depends_on_trace_core_only(default: Any) -> None:
    requires = default["metadata"]["requires"]
    assert len(requires) == 1 and requires[0].replace(" ", "").startswith("trace-core")
    assert "<0.2" in requires[0] and ">=0.1" in requires[0]
    assert default["metadata"]["license"] == "Apache-2.0"


def test_it_is_found_through_its_entry_point_and_owns_nothing(default: Any) -> None:
    assert default["plugins"]["bbox_giou"] == [GIOU_DIST, "bbox_giou = trace_plugins_bbox_giou.plugin:rewards", [], [V1]]
    assert default["plugins"]["bbox"][0] == BBOX
    assert default["orphans"] == {}


def test_installing_it_leaves_v0_current(default: Any) -> None:
    assert default["bbox"] == {"reward_ids": [V0, *CLICK, V1], "default": V0, "current": V0, "pinned_by": None}
    assert default["built"]["annotation"] == {"id": V0, "type": "bbox"}
    assert default["valid"][V0] is None
    assert default["valid"][V1] is not None and V0 in default["valid"][V1]
    assert f"TRACE_TASKS_REWARD_IDS=bbox={V1}" in default["not_current"][V1]


def test_a_v0_contract_scores_as_before(default: Any, make_venv: Any) -> None:
    before = _run(make_venv(CORE, BBOX))  # the same script without the giou wheel
    assert before["metadata"] is None and before["bbox"]["reward_ids"] == [V0, *CLICK]
    assert default["scores"][V0] == before["scores"][V0]
    for name, (_, expected, _) in CASES.items():
        got = _reward(default["scores"][V0][name])
        assert got == (None if expected is None else pytest.approx(expected, abs=1e-12)), name
    for result in default["scores"][V1].values():  # not pinned: v1 contracts do not score
        assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0


def test_pinned_the_builder_emits_v1_and_v1_scores_by_giou(pinned: Any) -> None:
    assert pinned["bbox"] == {"reward_ids": [V0, *CLICK, V1], "default": V0, "current": V1, "pinned_by": "TRACE_TASKS_REWARD_IDS"}
    assert pinned["built"] == {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": V1, "type": "bbox"},
    }
    assert pinned["valid"][V1] is None
    for name, (_, _, expected) in CASES.items():
        result = pinned["scores"][V1][name]
        got = _reward(result)
        assert got == (None if expected is None else pytest.approx(expected, abs=1e-12)), name
        if expected is not None:
            assert result["annotation_assigned_giou_mean"] == pytest.approx(expected, abs=1e-12)
    assert pinned["scores"][V1]["near"]["annotation_reward"] == pytest.approx(29 / 63, abs=1e-12)


def test_pinned_v0_contracts_are_refused_and_score_annotation_0(pinned: Any) -> None:
    for result in pinned["scores"][V0].values():
        assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0
        assert result["answer_reward"] == 1.0
    refused = pinned["valid"][V0]
    assert refused is not None and V1 in refused
    why = pinned["not_current"][V0]
    assert why.startswith(
        f"reward id '{V0}' is not current: rebuild the contracts with resolve_reward_contract"
    )  # what to do first
    assert f"whose current id is '{V1}' (pinned by TRACE_TASKS_REWARD_IDS)" in why
    assert f"TRACE_TASKS_REWARD_IDS=bbox={V0}" in why


def test_pinned_validation_message_names_the_pin(pinned: Any) -> None:
    assert "TRACE_TASKS_REWARD_IDS" in pinned["valid"][V0]


def test_plugins_check_passes_with_both_ids(with_bbox: Any) -> None:
    proc = with_bbox.run(["trace-tasks", "plugins", "--check"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 5 box ids, bbox_sequence_aligned_iou_v0 (pinnable, issue 37 item 19), the two click versions of bbox (issue 39) and bbox_giou_v1.
    assert proc.stdout.startswith("OK: 5 annotation types, 9 reward ids, 3 plugins checked")
    listing = json.loads(with_bbox.run(["trace-tasks", "plugins", "--json"], env=PIN).stdout)
    assert listing["pins"] == {"bbox": {"reward_id": V1, "pinned_by": "TRACE_TASKS_REWARD_IDS"}}
    assert {k: listing["added_reward_ids"][V1][k] for k in ("annotation_type", "plugin", "owner", "current")} == {
        "annotation_type": "bbox", "plugin": "bbox_giou", "owner": "bbox", "current": True,
    }  # fmt: skip


def test_without_the_bbox_owner_every_use_names_trace_plugins_bbox(giou_only: Any) -> None:
    alone = _run(giou_only)
    assert alone["orphans"] == {V1: ["bbox", "bbox_giou"]}
    assert "pip install trace-plugins-bbox" in alone["not_current"][V1]
    assert alone["missing"][0] == BBOX and "pip install trace-plugins-bbox" in alone["missing"][1]

    pinned = _run(giou_only, PIN)
    name, message = pinned["error"]
    assert name == "RewardPinError"
    assert "TRACE_TASKS_REWARD_IDS pins annotation type 'bbox', which no installed family owns" in message
    assert "pip install trace-plugins-bbox" in message

    proc = giou_only.run(["trace-tasks", "plugins", "--check"])
    assert proc.returncode == 1
    (line,) = proc.stdout.splitlines()
    assert line.startswith(f"bbox {V1}: orphan: plugin 'bbox_giou' (distribution {GIOU_DIST}) declares reward id '{V1}'")
    assert line.endswith("pip install trace-plugins-bbox")

    proc = giou_only.run(["trace-tasks", "plugins"], env=PIN)
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("trace-tasks: error: RewardPinError: ") and "pip install trace-plugins-bbox" in line
