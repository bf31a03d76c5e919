"""The family test kit (``trace_tasks.family``): the official families and both examples pass, broken ones do not.

The first tests are what a family author writes in their own suite: one call
to :func:`~trace_tasks.family.assert_family_ok`. The rest prove the kit
catches real bugs: a hand-written family with one flaw switched on at a time
must produce the expected problem, and only problems of that kind.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from trace_tasks import (
    AnnotationExplanation,
    AnnotationParseError,
    AnnotationScore,
    AnnotationTypeSpec,
    ExplainedItem,
    ScoringContext,
    get_registry,
    hookimpl,
)
from trace_tasks.family import (
    KitProblem,
    Primitive,
    ShapeRewards,
    assert_family_ok,
    check_family,
    coordinates,
    hostile_values,
    pairwise,
)
from trace_tasks.plugins import OFFICIAL_TYPES, Point, build_registry

from .interval_family import IntervalFamily

REPO = Path(__file__).resolve().parents[2]
GIOU_SRC = REPO / "examples" / "giou_bbox" / "src"
PLUGINS_MD = REPO / "docs" / "plugins.md"


@pytest.fixture
def giou_rewards(monkeypatch: pytest.MonkeyPatch) -> object:
    """The bbox_giou_v1 example's ShapeRewards object (what its entry point names), from its source folder."""
    monkeypatch.syspath_prepend(str(GIOU_SRC))
    import trace_plugins_bbox_giou.plugin as plugin

    return plugin.rewards


# --------------------------------------------------------------------------- the families that ship


def test_every_installed_type_passes_the_kit() -> None:
    registry = get_registry()
    assert set(OFFICIAL_TYPES) <= set(registry.annotation_types)
    assert_family_ok()


def test_the_circle_example_passes_the_kit(register: Any, circle_plugin: object) -> None:
    register(circle_plugin, "circle")
    assert_family_ok(types=["circle", "circle_set"])


def test_the_giou_example_passes_the_kit_beside_the_bbox_owner(register: Any, giou_rewards: object) -> None:
    register(giou_rewards, "bbox_giou")
    assert get_registry().annotation_types["bbox"].reward_ids == (
        "bbox_soft_iou_v0", "bbox_click_hit_v0", "bbox_click_soft_v0", "bbox_giou_v1",
    )  # fmt: skip
    assert_family_ok(types="bbox")  # both ids, the owner's and the third party's


def test_the_recording_interval_family_passes_the_kit(register: Any) -> None:
    register(IntervalFamily(), "interval")
    assert_family_ok(types=["interval"])


def test_the_kit_is_fast(register: Any, circle_plugin: object) -> None:
    """All 12 official types and the circle family, every check: well under a second on a laptop."""
    register(circle_plugin, "circle")
    import scipy.optimize  # noqa: F401  (its first import alone takes a second; not the kit's cost)

    start = time.perf_counter()
    assert check_family() == []
    assert time.perf_counter() - start < 3.0  # generous: a shared CI core; typically ~0.4 s


def test_the_kit_reports_an_orphan_id_and_a_type_nobody_owns(giou_rewards: object) -> None:
    registry = build_registry([("bbox_giou", giou_rewards)], load_entry_points=False)
    problems = check_family(registry)
    assert [(p.annotation_type, p.reward_id, p.check) for p in problems] == [("bbox", "bbox_giou_v1", "orphan")]
    assert "pip install trace-plugins-bbox" in problems[0].message and "'bbox_giou'" in problems[0].message
    assert check_family(registry, types=["bbox"]) == problems
    (missing,) = check_family(registry, types=["point"])
    assert missing.check == "installed" and "pip install trace-plugins-point" in missing.message


def test_hostile_corpus_is_fresh_and_covers_the_documented_values() -> None:
    values = hostile_values(([10, 20, 110, 220],))
    assert hostile_values(([10, 20, 110, 220],)) is not values
    kinds = {type(v).__name__ for v in values}
    assert {"float", "int", "bool", "NoneType", "str", "list", "dict", "tuple"} <= kinds
    assert any(isinstance(v, float) and math.isnan(v) for v in values)
    assert 10**400 in values
    assert any(isinstance(v, list) and 1000 <= len(v) <= 5000 for v in values)
    assert [10, 20, 110, float("inf")] in values  # one coordinate of the example replaced
    deepest = max((v for v in values if isinstance(v, list)), key=_depth)
    assert _depth(deepest) >= 200


