"""``drawn_as``: a type declares how its flat items draw, and the dataset lint reads coordinates instead of drawing.

The declaration must never change a warning: for every official type the lint's warnings (and its measured
extent) are the same with the declaration and with the owner drawing each item, on generated targets that
break every coordinate rule (0-1 and 0-1000 coordinates, zero-length segments, duplicates, empty sets, large
images). The family kit catches a false declaration; a family that declares wrongly still gets its items drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_tasks import (
    AnnotationScore,
    AnnotationTypeSpec,
    FamilyDefinitionError,
    ScoringContext,
    hookimpl,
    resolve_reward_contract,
)
from trace_tasks.data import _lint, compile_instance, instance_problems, instance_warnings
from trace_tasks.family import (
    FLAT_DRAWINGS,
    Box,
    Point,
    Polyline,
    Primitive,
    ShapeFamily,
    check_family,
    coordinates,
    flat_drawing,
    pairwise,
)
from trace_tasks.plugins import get_registry

# --- generated targets of every official type ------------------------------------------------------

#: Coordinates that land in each regime the lint tells apart: within [0, 1], within [0, 1000], beyond.
COORDINATE = st.one_of(
    st.floats(0, 1, allow_nan=False),
    st.integers(0, 1000),
    st.floats(0, 1000, allow_nan=False),
    st.floats(0, 5000, allow_nan=False),
)
SIZE = st.sampled_from([None, [640, 480], [500, 400], [2000, 1500], [0.9, 0.9]])


@st.composite
def box(draw: Any) -> list[Any]:
    x0, y0 = draw(COORDINATE), draw(COORDINATE)
    width, height = draw(st.floats(0.001, 600, allow_nan=False)), draw(st.floats(0.001, 600, allow_nan=False))
    return [x0, y0, x0 + width, y0 + height]


@st.composite
def segment(draw: Any) -> list[Any]:
    start = [draw(COORDINATE), draw(COORDINATE)]
    end = list(start) if draw(st.booleans()) else [draw(COORDINATE), draw(COORDINATE)]
    return [start, end]


ITEMS = {"bbox": box(), "point": st.lists(COORDINATE, min_size=2, max_size=2), "segment": segment()}


def value_of(annotation_type: str, draw: Any) -> Any:
    family, _, shape = annotation_type.partition("_")
    item = ITEMS[family]
    # Repeats: a set or map with equal items (duplicate-items) keeps the lint's item walk honest.
    items = st.lists(st.one_of(item, st.just(draw(item))), max_size=5)
    keys = st.sampled_from(["a", "b", "c"])
    if shape == "":
        return draw(item)
    if shape in ("set", "sequence"):
        return draw(items)
    if shape == "map":
        return draw(st.dictionaries(keys, item, max_size=3))
    return draw(st.dictionaries(keys, items, max_size=3))


@st.composite
def instance(draw: Any) -> dict[str, Any]:
    annotation_type = draw(st.sampled_from(sorted(get_registry().annotation_types)))
    data: dict[str, Any] = {
        "answer_gt": {"type": "integer", "value": 2},
        "annotation_gt": {"type": annotation_type, "value": value_of(annotation_type, draw)},
        "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type=annotation_type).to_dict(),
    }
    size = draw(SIZE)
    if size is not None:
        data["image_size"] = size
    return data


def drawing_each_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every official type without its declaration: the lint asks the owner to draw each item."""
    types = get_registry().annotation_types
    for name, entry in list(types.items()):
        assert entry.spec is not None and entry.spec.drawn_as in FLAT_DRAWINGS  # what this test compares against
        monkeypatch.setitem(types, name, attrs.evolve(entry, spec=attrs.evolve(entry.spec, drawn_as="")))


