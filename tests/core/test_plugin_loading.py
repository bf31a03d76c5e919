"""Plugin loading from real installed metadata: fake distributions written to a temporary sys.path entry."""

from __future__ import annotations

import importlib
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trace_tasks import (
    AnswerTypeSpec,
    MissingFamilyError,
    PluginConflictError,
    PluginLoadError,
    PluginValidationError,
    hookimpl,
    instance_problems,
    plugins,
    resolve_reward_contract,
    score_trace_response,
    validate_reward_contract_payload,
)
from trace_tasks.plugins import ALLOW_ENV, BLOCK_ENV, build_registry

FAMILY_SOURCE = """
from trace_tasks import AnnotationScore, AnnotationTypeSpec, hookimpl

TYPE = {type_name!r}
REWARD_ID = {reward_id!r}


@hookimpl
def trace_annotation_types():
    return [AnnotationTypeSpec(TYPE, (REWARD_ID,))]


@hookimpl
def trace_resolve_reward_id(annotation_type):
    return REWARD_ID if annotation_type == TYPE else None


@hookimpl
def trace_parse_annotation(annotation_type, value):
    return value


@hookimpl
def trace_score_annotation(reward_id, prediction, target, context):
    return AnnotationScore(1.0 if prediction == target else 0.0)
"""

MISSPELLED_SOURCE = """
from trace_tasks import hookimpl


@hookimpl
def trace_parse_annotaton(annotation_type, value):
    return value
"""

NO_PARSER_SOURCE = """
from trace_tasks import AnnotationTypeSpec, hookimpl


@hookimpl
def trace_annotation_types():
    return [AnnotationTypeSpec("fake_unparsed", ("fake_unparsed_v0",))]
"""


