"""Plugin contract v2, in process: owners, declared reward ids, user pins, hooks through pluggy, plugin bugs.

* A type has one owner; only the owner names its default id, a non-owner
  answering ``trace_resolve_reward_id`` is a load error and changes nothing.
* The current id is the owner's default unless the user pins another
  (``TRACE_TASKS_REWARD_IDS``, or ``pin_reward_id`` which wins); bad pins fail
  loudly, naming the variable; a registered-but-not-current id is refused by
  validation with the pin to set.
* Every hook works through ``registry.manager.hook`` and returns the
  responsible plugin's answer.
* A score hook that breaks its contract fails the response (never the caller)
  and is logged once per plugin and kind.
* A third party adds ``bbox_giou_v1`` for ``bbox`` (``examples/giou_bbox``,
  registered in-process without its entry point): nothing changes until the
  user pins it; without the ``bbox`` owner it is an orphan.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import trace_tasks
from trace_tasks import (
    AnnotationExplanation,
    AnnotationScore,
    PluginConflictError,
    PluginValidationError,
    RewardPinError,
    UnknownRewardIdError,
    get_registry,
    hookimpl,
    pin_reward_id,
    pinned_reward_ids,
    resolve_reward_contract,
    score_trace_response,
    unpin_reward_id,
    validate_reward_contract_payload,
)
from trace_tasks.cli import main
from trace_tasks.errors import AnnotationParseError
from trace_tasks.family import Primitive, ShapeFamily, pairwise
from trace_tasks.plugins import BLOCK_ENV, PINS_ENV, Box, Polyline, build_registry, reset_registry
from trace_tasks.scoring import _plugin_calls as reward_scoring

from ..core.test_plugin_loading import FakeSite, site  # noqa: F401  (site is a fixture)
from .interval_family import V0, V1, DefaultHijacker, IntervalFamily, giou01, iou

GIOU_SRC = Path(__file__).resolve().parents[2] / "examples" / "giou_bbox" / "src"
GIOU = "bbox_giou_v1"
SOFT_IOU = "bbox_soft_iou_v0"
BOX_TARGET = [0, 0, 10, 10]
BOX_NEAR = [5, 5, 15, 15]  # IoU 25/175 = 1/7; hull 225, so GIoU = 1/7 - 50/225 and the reward (GIoU + 1) / 2 = 29/63
BOX_APART = [20, 0, 30, 10]  # IoU 0; GIoU = -100/300, reward 1/3


@pytest.fixture(autouse=True)
def _fresh_bug_reports() -> Iterator[None]:
    """Plugin bugs are logged once per plugin and kind per process: forget them around each test."""
    reward_scoring._reported.clear()
    yield
    reward_scoring._reported.clear()


@pytest.fixture(autouse=True)
def _no_pins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No pin from the outer environment; in-process pins made by a test are undone after it."""
    monkeypatch.delenv(PINS_ENV, raising=False)
    reset_registry()
    yield
    for annotation_type in ("interval", "bbox", "span", "span_set"):
        unpin_reward_id(annotation_type)
    reset_registry()


@pytest.fixture
def giou_rewards(monkeypatch: pytest.MonkeyPatch) -> object:
    """The example's ShapeRewards object (what its entry point names), imported from its source folder."""
    monkeypatch.syspath_prepend(str(GIOU_SRC))
    import trace_plugins_bbox_giou.plugin as plugin

    return plugin.rewards


def _contract(annotation_type: str, reward_id: str) -> dict[str, Any]:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": reward_id, "type": annotation_type},
    }


def _score(annotation_type: str, target: Any, prediction: Any, contract: Any, **options: Any) -> dict[str, float]:
    return score_trace_response(
        response=json.dumps({"answer": 3, "annotation": prediction}),
        answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": annotation_type, "value": target},
        reward_contract=contract,
        **options,
    )


# --------------------------------------------------------------------------- ownership


def test_a_non_owner_answering_resolve_is_a_load_error(register: Any) -> None:
    register(IntervalFamily(current=V1), "interval")
    with pytest.raises(PluginValidationError) as caught:
        register(DefaultHijacker(V0), "hijacker")
    message = str(caught.value)
    assert "plugin 'hijacker' (registered in-process) answers trace_resolve_reward_id" in message
    assert "'interval'" in message and "plugin 'interval'" in message
    assert f"{PINS_ENV}=interval={V0}" in message  # what the user does instead
    # Nothing changed: the failed registration left the owner's default current.
    registry = get_registry()
    assert "hijacker" not in {p.name for p in registry.plugins}
    assert registry.current_reward_id("interval") == V1
    assert resolve_reward_contract(answer_type="integer", annotation_type="interval").annotation.id == V1