def test_hostile_corpus_has_tiny_huge_and_mixed_scale_boxes() -> None:
    values = hostile_values(([10, 20, 110, 220],))
    for box in ([0, 0, 1e-200, 1e-200], [1e-300, 1e-300, 2e-300, 2e-300], [0, 0, 1e308, 1e308], [-1e308, -1e308, 1e308, 1e308]):
        assert box in values, box
    assert [[0, 0, 1e-200, 1e-200], [-1e308, -1e308, 1e308, 1e308]] in values  # a set mixing scales
    assert [10 * 1e-200, 20 * 1e-200, 110 * 1e-200, 220 * 1e-200] in values  # the example scaled down...
    assert [10 * 1e300, 20 * 1e300, 110 * 1e300, 220 * 1e300] in values  # ...and up, scored against itself


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


# --------------------------------------------------------------------------- a family with switchable flaws


def _closeness(p: Sequence[float], t: Sequence[float]) -> float:
    return 1.0 / (1.0 + abs(p[0] - t[0]) + abs(p[1] - t[1]))


class Toy:
    """Pairs ``[a, b]``: ``toy`` (scalar), ``toy_set`` (set), ``toy_seq`` (sequence), with at most one flaw."""

    IDS: ClassVar[dict[str, str]] = {"toy": "toy_v0", "toy_set": "toy_set_v0", "toy_seq": "toy_seq_v0"}

    def __init__(self, flaw: str = "") -> None:
        self.flaw = flaw

    #: The JSON Schema of one pair, and what the schema flaws declare instead.
    PAIR: ClassVar[dict[str, Any]] = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    SCHEMA_FLAWS: ClassVar[dict[str, Any]] = {
        "schema_permissive": {},
        "schema_rejects_examples": {"type": "array", "items": {"type": "integer"}, "minItems": 3},
        "schema_unsupported": {"type": "array", "uniqueItems": True},
    }

    @hookimpl
    def trace_annotation_types(self) -> list[AnnotationTypeSpec]:
        examples = [] if self.flaw == "no_examples" else [[1, 2], [5, 9]]
        pair = self.SCHEMA_FLAWS.get(self.flaw, self.PAIR)
        pairs = {"type": "array", "items": self.PAIR}
        return [
            AnnotationTypeSpec("toy", ("toy_v0",), shape="scalar", examples=examples, json_schema=pair),
            AnnotationTypeSpec("toy_set", ("toy_set_v0",), shape="set", examples=[examples], json_schema=pairs),
            AnnotationTypeSpec("toy_seq", ("toy_seq_v0",), shape="sequence", examples=[examples]),
        ]

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return self.IDS.get(annotation_type)

    def _pair(self, value: Any) -> tuple[float, ...]:
        if self.flaw == "keyerror" and isinstance(value, str):
            raise KeyError(value)  # a bug: only AnnotationParseError may escape
        return coordinates(value, 2)

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> Any:
        if annotation_type == "toy":
            return self._pair(value)
        if annotation_type in ("toy_set", "toy_seq"):
            if not isinstance(value, list) or len(value) > 10_000:
                raise AnnotationParseError("expected a list of pairs")
            return [self._pair(item) for item in value]
        return None

    def _reward(self, reward_id: str, p: Any, t: Any) -> float:
        if reward_id == "toy_v0":
            return _closeness(p, t)
        if not p and not t:
            return 1.0
        index_aligned = (reward_id == "toy_seq_v0" and self.flaw != "unordered_sequence") or (
            reward_id == "toy_set_v0" and self.flaw == "ordered_set"
        )
        if index_aligned:
            return sum(_closeness(a, b) for a, b in zip(p, t, strict=False)) / max(len(p), len(t))
        return len(set(p) & set(t)) / max(len(p), len(t))  # exact matches: order-free

    @hookimpl
    def trace_score_annotation(self, reward_id: str, prediction: Any, target: Any, context: ScoringContext) -> Any:
        if reward_id not in self.IDS.values():
            return None
        reward = self._reward(reward_id, prediction, target)
        diagnostics = {"annotation_toy_closeness": reward}
        if self.flaw == "half":
            reward *= 0.5
        elif self.flaw == "over":
            reward = 1.7
        elif self.flaw == "nan_diagnostic":
            diagnostics["annotation_toy_closeness"] = float("nan")
        elif self.flaw == "float":
            return reward
        elif self.flaw == "core_key":
            diagnostics["annotation_reward"] = 1.0
        elif self.flaw == "random" and isinstance(prediction, list):
            reward = time.perf_counter_ns() % 1000 / 1000
        return AnnotationScore(reward, diagnostics)


