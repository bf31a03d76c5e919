"""The official wheels, installed for real: trace-core alone, with one family, with all three.

Each test runs a small script inside a fresh virtual environment (see
``conftest.py``) and asserts on the JSON it prints.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..support.resolver_table import FAMILY, RESOLVER_TABLE, SAMPLES
from .conftest import Venv

pytestmark = [pytest.mark.packaging, pytest.mark.slow]

CORE = "trace-core"
OFFICIAL = ("trace-plugins-bbox", "trace-plugins-point", "trace-plugins-segment")

#: Shared by every script: run one call, describe what it raised (or None).
PRELUDE = """
import json, sys
import trace_tasks
from trace_tasks import (
    MissingFamilyError, TraceTasksError, get_registry, resolve_annotation_reward_contract_id,
    resolve_reward_contract, score_trace_response,
)

def raised(call):
    try:
        call()
    except Exception as exc:
        return {
            "type": type(exc).__name__,
            "missing_family": isinstance(exc, MissingFamilyError),
            "import_error": isinstance(exc, ImportError),
            "distribution": getattr(exc, "distribution", None),
            "message": str(exc),
        }
    return None

def contract(annotation_type, reward_id):
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": reward_id, "type": annotation_type},
    }

def score(annotation_type, value, reward_contract, mode="answer_and_annotation", prediction=None):
    response = json.dumps({"answer": 3, "annotation": value if prediction is None else prediction})
    return score_trace_response(
        response=response,
        answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": annotation_type, "value": value},
        reward_contract=reward_contract,
        trace_reward_mode=mode,
    )
"""

#: trace-core alone: answer mode serves everyone; every annotation type needs its family.
CORE_ALONE = (
    PRELUDE
    + """
table = json.loads(sys.argv[1])
samples = json.loads(sys.argv[2])
out = {
    "plugins": [p.name for p in get_registry().plugins],
    "annotation_types": list(get_registry().annotation_types),
    "types": {},
}
for t, rid in table.items():
    hand_made = contract(t, rid)
    out["types"][t] = {
        "answer_mode": score(t, samples[t], hand_made, mode="answer"),
        "score": raised(lambda: score(t, samples[t], hand_made)),
        "resolve_id": raised(lambda: resolve_annotation_reward_contract_id(t)),
        "resolve_contract": raised(lambda: resolve_reward_contract(answer_type="integer", annotation_type=t)),
    }
print(json.dumps(out))
"""
)

#: Whatever families are installed: resolve and score every installed type, and
#: describe what the missing official ones raise.
SCORE_INSTALLED = (
    PRELUDE
    + """
table = json.loads(sys.argv[1])
samples = json.loads(sys.argv[2])
registry = get_registry()
out = {"annotation_types": list(registry.annotation_types), "resolved": {}, "scores": {}, "missing": {}}
for t in table:
    if t in registry.annotation_types:
        out["resolved"][t] = resolve_annotation_reward_contract_id(t)
        built = resolve_reward_contract(answer_type="integer", annotation_type=t).to_dict()
        out["scores"][t] = {"contract": built, "result": score(t, samples[t], built)}
    else:
        out["missing"][t] = {
            "score": raised(lambda: score(t, samples[t], contract(t, table[t]))),
            "resolve_id": raised(lambda: resolve_annotation_reward_contract_id(t)),
            "resolve_contract": raised(lambda: resolve_reward_contract(answer_type="integer", annotation_type=t)),
        }
print(json.dumps(out))
"""
)


def _run(venv: Venv, script: str) -> Any:
    return venv.run_json(script, json.dumps(RESOLVER_TABLE), json.dumps(SAMPLES))


def _assert_missing_family(error: dict[str, Any] | None, annotation_type: str) -> None:
    """The error a deployment without ``annotation_type``'s family must get."""
    family = FAMILY[annotation_type]
    assert error is not None, f"{annotation_type}: expected MissingFamilyError, nothing was raised"
    assert error["type"] == "MissingFamilyError" and error["missing_family"] and error["import_error"], error
    assert error["distribution"] == family
    assert f"pip install {family}" in error["message"] and repr(annotation_type) in error["message"]


@pytest.fixture(scope="module")
def core_alone(make_venv: Any) -> Any:
    return _run(make_venv(CORE), CORE_ALONE)


@pytest.fixture(scope="module")
def core_and_bbox(make_venv: Any) -> Any:
    return _run(make_venv(CORE, "trace-plugins-bbox"), SCORE_INSTALLED)


@pytest.fixture(scope="module")
def all_families(make_venv: Any) -> Any:
    return _run(make_venv(CORE, *OFFICIAL), SCORE_INSTALLED)