def test_a_non_owner_returning_none_is_fine(register: Any) -> None:
    register(IntervalFamily(current=V1), "interval")
    register(DefaultHijacker(answer=None), "bystander")  # type: ignore[arg-type]
    assert get_registry().current_reward_id("interval") == V1


# --------------------------------------------------------------------------- pins


def test_pin_through_the_environment(register: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PINS_ENV, f" interval = {V0} ")
    reset_registry()
    register(IntervalFamily(current=V1), "interval")
    entry = get_registry().annotation_types["interval"]
    assert (entry.default_reward_id, entry.current_reward_id, entry.pinned_by) == (V1, V0, PINS_ENV)
    assert pinned_reward_ids() == {"interval": V0}
    assert resolve_reward_contract(answer_type="integer", annotation_type="interval").annotation.id == V0
    result = _score("interval", [0, 10], [5, 15], _contract("interval", V0))
    assert result["annotation_reward"] == pytest.approx(iou((5, 15), (0, 10)))
    assert _score("interval", [0, 10], [5, 15], _contract("interval", V1))["annotation_parse_ok"] == 0.0


def test_pin_in_process_wins_over_the_environment(register: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PINS_ENV, f"interval={V0}")
    reset_registry()
    register(IntervalFamily(current=V1), "interval")
    assert get_registry().current_reward_id("interval") == V0
    pin_reward_id("interval", V1)
    entry = get_registry().annotation_types["interval"]
    assert (entry.current_reward_id, entry.pinned_by) == (V1, "trace_tasks.pin_reward_id()")
    assert trace_tasks.resolve_annotation_reward_contract_id("interval") == V1
    unpin_reward_id("interval")  # the variable's pin applies again
    entry = get_registry().annotation_types["interval"]
    assert (entry.current_reward_id, entry.pinned_by) == (V0, PINS_ENV)


def test_build_registry_takes_pins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PINS_ENV, f"interval={V1}")
    registry = build_registry([("interval", IntervalFamily(current=V1))], load_entry_points=False, pins={"interval": V0})
    entry = registry.annotation_types["interval"]
    assert (entry.default_reward_id, entry.current_reward_id, entry.pinned_by) == (V1, V0, "trace_tasks.pin_reward_id()")
    assert registry.reward_ids[V0].current and not registry.reward_ids[V1].current


@pytest.mark.parametrize(
    ("pins", "expected"),
    [
        ("intervall=interval_iou_v0", [f"{PINS_ENV} pins annotation type 'intervall'", "did you mean 'interval'"]),
        ("interval=bbox_soft_iou_v0", [f"{PINS_ENV} pins interval=bbox_soft_iou_v0", "it scores 'bbox'", f"{V0}, {V1}"]),
        ("interval=interval_iou_v9", [f"{PINS_ENV} pins interval=interval_iou_v9", "no installed plugin declares it"]),
        ("interval", [f"{PINS_ENV}: 'interval' is not TYPE=REWARD_ID"]),
        ("interval=", [f"{PINS_ENV}: 'interval=' is not TYPE=REWARD_ID"]),
        (f"bbox={SOFT_IOU},={V0}", [f"{PINS_ENV}: '={V0}' is not TYPE=REWARD_ID", "bbox=bbox_giou_v1"]),
    ],
)
def test_a_bad_pin_in_the_environment_names_the_variable(
    register: Any, monkeypatch: pytest.MonkeyPatch, pins: str, expected: list[str]
) -> None:
    monkeypatch.setenv(PINS_ENV, pins)
    with pytest.raises(RewardPinError) as caught:
        register(IntervalFamily(), "interval")
    for text in expected:
        assert text in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_bad_pin_in_process_raises_and_changes_nothing(register: Any) -> None:
    register(IntervalFamily(current=V1), "interval")
    with pytest.raises(RewardPinError, match="pin_reward_id\\(\\) pins interval=bbox_soft_iou_v0, but it scores 'bbox'"):
        pin_reward_id("interval", SOFT_IOU)
    with pytest.raises(RewardPinError, match="did you mean 'interval'"):
        pin_reward_id("intervals", V0)
    assert get_registry().current_reward_id("interval") == V1
    assert pinned_reward_ids() == {}