class ExplainedToy(Toy):
    """Toy with explain and draw capabilities; ``explain_off`` and ``bad_draw`` break them."""

    @hookimpl
    def trace_explain_annotation(self, reward_id: str, prediction: Any, target: Any, context: ScoringContext) -> Any:
        if reward_id != "toy_v0":
            return None
        if prediction is None:
            return AnnotationExplanation(
                AnnotationScore(0.0, {}), "one pair", "closeness", unmatched_targets=(ExplainedItem("", target),)
            )
        score = self.trace_score_annotation(reward_id, prediction, target, context)
        if self.flaw == "explain_off":
            score = AnnotationScore(score.reward * 0.9, dict(score.diagnostics))
        return AnnotationExplanation(score, "one pair", "closeness", unmatched_targets=(ExplainedItem("", target),))

    @hookimpl
    def trace_draw_annotation(self, annotation_type: str, item: Any) -> Any:
        if annotation_type != "toy":
            return None
        if self.flaw == "bad_draw":
            return [("point", item[0], item[1])]
        return [Point(item[0], item[1])]


class FramedToy(ExplainedToy):
    """ExplainedToy whose pairs are ``(x, y)`` points converted by ``trace_frame_annotation``; flaws:
    ``frame_backwards`` scales x by ``scale_y`` (it has x and y mixed up), ``frame_no_swap`` ignores ``y_first``,
    ``frame_lossy`` rounds (no exact round trip)."""

    @hookimpl
    def trace_frame_annotation(self, annotation_type: str, value: Any, scale_x: float, scale_y: float, y_first: bool) -> Any:
        if annotation_type != "toy":
            return (
                [self.trace_frame_annotation("toy", item, scale_x, scale_y, y_first) for item in value]
                if annotation_type in self.IDS
                else None
            )
        x, y = (value[1], value[0]) if y_first and self.flaw != "frame_no_swap" else value
        if self.flaw == "frame_backwards":
            return (x * scale_y, y * scale_x)
        if self.flaw == "frame_lossy":
            return (round(x * scale_x + 0.3), round(y * scale_y))
        return (x * scale_x, y * scale_y)


FRAME_FLAWS = {
    "frame_backwards": "expected x doubled, y halved",
    "frame_no_swap": "expected x and y exchanged",
    "frame_lossy": "scaled by (2, 0.5) and back scores",
}


def test_a_family_that_converts_frames_passes_the_frame_check() -> None:
    assert _problems(("toy", FramedToy())) == []


@pytest.mark.parametrize("flaw", sorted(FRAME_FLAWS))
def test_the_kit_catches_a_frame_conversion_that_mixes_up_x_and_y(flaw: str) -> None:
    problems = [p for p in _problems(("toy", FramedToy(flaw))) if p.check == "frame"]
    assert problems and any(FRAME_FLAWS[flaw] in p.message for p in problems), "\n".join(map(str, problems))


class Meddler:
    """Owns nothing, but answers the parse hook for every type: through pm.hook it would hijack parsing."""

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> Any:
        return ("meddled", annotation_type) if annotation_type == "toy" else None


def _problems(*plugins: tuple[str, object]) -> list[KitProblem]:
    registry = build_registry(plugins, load_entry_points=False)
    return check_family(registry)


def _kinds(problems: list[KitProblem]) -> set[tuple[str, str, str]]:
    return {(p.annotation_type, p.reward_id, p.check) for p in problems}


def test_the_flawless_toy_passes() -> None:
    assert _problems(("toy", Toy())) == []
    assert _problems(("toy", ExplainedToy())) == []


