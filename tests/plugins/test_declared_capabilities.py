"""Declared capabilities (issue 36, item 4): a family says whether its parse is pure and what an image-blind
policy answers; the scoring pipeline's target memo and ``trace-tasks audit`` ask, never a plugin's name.

Two third-party families written from docs/plugins.md alone: the circle example (a ``ShapeFamily``
declaring both on its ``Primitive``) and a hand-written one declaring both on its ``AnnotationTypeSpec``.
Each gets the memo and the audit's whole-image policy; the kit catches a false declaration.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from trace_tasks import (
    AnnotationParseError,
    AnnotationScore,
    AnnotationTypeSpec,
    ScoringContext,
    compile_instance,
    hookimpl,
    resolve_reward_contract,
    score_trace_response,
)
from trace_tasks.cli._views import audit
from trace_tasks.family import ImageBlind, check_family, coordinates
from trace_tasks.scoring import _pipeline

SIZE = [640, 480]


def _instance(annotation_type: str, value: Any, answer: int = 2) -> dict[str, Any]:
    return {
        "answer_gt": {"type": "integer", "value": answer},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type=annotation_type).to_dict(),
        "image_size": SIZE,
    }


def _remembered(entry_name: str, instance: dict[str, Any], response: str) -> list[dict[str, float]]:
    """Score ``response`` three times with the same ground-truth object; what the memo then holds for the type."""
    _pipeline._parsed_targets.clear()
    _pipeline._seen_values.clear()
    results = [score_trace_response(response=response, **instance) for _ in range(3)]
    return [result for result in results if any(entry.name == entry_name for entry, _ in _pipeline._parsed_targets.values())]


def _whole_image_answers(instances: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    compiled = [compile_instance(instance) for instance in instances]
    result = audit.audit(compiled, {})
    return {(entry["annotation_type"], entry["policy"]): entry["rows"] for entry in result.entries()}


# --- the circle example (a ShapeFamily) ------------------------------------------------------------


def test_the_circle_family_gets_the_target_memo(register: Any, circle_plugin: Any) -> None:
    register(circle_plugin, "circle")
    instance = _instance("circle_set", [[100, 100, 40], [300, 200, 25]])
    response = '{"answer": 2, "annotation": [[100, 100, 40]]}'
    remembered = _remembered("circle_set", instance, response)
    assert remembered, "the circle family declares pure_parse: its target parse is remembered"
    _pipeline._LEAN = False
    try:
        general = score_trace_response(response=response, **instance)
    finally:
        _pipeline._LEAN = True
    assert all(result == general for result in remembered)


def test_the_circle_family_gets_the_audits_image_blind_policy(register: Any, circle_plugin: Any) -> None:
    register(circle_plugin, "circle")
    instances = [
        _instance("circle", [100, 100, 40]),
        _instance("circle_set", [[320, 240, 200]]),
        _instance("circle_set", [[1, 1, 1]]),
    ]
    rows = _whole_image_answers(instances)
    assert rows[("circle", audit.MAJORITY_WHOLE)] == 1 and rows[("circle_set", audit.MAJORITY_WHOLE)] == 2
    assert ("circle", audit.MAJORITY_MEAN_BOX) not in rows  # averaged is not declared
    member = compile_instance(instances[1])
    answer = audit.response(audit.CORRECT_WHOLE, member, audit.Group("integer", "circle_set", [member]), 2)
    assert answer == {"answer": 2, "annotation": [[320, 240, 240]]}  # the inscribed circle, as the example declares
    assert member.score(audit.dumps(answer))["annotation_reward"] == pytest.approx((200 / 240) ** 2)


def test_the_circle_family_passes_the_kit_with_its_declarations(register: Any, circle_plugin: Any) -> None:
    register(circle_plugin, "circle")
    assert check_family(types=["circle", "circle_set"]) == []


# --- a hand-written family, declaring on its AnnotationTypeSpec ------------------------------------------


class Spans:
    """``span``: a horizontal band ``[y0, y1]`` of the image, scored by 1-D IoU; written from docs/plugins.md.

    ``pure`` and ``blind`` say what it declares. Flaws that make ``pure_parse`` false: ``stateful`` makes
    its parse depend on a counter, ``mutating`` parses to a list its score hook then changes; ``bad_blind``
    declares an image-blind item that does not parse.
    """

    def __init__(
        self, *, pure: bool = True, blind: bool = True, stateful: bool = False, mutating: bool = False, bad_blind: bool = False
    ) -> None:
        self.pure, self.blind, self.stateful, self.mutating, self.bad_blind = pure, blind, stateful, mutating, bad_blind
        self.parses = 0

    @hookimpl
    def trace_annotation_types(self) -> Sequence[AnnotationTypeSpec]:
        item = (lambda width, height: [height, 0]) if self.bad_blind else (lambda width, height: [0, height])
        return [
            AnnotationTypeSpec(
                "span", ("span_iou_v0",), "a horizontal band [y0, y1]", shape="scalar",
                examples=([0, 10], [2.5, 4]), parsed_value="tuple (y0, y1) of floats with y0 < y1",
                pure_parse=self.pure, image_blind=ImageBlind(item) if self.blind else None,
            )
        ]  # fmt: skip

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "span_iou_v0" if annotation_type == "span" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> tuple[float, float] | None:
        if annotation_type != "span":
            return None
        lo, hi = coordinates(value, 2)
        if not lo < hi:
            raise AnnotationParseError("a span needs y0 < y1")
        self.parses += 1
        if self.mutating:
            return [lo, hi]  # type: ignore[return-value]
        return (lo, hi + self.parses * 1e-9) if self.stateful else (lo, hi)

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: tuple[float, float], target: tuple[float, float], context: ScoringContext
    ) -> AnnotationScore | None:
        if reward_id != "span_iou_v0":
            return None
        if self.mutating and isinstance(target, list):
            target.append("seen")  # a hook that changes a parsed value: a remembered parse would drift
        inter = max(0.0, min(prediction[1], target[1]) - max(prediction[0], target[0]))
        union = (prediction[1] - prediction[0]) + (target[1] - target[0]) - inter
        return AnnotationScore(min(1.0, inter / union) if union > 0 else 0.0)


@pytest.mark.parametrize("pure", [True, False])
def test_a_hand_written_family_gets_the_memo_only_when_it_declares_it(register: Any, pure: bool) -> None:
    register(Spans(pure=pure), "spans")
    remembered = _remembered("span", _instance("span", [120, 360]), '{"answer": 2, "annotation": [100, 380]}')
    assert bool(remembered) is pure


@pytest.mark.parametrize("blind", [True, False])
def test_a_hand_written_family_gets_the_audits_policy_only_when_it_declares_it(register: Any, blind: bool) -> None:
    register(Spans(blind=blind), "spans")
    rows = _whole_image_answers([_instance("span", [120, 360]), _instance("span", [0, 480], answer=3)])
    assert ((("span", audit.MAJORITY_WHOLE) in rows) and (("span", audit.CORRECT_WHOLE) in rows)) is blind
    if blind:
        member = compile_instance(_instance("span", [0, 480]))
        answer = audit.response(audit.CORRECT_WHOLE, member, audit.Group("integer", "span", [member]), 2)
        assert answer == {"answer": 2, "annotation": [0, 480]}
        assert member.score(audit.dumps(answer))["annotation_reward"] == 1.0


def test_the_hand_written_family_passes_the_kit(register: Any) -> None:
    register(Spans(), "spans")
    assert check_family(types="span") == []


@pytest.mark.parametrize(
    ("flaw", "check"),
    [({"mutating": True}, "pure-parse"), ({"bad_blind": True}, "image-blind")],
)
def test_the_kit_catches_a_false_declaration(register: Any, flaw: dict[str, bool], check: str) -> None:
    register(Spans(**flaw), "spans")
    problems = check_family(types="span")
    assert problems and {problem.check for problem in problems} == {check}, problems


def test_the_kit_catches_a_parse_that_depends_on_more_than_the_value(register: Any) -> None:
    register(Spans(stateful=True), "spans")
    assert "pure-parse" in {problem.check for problem in check_family(types="span")}


def test_no_module_or_plugin_name_decides_anything() -> None:
    """The pipeline and the audit hold no family's name (the declarations are asked instead)."""
    # Read from the source tree, not through inspect: the compiled build imports _pipeline as an extension module.
    package = Path(__file__).resolve().parents[2] / "trace_core" / "src"
    for module in (_pipeline, audit):
        source = (package / (module.__name__.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        for name in itertools.chain(("trace_plugins_", "ShapeFamily", "_shapes"), ('"bbox"', '"point"', '"segment"')):
            assert name not in source, (module.__name__, name)