def test_a_registered_but_not_current_id_is_refused_with_the_pin_to_set(register: Any) -> None:
    register(IntervalFamily(current=V1), "interval")
    registry = get_registry()
    with pytest.raises(UnknownRewardIdError) as caught:
        registry.check_reward_id(V0)
    message = str(caught.value)
    # What to do first (rebuild the contracts, or pin the id), then the facts.
    assert message.startswith(
        f"reward id '{V0}' is not current: rebuild the contracts with resolve_reward_contract (they will name '{V1}'), "
        f"or pin '{V0}' to score them as they are"
    )
    assert message.endswith(f"whose current id is '{V1}' (the owner's default)")
    assert f"{PINS_ENV}=interval={V0}" in message and f"trace_tasks.pin_reward_id('interval', '{V0}')" in message

    problem = validate_reward_contract_payload(_contract("interval", V0), answer_type="integer", annotation_type="interval")
    assert problem is not None and V1 in problem  # the current id

    pin_reward_id("interval", V0)
    assert validate_reward_contract_payload(_contract("interval", V0), annotation_type="interval") is None
    with pytest.raises(UnknownRewardIdError) as caught:
        get_registry().check_reward_id(V1)
    message = str(caught.value)
    assert f"they will name '{V0}'), or pin '{V1}' back to score them as they are" in message
    pin_back = message.index(f"trace_tasks.pin_reward_id('interval', '{V1}')")
    assert pin_back < message.index("pinned by trace_tasks.pin_reward_id()")  # what to do before the facts
    assert f"{PINS_ENV}=interval={V1}" not in message  # an in-process pin wins over the variable: it would not help


def test_validation_names_the_pin_to_set_for_a_registered_id(register: Any) -> None:
    register(IntervalFamily(current=V1), "interval")
    problem = validate_reward_contract_payload(_contract("interval", V0), answer_type="integer", annotation_type="interval")
    assert problem is not None and problem.startswith(f"reward id '{V0}' is not current: rebuild the contracts")
    assert f"{PINS_ENV}=interval={V0}" in problem and f"'{V1}'" in problem
    # The rule's current ids (one per installed type) come last, capped.
    rule = problem.index("; reward_contract.annotation.id must be one of {")
    assert problem.index(f"{PINS_ENV}=interval={V0}") < rule
    assert re.search(r" and \d+ more\}$", problem[rule:]), problem[rule:]


def test_resolve_reward_contract_emits_the_pinned_id(register: Any) -> None:
    register(IntervalFamily(current=V1), "interval")
    assert resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict() == _contract("interval", V1)
    pin_reward_id("interval", V0)
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    assert contract == _contract("interval", V0)
    assert validate_reward_contract_payload(contract, answer_type="integer", annotation_type="interval") is None


# --------------------------------------------------------------------------- every hook through pluggy


