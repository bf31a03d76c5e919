"""Every hook spec is exercised by at least one test.

``HOOK_TESTS`` is maintained by hand: for each hook, tests that drive it
through the public API. The first test fails when a hook is added to
``hookspecs.py`` without a test (or a listed test disappears); the last one
proves, with a recording plugin, that one pass through the public API calls
every hook.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from trace_tasks import get_registry, resolve_reward_contract, score_trace_response

from .interval_family import V1, IntervalFamily
from .test_docs import hook_specs

HERE = Path(__file__).resolve().parent

#: hook name -> "module.py::test_name" of tests that exercise it
HOOK_TESTS: dict[str, list[str]] = {
    "trace_annotation_types": [
        "test_reward_versions.py::test_both_versions_are_declared_and_v1_is_current",
        "test_circle_geometry.py::test_in_process_registration_scores_through_the_public_scorer",
    ],
    "trace_answer_types": [
        "test_reward_versions.py::test_plugin_answer_type_is_usable_in_contracts_and_scoring",
    ],
    "trace_resolve_reward_id": [
        "test_reward_versions.py::test_builder_emits_the_current_id",
        "test_reward_versions.py::test_the_family_not_the_core_chooses_the_version",
        "test_reward_versions.py::test_current_id_must_be_declared",
    ],
    "trace_parse_annotation": [
        "test_reward_versions.py::test_scorer_uses_the_current_version",
        "test_hook_arguments.py::test_implementations_with_fewer_arguments_are_called_correctly",
    ],
    "trace_score_annotation": [
        "test_reward_versions.py::test_scorer_uses_the_current_version",
        "test_circle_geometry.py::test_in_process_registration_scores_through_the_public_scorer",
    ],
}


def _test_functions(module: str) -> set[str]:
    tree = ast.parse((HERE / module).read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_hook_has_tests_and_they_exist() -> None:
    assert set(HOOK_TESTS) == set(hook_specs())
    for hook, tests in HOOK_TESTS.items():
        assert tests, f"no test listed for {hook}"
        for ref in tests:
            module, name = ref.split("::")
            assert name in _test_functions(module), f"{ref} (listed for {hook}) does not exist"


def test_a_recording_plugin_sees_every_hook_called(register: Any) -> None:
    family = IntervalFamily()
    register(family, "interval")
    contract = resolve_reward_contract(answer_type="hex_color", annotation_type="interval").to_dict()
    result = score_trace_response(
        response=json.dumps({"answer": "#00ff00", "annotation": [1, 4]}),
        answer_gt={"type": "hex_color", "value": "#00FF00"},
        annotation_gt={"type": "interval", "value": [0, 4]},
        reward_contract=contract,
    )
    assert result["annotation_parse_ok"] == 1.0 and result["answer_reward"] == 1.0
    assert family.hooks_called() == set(hook_specs())
    assert ("trace_score_annotation", (V1,)) in family.calls
    # The registry agrees about which hooks the plugin implements.
    (info,) = [p for p in get_registry().plugins if p.name == "interval"]
    assert set(info.hooks) == set(hook_specs())