@settings(max_examples=300, deadline=None)
@given(data=instance())
def test_reading_the_declared_items_gives_the_warnings_drawing_gives(data: dict[str, Any]) -> None:
    if instance_problems(data):  # a generated value the contract refuses (a box too thin to parse): no warnings
        return
    compiled = compile_instance(data)
    read = instance_warnings(compiled)
    entry = get_registry().annotation_types[data["annotation_gt"]["type"]]
    measured = _lint._Extent().measure(entry, entry.spec.shape, compiled.target)
    with pytest.MonkeyPatch.context() as patch:
        drawing_each_item(patch)
        drawn_entry = get_registry().annotation_types[entry.name]
        assert instance_warnings(compile_instance(data)) == read
        drawn = _lint._Extent().measure(drawn_entry, entry.spec.shape, compiled.target)
    assert (measured.xs, measured.ys, measured.points, measured.distance) == (drawn.xs, drawn.ys, drawn.points, drawn.distance)
    assert (measured.min_x, measured.min_y, measured.max_x, measured.max_y) == (
        drawn.min_x,
        drawn.min_y,
        drawn.max_x,
        drawn.max_y,
    )
    assert measured.zero_segments == drawn.zero_segments


def test_the_generated_targets_break_every_coordinate_rule() -> None:
    """The comparison above is only as good as its targets: they reach each rule the drawing decides."""
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(data=instance())
    def collect(data: dict[str, Any]) -> None:
        if not instance_problems(data):
            seen.update(warning.rule for warning in instance_warnings(data))

    collect()
    assert {"normalized-coordinates", "zero-length-segment", "duplicate-items", "missing-image-size"} <= seen


def test_the_official_primitives_draw_as_they_declare() -> None:
    registry = get_registry()
    declared = {name: entry.spec.drawn_as for name, entry in registry.annotation_types.items() if entry.spec}
    assert set(declared.values()) == {"box", "point", "polyline"}
    assert all(
        declared[name] == {"bbox": "box", "point": "point", "segment": "polyline"}[name.split("_")[0]] for name in declared
    )
    draw = registry.annotation_types["segment"].draw
    assert draw is not None
    assert draw(annotation_type="segment", item=(1.0, 2.0, 3.0, 4.0)) == [Polyline([(1.0, 2.0), (3.0, 4.0)])]
    assert flat_drawing("box", (1, 2, 3, 4)) == [Box(1, 2, 3, 4)]
    assert flat_drawing("point", (5.0, 6.0)) == [Point(5.0, 6.0)]
    with pytest.raises(ValueError, match="drawn_as must be one of"):
        flat_drawing("circle", (1, 2, 3))


# --- declaring it ---------------------------------------------------------------------------------