class FakeSite:
    """A directory on ``sys.path`` holding fake distributions and their modules."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tag = uuid.uuid4().hex[:8]
        self.modules: list[str] = []

    def module(self, stem: str, source: str) -> str:
        """Write a module with a name unique to this test; returns its import name."""
        name = f"fake_{stem}_{self.tag}"
        (self.root / f"{name}.py").write_text(textwrap.dedent(source))
        self.modules.append(name)
        return name

    def family(self, stem: str, type_name: str, reward_id: str) -> str:
        return self.module(stem, FAMILY_SOURCE.format(type_name=type_name, reward_id=reward_id))

    def distribution(self, name: str, entry_points: dict[str, str], version: str = "0.1") -> None:
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = "".join(f"{ep} = {target}\n" for ep, target in entry_points.items())
        (info / "entry_points.txt").write_text(f"[trace_tasks]\n{lines}")
        importlib.invalidate_caches()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    monkeypatch.delenv(BLOCK_ENV, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = FakeSite(tmp_path)
    yield fake
    for name in fake.modules:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def test_a_valid_fake_family_is_loaded(site: FakeSite) -> None:
    module = site.family("good", "fake_good", "fake_good_v0")
    site.distribution("fake-family", {"fake_good": module})
    registry = build_registry()
    assert registry.annotation_types["fake_good"].current_reward_id == "fake_good_v0"
    assert "bbox" in registry.annotation_types  # the official families load beside it
    info = next(p for p in registry.plugins if p.name == "fake_good")
    assert (info.distribution, info.version) == ("fake-family", "0.1")
    assert info.annotation_types == ("fake_good",)
    assert info.entry_point == f"fake_good = {module}"


def test_broken_import_names_the_entry_point_and_distribution(site: FakeSite) -> None:
    module = site.module("broken", "raise RuntimeError('boom at import')\n")
    site.distribution("fake-family", {"fake_broken": module})
    with pytest.raises(PluginLoadError) as info:
        build_registry()
    message = str(info.value)
    assert "'fake_broken'" in message
    assert "fake-family" in message
    assert "boom at import" in message
    assert isinstance(info.value.__cause__, RuntimeError)
    assert str(info.value.__cause__) == "boom at import"


def test_missing_module_is_a_load_error(site: FakeSite) -> None:
    site.distribution("fake-family", {"fake_missing": f"fake_no_such_module_{site.tag}"})
    with pytest.raises(PluginLoadError, match="fake_missing") as info:
        build_registry()
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_two_plugins_claiming_one_annotation_type(site: FakeSite) -> None:
    first = site.family("first", "fake_shared", "fake_first_v0")
    second = site.family("second", "fake_shared", "fake_second_v0")
    site.distribution("fake-family", {"fake_first": first})
    site.distribution("fake-other-family", {"fake_second": second})
    with pytest.raises(PluginConflictError) as info:
        build_registry()
    message = str(info.value)
    assert "'fake_shared'" in message
    assert "'fake_first'" in message and "'fake_second'" in message


def test_two_plugins_claiming_one_reward_id(site: FakeSite) -> None:
    first = site.family("first", "fake_one", "fake_shared_v0")
    second = site.family("second", "fake_two", "fake_shared_v0")
    site.distribution("fake-family", {"fake_first": first, "fake_second": second})
    with pytest.raises(PluginConflictError) as info:
        build_registry()
    message = str(info.value)
    assert "'fake_shared_v0'" in message
    assert "'fake_first'" in message and "'fake_second'" in message


def test_a_plugin_claiming_an_official_type(site: FakeSite) -> None:
    module = site.family("impostor", "bbox", "fake_bbox_v0")
    site.distribution("fake-family", {"fake_impostor": module})
    with pytest.raises(PluginConflictError, match="'bbox'"):
        build_registry()


def test_two_entry_points_with_one_name(site: FakeSite) -> None:
    first = site.family("first", "fake_one", "fake_one_v0")
    second = site.family("second", "fake_two", "fake_two_v0")
    site.distribution("fake-family", {"fake_same": first})
    site.distribution("fake-other-family", {"fake_same": second})
    with pytest.raises(PluginConflictError) as info:
        build_registry()
    message = str(info.value)
    assert "'fake_same'" in message
    assert "fake-family" in message and "fake-other-family" in message


def test_misspelled_hook_is_a_validation_error(site: FakeSite) -> None:
    module = site.module("typo", MISSPELLED_SOURCE)
    site.distribution("fake-family", {"fake_typo": module})
    with pytest.raises(PluginValidationError) as info:
        build_registry()
    message = str(info.value)
    assert "trace_parse_annotaton" in message
    assert "'fake_typo'" in message and "fake-family" in message


def test_declaring_a_type_without_a_parser_is_a_validation_error(site: FakeSite) -> None:
    module = site.module("noparse", NO_PARSER_SOURCE)
    site.distribution("fake-family", {"fake_noparse": module})
    with pytest.raises(PluginValidationError, match="trace_parse_annotation"):
        build_registry()


# --- selecting plugins with environment variables ------------------------------------------


@pytest.fixture
def two_fakes(site: FakeSite) -> FakeSite:
    """A good family in ``fake-family`` and a broken one in ``fake-broken-family``."""
    site.distribution("fake-family", {"fake_good": site.family("good", "fake_good", "fake_good_v0")})
    site.distribution("fake-broken-family", {"fake_broken": site.module("broken", "raise ImportError('nope')\n")})
    return site


def loaded() -> set[str]:
    return {p.name for p in build_registry().plugins}


def test_both_fakes_are_seen_without_selection(two_fakes: FakeSite) -> None:
    with pytest.raises(PluginLoadError, match="fake_broken"):
        build_registry()


@pytest.mark.parametrize("blocked", ["fake_broken", "fake-broken-family", " fake_broken , unrelated"])
def test_block_list_skips_plugins(two_fakes: FakeSite, monkeypatch: pytest.MonkeyPatch, blocked: str) -> None:
    monkeypatch.setenv(BLOCK_ENV, blocked)
    names = loaded()
    assert "fake_good" in names and "fake_broken" not in names
    assert {"bbox", "point", "segment"} <= names


@pytest.mark.parametrize("allowed", ["fake_good", "fake-family", "fake_good,"])
def test_allow_list_selects_plugins(two_fakes: FakeSite, monkeypatch: pytest.MonkeyPatch, allowed: str) -> None:
    monkeypatch.setenv(ALLOW_ENV, allowed)
    registry = build_registry()
    assert set(registry.annotation_types) == {"fake_good"}
    assert "fake_broken" not in {p.name for p in registry.plugins}


def test_allow_list_can_name_official_families(two_fakes: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "fake_good,trace-plugins-bbox")
    registry = build_registry()
    assert "fake_good" in registry.annotation_types
    assert "bbox_set" in registry.annotation_types
    assert "point" not in registry.annotation_types


def test_empty_allow_list_loads_no_plugin(two_fakes: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "")
    registry = build_registry()
    assert dict(registry.annotation_types) == {}
    assert "integer" in registry.answer_types  # the core's own answer types are always there


def test_block_list_wins_over_allow_list(two_fakes: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "fake_good,fake_broken")
    monkeypatch.setenv(BLOCK_ENV, "fake_broken")
    assert set(build_registry().annotation_types) == {"fake_good"}


# --- the plugin an error is about (``PluginError.plugin``, as pluggy's errors carry it) ----------


def test_a_load_error_names_its_plugin(site: FakeSite) -> None:
    site.distribution("fake-family", {"fake_broken": site.module("broken", "raise ImportError('nope')\n")})
    with pytest.raises(PluginLoadError) as info:
        build_registry()
    assert info.value.plugin == "fake_broken"  # the entry-point name, which is the registered name


def test_a_conflict_names_the_second_plugin(site: FakeSite) -> None:
    site.distribution("fake-family", {"fake_first": site.family("first", "fake_shared", "fake_first_v0")})
    site.distribution("fake-other-family", {"fake_second": site.family("second", "fake_shared", "fake_second_v0")})
    with pytest.raises(PluginConflictError) as info:
        build_registry()
    assert info.value.plugin == "fake_second"  # loaded second (entry points load by name): the one to disable


def test_a_validation_error_names_its_plugin(site: FakeSite) -> None:
    site.distribution("fake-family", {"fake_typo": site.module("typo", MISSPELLED_SOURCE)})
    with pytest.raises(PluginValidationError) as info:
        build_registry()
    assert info.value.plugin == "fake_typo"
    module = importlib.import_module(site.module("noparse", NO_PARSER_SOURCE))  # no entry point: registered in-process
    with pytest.raises(PluginValidationError) as info:
        build_registry([("noparse", module)], load_entry_points=False)
    assert info.value.plugin == "noparse"  # an in-process plugin: its registered name


def test_an_in_process_name_conflict_names_the_plugin() -> None:
    plugins.register_plugin(_Answers(), "fake_in_process")
    try:
        with pytest.raises(PluginConflictError) as info:
            plugins.register_plugin(_Answers(), "fake_in_process")
        assert info.value.plugin == "fake_in_process"
    finally:
        plugins.unregister_plugin("fake_in_process")


class _Answers:
    """A plugin that only declares an answer type (enough to be a valid plugin)."""

    @hookimpl
    def trace_answer_types(self) -> list[AnswerTypeSpec]:
        return [AnswerTypeSpec("fake_in_process_answer")]


# --- an installed official family filtered out by the environment --------------------------------


def _bbox_contract() -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
    }


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The selection variables unset; the process-wide registry rebuilt around the test with them restored."""
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    monkeypatch.delenv(BLOCK_ENV, raising=False)
    plugins.reset_registry()
    yield monkeypatch
    monkeypatch.undo()
    plugins.reset_registry()