def test_every_hook_through_pluggy_returns_the_responsible_answer(register: Any, giou_rewards: object) -> None:
    family = IntervalFamily(current=V1)
    register(family, "interval")
    register(giou_rewards, "bbox_giou")
    pin_reward_id("interval", V0)
    hook = get_registry().manager.hook

    # Per-call hooks (firstresult): the owner or the id's plugin answers, everyone else returns None.
    assert hook.trace_parse_annotation(annotation_type="interval", value=[0, 4]) == (0.0, 4.0)
    assert hook.trace_parse_annotation(annotation_type="bbox", value=[10, 0, 0, 10]) == (0.0, 0.0, 10.0, 10.0)
    context = trace_tasks.ScoringContext(half_life_px=32.0)
    score = hook.trace_score_annotation(reward_id=V1, prediction=(12.0, 20.0), target=(0.0, 10.0), context=context)
    assert score == AnnotationScore(giou01((12.0, 20.0), (0.0, 10.0)), {"annotation_interval_reward_version": 1.0})
    box, near = (0.0, 0.0, 10.0, 10.0), (5.0, 5.0, 15.0, 15.0)
    assert hook.trace_score_annotation(reward_id=GIOU, prediction=near, target=box, context=context).reward == pytest.approx(
        29 / 63
    )
    assert hook.trace_score_annotation(reward_id=SOFT_IOU, prediction=near, target=box, context=context).reward == pytest.approx(
        1 / 7
    )
    assert hook.trace_score_annotation(reward_id="nobody_v0", prediction=near, target=box, context=context) is None
    explained = hook.trace_explain_annotation(reward_id=GIOU, prediction=near, target=box, context=context)
    assert isinstance(explained, AnnotationExplanation) and explained.metric == "giou"
    assert explained.score.reward == pytest.approx(29 / 63)
    explained = hook.trace_explain_annotation(reward_id=V0, prediction=None, target=(0.0, 10.0), context=context)
    assert explained.score.reward == 0.0 and [i.value for i in explained.unmatched_targets] == [(0.0, 10.0)]
    assert hook.trace_draw_annotation(annotation_type="interval", item=(0.0, 4.0)) == [Polyline([(0.0, 0.0), (4.0, 0.0)])]
    assert hook.trace_draw_annotation(annotation_type="bbox", item=box) == [Box(*box)]
    assert hook.trace_draw_annotation(annotation_type="nobody", item=box) is None
    # The resolve hook answers the owner's default; it knows nothing of the pin.
    assert hook.trace_resolve_reward_id(annotation_type="interval") == V1
    assert hook.trace_resolve_reward_id(annotation_type="bbox") == SOFT_IOU
    assert get_registry().current_reward_id("interval") == V0

    # Collecting hooks: one list per plugin that implements them.
    types = {spec.name for answer in hook.trace_annotation_types() for spec in answer}
    assert {"interval", "bbox", "point", "segment_set"} <= types
    added = [(spec.reward_id, spec.annotation_type) for answer in hook.trace_reward_ids() for spec in answer]
    # The box family declares its click versions (their own prediction form) through the same hook.
    assert sorted(added) == [("bbox_click_hit_v0", "bbox"), ("bbox_click_soft_v0", "bbox"), (GIOU, "bbox")]
    answers = {spec.name for answer in hook.trace_answer_types() for spec in answer}
    assert {"integer", "matrix", "hex_color"} <= answers


# --------------------------------------------------------------------------- plugin bugs in score hooks


class BadScorer(IntervalFamily):
    """The interval family, but its score hook returns ``bad`` (a callable of the true score)."""

    def __init__(self, bad: Callable[[AnnotationScore], Any]) -> None:
        super().__init__(current=V1)
        self.bad = bad

    @hookimpl
    def trace_score_annotation(self, reward_id: str, prediction: Any, target: Any, context: Any) -> Any:
        good = super().trace_score_annotation(reward_id, prediction, target, context)
        return None if good is None else self.bad(good)


BAD_RESULTS: dict[str, tuple[Callable[[AnnotationScore], Any], str]] = {
    "float": (lambda s: s.reward, "returned float instead of an AnnotationScore"),
    "none": (lambda s: None, "returned NoneType instead of an AnnotationScore"),
    "dict": (lambda s: {"reward": s.reward}, "returned dict instead of an AnnotationScore"),
    "string_reward": (lambda s: AnnotationScore("x"), "reward 'x' is not a finite number"),  # type: ignore[arg-type]
    # A bool is not a reward, though the compiled build would read True as 1.0 where the field is read as a float.
    "bool_reward": (lambda s: AnnotationScore(True, s.diagnostics), "reward True is not a finite number"),
    "over_one": (lambda s: AnnotationScore(1.7, s.diagnostics), "reward 1.7 is outside [0, 1]"),
    "nan_reward": (lambda s: AnnotationScore(math.nan, s.diagnostics), "reward nan is not a finite number"),
    "nan_diagnostic": (
        lambda s: AnnotationScore(s.reward, {"annotation_interval_width": math.nan}),
        "diagnostic 'annotation_interval_width' is nan, not a finite number",
    ),
}