def _primitive(**fields: Any) -> Primitive:
    return Primitive(
        name="dot",
        similarity=lambda p, t, c: float(p == t),
        matrix=pairwise(lambda p, t, c: float(p == t)),
        metric="similarity",
        **fields,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"drawn_as": "point"}, "set flat_xy=True"),
        ({"drawn_as": "point", "flat_xy": True, "draw": lambda item: [Point(*item)]}, "give draw or drawn_as, not both"),
        ({"drawn_as": "circle", "flat_xy": True}, "drawn_as must be one of"),
    ],
)
def test_a_primitive_declares_a_drawing_it_can_have(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(FamilyDefinitionError, match=message):
        _primitive(**fields)


def test_a_type_declares_a_known_drawing() -> None:
    with pytest.raises(FamilyDefinitionError, match="drawn_as must be one of"):
        AnnotationTypeSpec("dot", ("dot_v0",), drawn_as="square")


def test_a_shape_family_declares_its_primitives_drawing_only_while_its_own_hook_draws() -> None:
    dots = _primitive(drawn_as="point", flat_xy=True, parse_item=lambda raw: coordinates(raw, 2), examples=([1, 2], [3, 4]))
    family = ShapeFamily(dots, {"dot": ("scalar", "dot_v0")})
    assert [spec.drawn_as for spec in family.trace_annotation_types()] == ["point"]
    assert family.trace_draw_annotation(annotation_type="dot", item=(1.0, 2.0)) == [Point(1.0, 2.0)]

    class Crosses(ShapeFamily):  # draws its own way: the declaration would be false
        @hookimpl
        def trace_draw_annotation(self, annotation_type: str, item: Any) -> list[Any] | None:
            return [Polyline([(item[0] - 1, item[1]), (item[0] + 1, item[1])])]

    assert [spec.drawn_as for spec in Crosses(dots, {"dot": ("scalar", "dot_v0")}).trace_annotation_types()] == [""]


class Undrawn:
    """``mark``: a set of points, hand-written from docs/plugins.md, declaring ``drawn_as="point"`` without drawing.

    ``lists`` parses items to lists instead of tuples.
    """

    def __init__(self, *, draws: str = "point", lists: bool = False) -> None:
        self.draws, self.lists = draws, lists

    @hookimpl
    def trace_annotation_types(self) -> Sequence[AnnotationTypeSpec]:
        return [
            AnnotationTypeSpec(
                "mark", ("mark_v0",), "points on the image", shape="set", examples=([[1, 2], [3, 4]],),
                parsed_value="list of (x, y) tuples", drawn_as="point",
            )
        ]  # fmt: skip

    @hookimpl
    def trace_resolve_reward_id(self, annotation_type: str) -> str | None:
        return "mark_v0" if annotation_type == "mark" else None

    @hookimpl
    def trace_parse_annotation(self, annotation_type: str, value: object) -> list[Any] | None:
        if annotation_type != "mark":
            return None
        items = [coordinates(item, 2) for item in value] if isinstance(value, list) else []
        return [list(item) for item in items] if self.lists else items

    @hookimpl
    def trace_score_annotation(
        self, reward_id: str, prediction: Any, target: Any, context: ScoringContext
    ) -> AnnotationScore | None:
        if reward_id != "mark_v0":
            return None
        return AnnotationScore(1.0 if sorted(map(tuple, prediction)) == sorted(map(tuple, target)) else 0.0)


class Marks(Undrawn):
    """:class:`Undrawn` with a draw hook: ``draws="point"`` draws truthfully, ``"box"`` a 2x2 box around the point."""

    @hookimpl
    def trace_draw_annotation(self, annotation_type: str, item: Any) -> list[Any] | None:
        if annotation_type != "mark":
            return None
        x, y = item
        return [Point(x, y)] if self.draws == "point" else [Box(x - 1, y - 1, x + 1, y + 1)]


def _mark(value: list[Any], size: list[int] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "answer_gt": {"type": "integer", "value": 2},
        "annotation_gt": {"type": "mark", "value": value},
        "reward_contract": resolve_reward_contract(answer_type="integer", annotation_type="mark").to_dict(),
    }
    if size is not None:
        data["image_size"] = size
    return data


def test_a_true_declaration_passes_the_kit_and_reads_the_items(register: Any) -> None:
    register(Marks(), "marks")
    assert get_registry().annotation_types["mark"].spec.drawn_as == "point"
    assert check_family(types="mark") == []
    found = instance_warnings(_mark([[0.2, 0.3], [0.5, 0.5]], [640, 480]))
    assert [warning.rule for warning in found] == ["normalized-coordinates"]


@pytest.mark.parametrize(
    ("plugin", "says"),
    [
        (Marks(draws="box"), "draws as [Box("),
        (Undrawn(), "implements no trace_draw_annotation"),
        (Marks(lists=True), "not a tuple of 2 coordinates"),
    ],
)
def test_the_kit_catches_a_false_declaration(register: Any, plugin: Undrawn, says: str) -> None:
    register(plugin, "marks")
    problems = [problem for problem in check_family(types="mark") if problem.check == "drawn-as"]
    assert len(problems) == 1 and says in problems[0].message, problems


def test_items_not_in_the_declared_form_are_drawn_by_their_owner(register: Any) -> None:
    """A family that declares wrongly (lists, not tuples) still gets the lint drawing would give: no crash, no guess."""
    register(Marks(lists=True), "marks")
    found = instance_warnings(_mark([[0.2, 0.3], [0.5, 0.5]], [640, 480]))
    assert [warning.rule for warning in found] == ["normalized-coordinates"]
    assert instance_warnings(_mark([[20, 30], [500, 400]], [640, 480])) == []


def test_coordinates_that_do_not_compare_measure_nothing() -> None:
    """A drawing bug (a box of text) leaves the extent empty instead of breaking the lint."""
    extent = _lint._Extent()
    extent.xs += ["a", 1.0]
    extent.ys += [2.0, "b"]
    assert extent.close().points == 0 and not extent.within(1000)