def test_core_alone_loads_only_the_builtin_answer_types(core_alone: Any) -> None:
    assert core_alone["plugins"] == ["trace_tasks.builtin"]
    assert core_alone["annotation_types"] == []


@pytest.mark.parametrize("annotation_type", sorted(RESOLVER_TABLE))
def test_core_alone_scores_answer_mode_without_the_annotation(core_alone: Any, annotation_type: str) -> None:
    result = core_alone["types"][annotation_type]["answer_mode"]
    assert result["answer_reward"] == 1.0 and result["overall"] == 1.0
    assert result["trace_reward_mode_answer"] == 1.0
    # The annotation cannot change the reward in answer mode, so it is simply not scored.
    assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0
    assert not any(key.startswith("annotation_type_") for key in result)


@pytest.mark.parametrize("annotation_type", sorted(RESOLVER_TABLE))
def test_core_alone_names_the_family_to_install(core_alone: Any, annotation_type: str) -> None:
    calls = core_alone["types"][annotation_type]
    for call in ("score", "resolve_id", "resolve_contract"):
        _assert_missing_family(calls[call], annotation_type)


def test_core_and_bbox_owns_exactly_the_box_types(core_and_bbox: Any) -> None:
    boxes = [t for t in RESOLVER_TABLE if FAMILY[t] == "trace-plugins-bbox"]
    assert sorted(core_and_bbox["annotation_types"]) == sorted(boxes)
    assert core_and_bbox["resolved"] == {t: RESOLVER_TABLE[t] for t in boxes}


@pytest.mark.parametrize("annotation_type", [t for t in RESOLVER_TABLE if t.startswith("bbox")])
def test_core_and_bbox_scores_every_box_type(core_and_bbox: Any, annotation_type: str) -> None:
    scored = core_and_bbox["scores"][annotation_type]
    assert scored["contract"]["annotation"] == {"id": RESOLVER_TABLE[annotation_type], "type": annotation_type}
    result = scored["result"]
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0 and result["overall"] == 1.0
    assert result["annotation_assigned_iou_mean"] == 1.0
    assert result[f"annotation_type_{annotation_type}"] == 1.0


@pytest.mark.parametrize("annotation_type", [t for t in RESOLVER_TABLE if not t.startswith("bbox")])
def test_core_and_bbox_names_the_point_or_segment_family(core_and_bbox: Any, annotation_type: str) -> None:
    missing = core_and_bbox["missing"][annotation_type]
    for call in ("score", "resolve_id", "resolve_contract"):
        _assert_missing_family(missing[call], annotation_type)


def test_all_three_families_resolve_exactly_the_resolver_table(all_families: Any) -> None:
    assert all_families["resolved"] == RESOLVER_TABLE
    assert sorted(all_families["annotation_types"]) == sorted(RESOLVER_TABLE)
    assert all_families["missing"] == {}


@pytest.mark.parametrize("annotation_type", sorted(RESOLVER_TABLE))
def test_all_three_families_score_every_type(all_families: Any, annotation_type: str) -> None:
    result = all_families["scores"][annotation_type]["result"]
    assert result["annotation_parse_ok"] == 1.0
    assert result["annotation_reward"] == 1.0 and result["overall"] == 1.0
    # One indicator per installed type, exactly one of them set.
    indicators = {k: v for k, v in result.items() if k.startswith("annotation_type_")}
    assert set(indicators) == {f"annotation_type_{t}" for t in RESOLVER_TABLE}
    assert [k for k, v in indicators.items() if v == 1.0] == [f"annotation_type_{annotation_type}"]


def test_installed_console_script_lists_the_three_families(make_venv: Any) -> None:
    venv = make_venv(CORE, *OFFICIAL)
    proc = venv.run(["trace-tasks", "plugins", "--json"])
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    by_dist = {p["distribution"]: p for p in listing["plugins"] if p["distribution"]}
    assert set(by_dist) == set(OFFICIAL)
    for dist, info in by_dist.items():
        assert info["version"] == "0.1.0"
        assert sorted(info["annotation_types"]) == sorted(t for t in RESOLVER_TABLE if FAMILY[t] == dist)
        # The default of each type is current; the sequence types also offer a pinnable aligned version,
        # and the box family its pinnable click versions of bbox (issue 39).
        offered = {
            "bbox_sequence_aligned_iou_v0",
            "point_sequence_aligned_distance_v0",
            "bbox_click_hit_v0",
            "bbox_click_soft_v0",
        }
        assert info["current_reward_ids"] == [rid for rid in info["reward_ids"] if rid not in offered]
    assert {t: e["current_reward_id"] for t, e in listing["annotation_types"].items()} == RESOLVER_TABLE