# flaw -> (type, reward id, check, text the message contains)
FLAWS: dict[str, tuple[str, str, str, str]] = {
    "half": ("toy", "toy_v0", "self-score", "scores 0.5 against itself, expected 1.0"),
    "keyerror": ("toy", "", "hostile", "raised KeyError"),
    "ordered_set": ("toy_set", "toy_set_v0", "set-order", "reversed changes the reward"),
    "unordered_sequence": ("toy_seq", "toy_seq_v0", "sequence-order", "must be order-sensitive"),
    "over": ("toy", "toy_v0", "contract", "reward 1.7 is outside [0, 1]"),
    "nan_diagnostic": ("toy", "toy_v0", "contract", "diagnostic 'annotation_toy_closeness' is nan"),
    "float": ("toy", "toy_v0", "contract", "returned float instead of an AnnotationScore"),
    "core_key": ("toy", "toy_v0", "contract", "annotation_reward"),
    "random": ("toy_set", "toy_set_v0", "deterministic", "twice gave"),
    "no_examples": ("toy", "", "examples", "declares no examples"),
    "schema_permissive": ("toy", "", "schema", "the declared json_schema accepts 'junk', which does not parse as toy"),
    "schema_rejects_examples": ("toy", "", "schema", "example #0 [1, 2] does not validate against the declared json_schema"),
    "schema_unsupported": ("toy", "", "schema", "uses keywords the kit cannot check: ['uniqueItems']"),
}


@pytest.mark.parametrize("flaw", sorted(FLAWS))
def test_the_kit_catches_a_flaw(flaw: str) -> None:
    annotation_type, reward_id, check, text = FLAWS[flaw]
    problems = _problems(("toy", Toy(flaw)))
    found = [p for p in problems if (p.annotation_type, p.reward_id, p.check) == (annotation_type, reward_id, check)]
    assert found, f"no {check} problem for {flaw}; got:\n" + "\n".join(map(str, problems))
    assert any(text in p.message for p in found), "\n".join(map(str, found))
    with pytest.raises(AssertionError, match=check):
        assert_family_ok(build_registry([("toy", Toy(flaw))], load_entry_points=False))


def test_the_schema_check_catches_a_schema_that_accepts_a_wrong_shape() -> None:
    problems = [p for p in _problems(("toy", Toy("schema_permissive"))) if p.check == "schema"]
    shown = [p.message.split(", which")[0].removeprefix("the declared json_schema accepts ") for p in problems]
    assert shown[:3] == ["'junk'", "None", "True"] and problems[-1].message.startswith("... and ")
    assert {p.annotation_type for p in problems} == {"toy"}  # the set's schema is sound


def test_the_official_schemas_reject_the_kits_wrong_shapes() -> None:
    from trace_tasks.family import schema_problems

    for entry in get_registry().annotation_types.values():
        spec = entry.spec
        assert spec is not None and spec.json_schema is not None
        example = spec.examples[0]
        for wrong in ("junk", None, [example], {"value": example} if spec.shape not in ("map", "set_map") else [example]):
            assert schema_problems(wrong, spec.json_schema), (entry.name, wrong)


def test_contract_breaking_flaws_report_nothing_else_for_the_scalar_type() -> None:
    """A bad result is one problem per reward id and kind, not a flood (at most MAX_PER_CHECK plus a count)."""
    problems = [p for p in _problems(("toy", Toy("over"))) if p.annotation_type == "toy"]
    assert {p.check for p in problems} == {"contract"}
    assert len(problems) <= 4 and problems[-1].message.startswith("... and ")


def test_the_kit_catches_an_explanation_that_disagrees_with_the_score() -> None:
    problems = _problems(("toy", ExplainedToy("explain_off")))
    assert ("toy", "toy_v0", "explain") in _kinds(problems)
    assert any("scoring gave" in p.message for p in problems)


def test_the_kit_catches_a_drawing_that_is_not_drawing_records() -> None:
    problems = _problems(("toy", ExplainedToy("bad_draw")))
    assert _kinds(problems) == {("toy", "", "draw")}
    assert "not a trace_tasks.family drawable" in problems[0].message


def test_the_kit_catches_a_plugin_answering_a_hook_for_a_type_it_does_not_own() -> None:
    problems = _problems(("toy", Toy()), ("meddler", Meddler()))
    assert _kinds(problems) == {("toy", "", "hook")}
    assert any("plugin 'meddler' answers trace_parse_annotation" in p.message for p in problems)
    assert any("registry.manager.hook.trace_parse_annotation returns ('meddled', 'toy')" in p.message for p in problems)


def test_problems_print_on_one_line_each() -> None:
    problems = _problems(("toy", Toy("keyerror")))
    assert problems and all("\n" not in str(p) for p in problems)
    assert str(problems[0]).startswith("toy: hostile: parse of ")
    with pytest.raises(AssertionError) as caught:
        assert_family_ok(build_registry([("toy", Toy("half"))], load_entry_points=False))
    assert "toy toy_v0: self-score: example #0 scores 0.5 against itself" in str(caught.value)