@pytest.mark.parametrize("mode", ["answer_and_annotation", "answer"])
@pytest.mark.parametrize("kind", sorted(BAD_RESULTS))
def test_a_broken_score_result_fails_the_response_and_is_logged_once(
    register: Any, caplog: pytest.LogCaptureFixture, kind: str, mode: str
) -> None:
    bad, detail = BAD_RESULTS[kind]
    register(BadScorer(bad), "badscore")
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    with caplog.at_level(logging.WARNING, logger="trace_tasks"):
        results = [_score("interval", [0, 10], [1, 10], contract, trace_reward_mode=mode) for _ in range(3)]
    for result in results:
        assert result["annotation_parse_ok"] == 0.0 and result["annotation_reward"] == 0.0
        assert result["answer_reward"] == 1.0 and not any(k.startswith("annotation_interval") for k in result)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert "plugin 'badscore'" in message and f"scoring '{V1}'" in message and detail in message


def test_each_kind_of_bug_is_logged_once_per_plugin(register: Any, caplog: pytest.LogCaptureFixture) -> None:
    answers = iter([1.0, AnnotationScore(1.7), 1.0, AnnotationScore(1.7), AnnotationScore(0.5)])
    register(BadScorer(lambda s: next(answers)), "badscore")
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    with caplog.at_level(logging.WARNING, logger="trace_tasks"):
        rewards = [_score("interval", [0, 10], [1, 10], contract)["annotation_reward"] for _ in range(5)]
    assert rewards == [0.0, 0.0, 0.0, 0.0, 0.5]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2  # "result" and "range"