DISABLED = "unset TRACE_TASKS_DISABLE_PLUGINS (or take the family out of it) to score annotation type 'bbox'"
LEFT_OUT = "add trace-plugins-bbox to TRACE_TASKS_PLUGINS (or unset it) to score annotation type 'bbox'"


@pytest.mark.parametrize(
    ("variable", "value", "advice"),
    [
        (BLOCK_ENV, "bbox", DISABLED),  # the entry-point name
        (BLOCK_ENV, "trace-plugins-bbox", DISABLED),  # the distribution
        (ALLOW_ENV, "point,trace-plugins-segment", LEFT_OUT),
        (ALLOW_ENV, "", LEFT_OUT),
    ],
)
def test_a_disabled_family_says_which_variable_to_change(
    plugin_env: pytest.MonkeyPatch, variable: str, value: str, advice: str
) -> None:
    plugin_env.setenv(variable, value)
    plugins.reset_registry()
    registry = plugins.get_registry()
    assert registry.disabled["bbox"] == registry.disabled["bbox_set_map"] == variable
    assert ("point" in registry.disabled) is (value == "")  # a family that is loaded is not disabled

    def check(error: MissingFamilyError) -> None:
        message = str(error)
        assert message.startswith(advice), message  # what to do first
        assert "the trace-plugins-bbox family is installed" in message and "pip install" not in message
        assert (error.disabled_by, error.distribution, error.annotation_type) == (variable, "trace-plugins-bbox", "bbox")

    with pytest.raises(MissingFamilyError) as caught:
        resolve_reward_contract(answer_type="integer", annotation_type="bbox")
    check(caught.value)
    with pytest.raises(MissingFamilyError) as caught:
        validate_reward_contract_payload(_bbox_contract())
    check(caught.value)
    with pytest.raises(MissingFamilyError) as caught:
        score_trace_response(
            response='{"answer": 3, "annotation": [0, 0, 10, 10]}',
            answer_gt={"type": "integer", "value": 3},
            annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
            reward_contract=_bbox_contract(),
        )
    check(caught.value)
    instance = {
        "answer_gt": {"type": "integer", "value": 3},
        "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
        "reward_contract": _bbox_contract(),
    }
    problems = instance_problems(instance)
    assert [p.path for p in problems] == ["$.annotation_gt.type"]  # reported once, where the type is
    assert problems[0].message.startswith(advice) and "pip install" not in problems[0].message


def test_a_family_that_is_not_installed_still_says_pip_install(plugin_env: pytest.MonkeyPatch) -> None:
    registry = build_registry(load_entry_points=False)  # nothing skipped: nothing is known to be disabled
    assert registry.disabled == {}
    error = registry.missing_family("bbox")
    assert error is not None and error.disabled_by is None
    assert str(error).endswith("which is not installed: pip install trace-plugins-bbox")
    assert plugins.get_registry().missing_family("bbox") is None  # installed and loaded here