# --------------------------------------------------------------------------- the GIoU snippet of docs/plugins.md


def _old_doc_giou01(a: Sequence[float], b: Sequence[float], ctx: ScoringContext) -> float:
    """The GIoU snippet docs/plugins.md showed before: NaN with a 1e308 coordinate, ZeroDivisionError on boxes 1e-200 wide."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    hull = (max(a[2], b[2]) - min(a[0], b[0])) * (max(a[3], b[3]) - min(a[1], b[1]))
    return (inter / union - (hull - union) / hull + 1.0) / 2.0


def _doc_giou01() -> Any:
    """``giou01`` as docs/plugins.md defines it today: its block, run up to where the plugin is built."""
    blocks = re.findall(r"^```python\n(.*?)^```", PLUGINS_MD.read_text(encoding="utf-8"), re.M | re.S)
    (block,) = [b for b in blocks if "def giou01(" in b]
    namespace: dict[str, Any] = {}
    exec(compile(block[: block.index("GIOU = Primitive(")], f"{PLUGINS_MD} (giou01)", "exec"), namespace)
    return namespace["giou01"]


def _giou_problems(similarity: Any) -> list[KitProblem]:
    """The kit on ``bbox`` with the bbox owner and a ShapeRewards plugin scoring ``bbox_giou_v1`` with ``similarity``."""
    import trace_plugins_bbox.plugin as bbox

    primitive = Primitive(name="bbox", similarity=similarity, matrix=pairwise(similarity), metric="giou")
    rewards = ShapeRewards(primitive, {"bbox_giou_v1": ("bbox", "scalar")}, description="GIoU in [0, 1]")
    return check_family(build_registry([("bbox", bbox.family), ("giou", rewards)], load_entry_points=False), types="bbox")


def _parsed_hostile_boxes() -> list[Any]:
    """Every hostile value (for the bbox examples) that the bbox owner parses: what a GIoU scorer may receive."""
    entry = get_registry().annotation_types["bbox"]
    assert entry.spec is not None
    boxes = []
    for value in hostile_values(entry.spec.examples):
        with contextlib.suppress(AnnotationParseError):  # refused by the owner: never reaches a scorer
            boxes.append(entry.parse(annotation_type="bbox", value=value))
    return boxes


def test_the_old_giou_snippet_fails_the_kit_and_the_new_one_passes() -> None:
    old = _giou_problems(_old_doc_giou01)
    found = [p for p in old if (p.annotation_type, p.reward_id, p.check) == ("bbox", "bbox_giou_v1", "contract")]
    assert found and any("reward nan is not a finite number" in p.message for p in found), "\n".join(map(str, old))
    assert any("[0, 0, 1e+308, 1e+308]" in p.message or "[-1e+308, -1e+308, 1e+308, 1e+308]" in p.message for p in found)
    # Two tiny boxes (a hostile value against itself): the union underflows to zero.
    assert any("ZeroDivisionError" in p.message for p in old), "\n".join(map(str, old))
    assert _giou_problems(_doc_giou01()) == []


def test_the_giou_snippet_is_safe_on_every_pair_of_parsed_hostile_boxes(giou_rewards: object) -> None:
    """Beyond the kit (which scores hostile values against the examples): any two parsed boxes, tiny or huge."""
    new = _doc_giou01()
    from trace_plugins_bbox_giou import giou01 as example

    tiny, tinier = (0.0, 0.0, 1e-200, 1e-200), (1e-300, 1e-300, 2e-300, 2e-300)
    with pytest.raises(ZeroDivisionError):
        _old_doc_giou01(tiny, tinier, None)  # type: ignore[arg-type]
    assert math.isnan(_old_doc_giou01((0.0, 0.0, 1e308, 1e308), (10.0, 20.0, 110.0, 220.0), None))  # type: ignore[arg-type]
    boxes = _parsed_hostile_boxes()
    assert tiny in boxes and tinier in boxes and (-1e308, -1e308, 1e308, 1e308) in boxes
    for a, b in itertools.product(boxes, repeat=2):
        value = new(a, b, None)
        assert math.isfinite(value) and 0.0 <= value <= 1.0, (a, b, value)
        assert value == example(a, b), (a, b)  # the page's snippet is the example's geometry, written out
    assert new((0.0, 0.0, 10.0, 10.0), (12.0, 0.0, 22.0, 10.0), None) == pytest.approx((0 - (220 - 200) / 220 + 1) / 2)