def test_a_dropped_diagnostic_key_says_the_result_stands(register: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The log said "the response counts as an annotation failure" while the reward stood.
    register(BadScorer(lambda s: AnnotationScore(s.reward, {**s.diagnostics, "overall": 1.0})), "badscore")
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    with caplog.at_level(logging.WARNING, logger="trace_tasks"):
        result = _score("interval", [0, 10], [0, 10], contract)
    assert result["annotation_reward"] == 1.0 and result["annotation_parse_ok"] == 1.0
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "diagnostic key 'overall'" in warning and "the key is dropped and the rest of the result stands" in warning
    assert "annotation failure" not in warning


class BadParser(IntervalFamily):
    """The interval family, but its parse hook raises ``exc`` on predictions (the target parses)."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(current=V1)
        self.exc = exc

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: Any) -> Any:
        if value == [1, 10]:
            raise self.exc
        return super().trace_parse_annotation(annotation_type, value)


@pytest.mark.parametrize(
    ("exc", "logged"),
    [(RuntimeError("parse bug"), True), (AnnotationParseError("not an interval"), False)],
    ids=["bug", "parse_error"],
)
def test_a_parse_hook_raising_on_a_prediction_is_logged_as_its_bug(
    register: Any, caplog: pytest.LogCaptureFixture, exc: Exception, logged: bool
) -> None:
    # Any exception but AnnotationParseError is the plugin's bug: without the log, a broken parse hook
    # looks like a model that never writes a value, for a whole run.
    register(BadParser(exc), "badparse")
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    with caplog.at_level(logging.WARNING, logger="trace_tasks"):
        results = [_score("interval", [0, 10], [1, 10], contract) for _ in range(3)]
    assert all(r["annotation_parse_ok"] == 0.0 and r["annotation_reward"] == 0.0 for r in results)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if not logged:
        assert warnings == []
        return
    (warning,) = warnings  # once per plugin and kind
    assert "plugin 'badparse'" in warning and "trace_parse_annotation raised RuntimeError: parse bug" in warning
    assert "counts as a parse failure" in warning


# --------------------------------------------------------------------------- load errors name who to blame


CLONE_SOURCE = """
from trace_tasks import AnnotationTypeSpec, RewardIdSpec, hookimpl

@hookimpl
def trace_annotation_types():
    return [AnnotationTypeSpec({type_name!r}, ("clone_v0",))]

@hookimpl
def trace_reward_ids():
    return [RewardIdSpec(rid, "bbox") for rid in {extra_ids!r}]

@hookimpl
def trace_resolve_reward_id(annotation_type):
    return "clone_v0" if annotation_type == {type_name!r} else None

@hookimpl
def trace_parse_annotation(annotation_type, value):
    return None

@hookimpl
def trace_score_annotation(reward_id, prediction, target, context):
    return None
"""


def test_two_owners_of_a_type_name_both_distributions_and_the_disable_variable(site: FakeSite) -> None:  # noqa: F811
    module = site.module("clone", CLONE_SOURCE.format(type_name="bbox", extra_ids=[]))
    site.distribution("trace-plugins-bbox-clone", {"bbox_clone": module})
    with pytest.raises(PluginConflictError) as caught:
        build_registry()
    message = str(caught.value)
    assert "annotation type 'bbox' is owned by both plugin 'bbox' (distribution trace-plugins-bbox 0.1.0)" in message
    assert "plugin 'bbox_clone' (distribution trace-plugins-bbox-clone 0.1)" in message
    assert f"{BLOCK_ENV}=bbox_clone" in message


def test_two_declarers_of_a_reward_id_name_both_distributions(site: FakeSite) -> None:  # noqa: F811
    module = site.module("clone", CLONE_SOURCE.format(type_name="clone", extra_ids=[SOFT_IOU]))
    site.distribution("trace-plugins-bbox-clone", {"bbox_clone": module})
    with pytest.raises(PluginConflictError) as caught:
        build_registry()
    message = str(caught.value)
    assert f"reward id '{SOFT_IOU}' is declared by both plugin 'bbox' (distribution trace-plugins-bbox" in message
    assert "trace-plugins-bbox-clone" in message and f"{BLOCK_ENV}=bbox_clone" in message


def test_two_in_process_owners_of_a_type_are_a_conflict(register: Any) -> None:
    register(IntervalFamily(), "interval")
    with pytest.raises(PluginConflictError, match=r"owned by both plugin 'interval' .* and plugin 'interval2'"):
        register(IntervalFamily(), "interval2")


class Unmarked:
    """Names a hook but forgot ``@hookimpl``: pluggy alone would ignore it silently."""

    def trace_parse_annotation(self, annotation_type: str, value: object) -> Any:
        return value


class MarkedTypo:
    @hookimpl
    def trace_parse_anotation(self, annotation_type: str, value: object) -> Any:
        return value


class UnmarkedTypo:
    @hookimpl
    def trace_answer_types(self) -> list[Any]:
        return []

    def trace_scor_annotation(self, reward_id: str, prediction: Any, target: Any, context: Any) -> Any:
        return None


@pytest.mark.parametrize(
    ("plugin", "expected"),
    [
        (Unmarked(), "plugin 'oops' defines trace_parse_annotation but it is not marked @trace_tasks.hookimpl"),
        (MarkedTypo(), "implements a hook that matches no trace_tasks hook spec"),
        (
            UnmarkedTypo(),
            "plugin 'oops' defines trace_scor_annotation, which is not a trace_tasks hook (did you mean 'trace_score_annotation'",
        ),
    ],
    ids=["unmarked", "marked-typo", "unmarked-typo"],
)
def test_hook_lookalikes_are_refused(plugin: object, expected: str) -> None:
    with pytest.raises(PluginValidationError) as caught:
        build_registry([("oops", plugin)], load_entry_points=False)
    assert expected in str(caught.value)
    if isinstance(plugin, MarkedTypo):
        assert "trace_parse_anotation" in str(caught.value) and "did you mean 'trace_parse_annotation'" in str(caught.value)


# --------------------------------------------------------------------------- a ShapeFamily offering two versions


def _span_iou(a: Any, b: Any, ctx: Any = None) -> float:
    return iou(a, b)


def _span_giou(a: Any, b: Any, ctx: Any = None) -> float:
    return giou01(a, b)


def _parse_span(value: Any) -> tuple[float, float]:
    from trace_tasks.errors import AnnotationParseError
    from trace_tasks.family import coordinates

    lo, hi = coordinates(value, 2)
    if not lo < hi:
        raise AnnotationParseError("a span needs lo < hi")
    return (lo, hi)


SPAN = Primitive(
    name="span", parse_item=_parse_span, similarity=_span_iou, matrix=pairwise(_span_iou), metric="iou",
    examples=([0, 10], [20, 25]), parsed_item="tuple (lo, hi) of floats with lo < hi",
)  # fmt: skip
SPAN_GIOU = Primitive(name="span_giou", similarity=_span_giou, matrix=pairwise(_span_giou), metric="giou")


def span_family() -> ShapeFamily:
    return ShapeFamily(
        SPAN,
        {"span": ("scalar", ("span_iou_v0", "span_giou_v1")), "span_set": ("set", ("span_set_iou_v0", "span_set_giou_v1"))},
        versions={"span_giou_v1": SPAN_GIOU, "span_set_giou_v1": SPAN_GIOU},
    )


def test_a_shape_family_with_two_ids_per_type_serves_both(register: Any) -> None:
    register(span_family(), "span")
    registry = get_registry()
    assert registry.annotation_types["span"].reward_ids == ("span_iou_v0", "span_giou_v1")
    assert registry.current_reward_id("span") == "span_iou_v0"
    assert registry.current_reward_id("span_set") == "span_set_iou_v0"
    old = resolve_reward_contract(answer_type="integer", annotation_type="span").to_dict()
    assert _score("span", [0, 10], [12, 20], old)["annotation_reward"] == 0.0  # IoU of disjoint spans

    pin_reward_id("span", "span_giou_v1")
    new = resolve_reward_contract(answer_type="integer", annotation_type="span").to_dict()
    assert new["annotation"]["id"] == "span_giou_v1"
    result = _score("span", [0, 10], [12, 20], new)
    assert result["annotation_reward"] == pytest.approx(giou01((12.0, 20.0), (0.0, 10.0)))
    assert result["annotation_assigned_giou_mean"] == pytest.approx(result["annotation_reward"])
    assert _score("span", [0, 10], [12, 20], old)["annotation_parse_ok"] == 0.0
    assert get_registry().current_reward_id("span_set") == "span_set_iou_v0"  # pins are per type

    from trace_tasks.family import assert_family_ok

    assert_family_ok(types=["span", "span_set"])  # every id, current or not


def test_versions_must_name_offered_ids() -> None:
    with pytest.raises(ValueError, match="span_giou_v2"):
        ShapeFamily(SPAN, {"span": ("scalar", "span_iou_v0")}, versions={"span_giou_v2": SPAN_GIOU})


# --------------------------------------------------------------------------- a third party's reward version for bbox


def test_installing_giou_changes_nothing_until_pinned(register: Any, giou_rewards: object) -> None:
    v0 = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    before = _score("bbox", BOX_TARGET, BOX_NEAR, v0)
    register(giou_rewards, "bbox_giou")
    registry = get_registry()
    entry = registry.annotation_types["bbox"]
    assert (
        entry.reward_ids == (SOFT_IOU, "bbox_click_hit_v0", "bbox_click_soft_v0", GIOU)
        and entry.current_reward_id == SOFT_IOU
        and entry.pinned_by is None
    )
    assert registry.reward_ids[GIOU].plugin == "bbox_giou" and not registry.reward_ids[GIOU].current
    assert resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict() == v0
    after = _score("bbox", BOX_TARGET, BOX_NEAR, v0)
    assert after == before and after["annotation_reward"] == pytest.approx(1 / 7)
    assert _score("bbox", BOX_TARGET, BOX_NEAR, _contract("bbox", GIOU))["annotation_parse_ok"] == 0.0


def test_pinning_giou_switches_contracts_and_scoring(register: Any, giou_rewards: object) -> None:
    register(giou_rewards, "bbox_giou")
    v0 = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    pin_reward_id("bbox", GIOU)
    v1 = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()
    assert v1 == _contract("bbox", GIOU)
    assert validate_reward_contract_payload(v1, answer_type="integer", annotation_type="bbox") is None
    near = _score("bbox", BOX_TARGET, BOX_NEAR, v1)
    assert near["annotation_parse_ok"] == 1.0
    assert near["annotation_reward"] == pytest.approx(29 / 63, abs=1e-12)
    assert near["annotation_assigned_giou_mean"] == pytest.approx(29 / 63, abs=1e-12)
    assert _score("bbox", BOX_TARGET, BOX_APART, v1)["annotation_reward"] == pytest.approx(1 / 3, abs=1e-12)
    assert _score("bbox", BOX_TARGET, BOX_TARGET, v1)["annotation_reward"] == 1.0
    assert _score("bbox", BOX_TARGET, [0, 0, 0, 10], v1)["annotation_parse_ok"] == 0.0  # the owner's parse still rules

    stale = _score("bbox", BOX_TARGET, BOX_NEAR, v0)
    assert stale["annotation_parse_ok"] == 0.0 and stale["annotation_reward"] == 0.0 and stale["answer_reward"] == 1.0
    problem = validate_reward_contract_payload(v0, answer_type="integer", annotation_type="bbox")
    assert problem is not None and GIOU in problem  # names the current id and the pin to set
    with pytest.raises(UnknownRewardIdError, match=r"pinned by trace_tasks\.pin_reward_id\(\)"):
        get_registry().check_reward_id(SOFT_IOU)


def test_giou_through_the_environment_pin(register: Any, giou_rewards: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PINS_ENV, f"bbox={GIOU}")
    register(giou_rewards, "bbox_giou")
    assert trace_tasks.resolve_annotation_reward_contract_id("bbox") == GIOU
    assert get_registry().annotation_types["bbox"].pinned_by == PINS_ENV
    assert get_registry().current_reward_id("bbox_set") == "bbox_set_soft_iou_v0"


def test_without_the_bbox_owner_giou_is_an_orphan(giou_rewards: object) -> None:
    registry = build_registry([("bbox_giou", giou_rewards)], load_entry_points=False)
    assert "bbox" not in registry.annotation_types and GIOU not in registry.reward_ids
    orphan = registry.orphan_reward_ids[GIOU]
    assert (orphan.annotation_type, orphan.plugin) == ("bbox", "bbox_giou")
    assert "no installed family owns (pip install trace-plugins-bbox)" in registry.not_current_message(GIOU)
    with pytest.raises(UnknownRewardIdError, match="pip install trace-plugins-bbox"):
        registry.check_reward_id(GIOU)
    with pytest.raises(
        RewardPinError,
        match=r"^pin a type an installed family owns, or load its family \(pip install trace-plugins-bbox\): "
        r"pin_reward_id\(\) pins annotation type 'bbox', which no installed family owns$",
    ):
        build_registry([("bbox_giou", giou_rewards)], load_entry_points=False, pins={"bbox": GIOU})


def test_plugins_check_lists_the_orphan(
    register: Any, giou_rewards: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRACE_TASKS_PLUGINS", "")  # load no entry point: the bbox owner is installed but left out
    reset_registry()
    register(giou_rewards, "bbox_giou")
    left_out = "trace-plugins-bbox is installed but TRACE_TASKS_PLUGINS leaves it out: add it there"
    assert main(["plugins", "--check"]) == 1
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    assert line.startswith("bbox bbox_giou_v1: orphan: plugin 'bbox_giou' declares reward id 'bbox_giou_v1'")
    assert left_out in line and "pip install" not in line and "1 problems" in err

    assert main(["plugins"]) == 0  # the listing shows it as a problem; only --check fails on it
    out = capsys.readouterr().out
    assert "PROBLEMS (1)" in out and left_out in out.split("PROBLEMS (1)")[1]
    assert main(["plugins", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["orphan_reward_ids"] == {
        GIOU: {"annotation_type": "bbox", "plugin": "bbox_giou", "description": listing["orphan_reward_ids"][GIOU]["description"]}
    }
    assert len(listing["problems"]) == 1 and "trace-plugins-bbox" in listing["problems"][0]

    monkeypatch.setenv(PINS_ENV, f"bbox={GIOU}")
    reset_registry()
    assert main(["plugins"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    # What to do first: fix the pin, or load the family (here: the allow-list leaves it out); then what is wrong.
    assert line.startswith(
        f"trace-tasks: error: RewardPinError: correct or remove bbox={GIOU} in TRACE_TASKS_REWARD_IDS, or load its family ({left_out}"
    )
    assert line.endswith("TRACE_TASKS_REWARD_IDS pins annotation type 'bbox', which no installed family owns")


def test_validation_names_the_plugin_whose_parse_hook_raised_on_a_target(register: Any) -> None:
    # The problem read as the data's ("does not parse as interval: parse bug"), with no word of the plugin.
    from trace_tasks import instance_problems

    register(BadParser(RuntimeError("parse bug")), "badparse")
    contract = resolve_reward_contract(answer_type="integer", annotation_type="interval").to_dict()
    instance = {
        "answer_gt": {"type": "integer", "value": 3},
        "annotation_gt": {"type": "interval", "value": [1, 10]},
        "reward_contract": contract,
    }
    (problem,) = instance_problems(instance)
    assert problem.path == "$.annotation_gt.value"
    assert "the parse hook of plugin 'badparse' raised RuntimeError: parse bug" in problem.message
    assert instance_problems({**instance, "annotation_gt": {"type": "interval", "value": [0, 10]}}) == []
