"""The reward server's label lane (``data.quick_compile``, the native build's ``check_label``) against the general path.

For every label the lane takes, it must give what the general path makes of
it (``load_instance``, ``compile_instance``, then the lint): the compiled
instance field for field, the prepared target attribute for attribute, the
same other scorer inputs; the label must be valid, and every authoring rule
it breaks must be one the process has logged (``skip``). Labels come from the
server benchmark's mix and from mutations aimed at each of the lane's
conditions (answer values per type, target values per shape, contracts, sizes,
metadata, the label's other fields, lint triggers at their edges). In the pure
build the lane takes nothing, which is asserted too.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from trace_tasks.core.reward_contracts import resolve_reward_contract
from trace_tasks.data import InstanceError, compile_instance, instance_warnings, quick_compile
from trace_tasks.data._quick import LANE_RULES
from trace_tasks.family import AssignmentBudget
from trace_tasks.integrations import _common, server
from trace_tasks.plugins import get_registry, pin_reward_id, reset_registry, unpin_reward_id
from trace_tasks.scoring import native_label_lane, options_from

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workload import ANNOTATION_TYPES, make_item  # type: ignore[import-not-found]

NATIVE = native_label_lane() is not None
ALL_RULES = frozenset(LANE_RULES)
SKIPS = (ALL_RULES, frozenset(), frozenset({"missing-image-size", "single-key-map"}))


def general(label: dict[str, Any], skip: frozenset[str]) -> tuple[Any, list[Any]] | None:
    """The general path's compiled entry of ``label`` and the warnings not in ``skip``; None for an invalid label."""
    try:
        instance = _common.load_instance(label, decoded=True)
    except ValueError:
        return None
    fields = {name: instance[name] for name in _common.COMPILED_FIELDS if instance[name] is not None}
    try:
        compiled = compile_instance(fields)
    except InstanceError:
        return None
    image_sizes = instance["image_sizes"]
    inputs = {} if image_sizes is None else {"image_sizes": image_sizes}
    return (compiled, inputs), instance_warnings(compiled, skip=skip)


def exactly(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not 1.0, a tuple is not a list), floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(exactly(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(exactly(a[k], b[k]) for k in a)
    return bool(a == b)


def assert_same_instance(quick: Any, slow: Any) -> None:
    for field in ("answer_spec", "annotation_entry", "reward_entry", "_registry"):
        assert getattr(quick, field) is getattr(slow, field), field
    assert quick.data == slow.data and list(quick.data) == list(slow.data)
    for name in quick.data:
        assert quick.data[name] is slow.data[name], name  # the label's own objects, as the general path keeps them
    for field in ("target", "image_size", "half_life_px", "_size_image", "_size_meta"):
        assert exactly(getattr(quick, field), getattr(slow, field)), field
    a, b = quick._prepared, slow._prepared
    assert type(a) is type(b) and sorted(vars(a)) == sorted(vars(b))
    for name, value in vars(b).items():
        if name in ("entry", "reward", "_context"):
            assert getattr(a, name) is value, name
        else:
            assert exactly(getattr(a, name), value), name


def check(label: dict[str, Any], skip: frozenset[str] = ALL_RULES) -> bool:
    """The lane's entry of ``label`` is the general path's (when it takes the label); whether it took it."""
    quick = quick_compile(label, skip)
    if quick is None:
        return False
    assert NATIVE, "the pure build has no lane"
    found = general(label, skip)
    assert found is not None, f"the lane took an invalid label: {label!r}"
    (slow, inputs), warnings = found
    assert not warnings, f"the lane took a label breaking {[w.rule for w in warnings]} (not in skip): {label!r}"
    assert_same_instance(quick[0], slow)
    assert quick[1] == inputs and list(quick[1]) == list(inputs)
    return True


def mix_labels(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = [make_item(rng, ANNOTATION_TYPES[i % len(ANNOTATION_TYPES)], "answer_and_annotation") for i in range(count)]
    # As the request body's json.loads gives them.
    return [json.loads(json.dumps({k: v for k, v in row.items() if k not in ("response", "trace_reward_mode")})) for row in rows]


def label(answer_type: str, answer: Any, annotation_type: str, value: Any, **fields: Any) -> dict[str, Any]:
    contract = resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict()
    return {
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": contract,
        **fields,
    }


# --- the benchmark's labels: taken (in the native build), and the same -------------------------------


def test_the_mix_is_taken_and_compiled_as_the_general_path_compiles_it() -> None:
    labels = mix_labels(600, seed=7)
    taken = [check(one) for one in labels]
    if not NATIVE:
        assert not any(taken)
        return
    assert all(taken), [one for one, took in zip(labels, taken, strict=True) if not took][:3]
    for one in labels[:200]:
        for skip in SKIPS[1:]:
            check(one, skip)


def test_a_rule_not_logged_sends_the_label_the_general_way() -> None:
    # No size, and a distance type: missing-image-size. The lane takes it only once that rule is logged.
    one = label("integer", 3, "point", [10, 20])
    assert check(one, frozenset()) is False
    assert check(one, frozenset({"missing-image-size"})) is NATIVE


# --- answers ------------------------------------------------------------------------------------------

ANSWERS: dict[str, list[Any]] = {
    "integer": [7, 0, -3, 2**70, 7.0, True, "7", " 7", None, [7], 1.5],
    "number": [1.5, 3.0, -0.0, 0, 2**64, 1e308, "2.5", True, None, float("nan"), float("inf")],
    "string": ["red", " Red ", "", "   ", "\u00a0x", "true", "[1]", '"red"', 7, None, "Circle"],
    "option_letter": ["B", "b", " B ", "", '"B"', "true", "null", "[", "7", "N", "-", "{", "t", 3],
    "pi_expression": ["12π", " 3π ", "", "1", "π"],
    "boolean": [True, False, 1, 0, "true", None],
    "index_list": [[1, 2], [], ["a", 1], [True], [[1]], [1.5], [None], [" A ", "b"], "[1, 2]", 5],
    "matrix": [[[1, 2], [3, 4]], [], [[]], [[1], 2], [[1.5]], {"a": 1}, [["a", "b"]], [[True]], [[1], [2, 3]]],
}


@pytest.mark.parametrize("answer_type", sorted(ANSWERS))
def test_answers(answer_type: str) -> None:
    taken = [check(label(answer_type, value, "bbox", [1, 2, 30, 40], image_size=[640, 480])) for value in ANSWERS[answer_type]]
    assert any(taken) is NATIVE  # the plain values are taken; the others go the general way, and whatever is taken is exact


# --- targets ------------------------------------------------------------------------------------------

BOX, POINT, SEGMENT = [10, 20, 110, 220], [15, 25], [[1, 2], [30, 40]]
TARGETS: dict[str, list[Any]] = {
    "bbox": [
        BOX,
        [110, 220, 10, 20],
        [10.5, 20, 110, 220.25],
        [1, 1, 1, 5],
        [10, 20, 110],
        "[10, 20, 110, 220]",
        [10**400, 1, 2, 3],
        [True, 1, 2, 3],
        [0.1, 0.2, 0.3, 0.4],
        [1, 2, 900, 950],
        {"x": 1},
    ],
    "point": [POINT, [0.5, 0.5], [15.5, -3], [1, 2, 3], "15, 25", [None, 1], [[15, 25]]],
    "segment": [SEGMENT, [[1, 2], [1, 2]], [[0.1, 0.2], [0.3, 0.4]], [1, 2, 30, 40], [[1, 2]], [[1, 2], [3, "4"]]],
    "bbox_set": [[BOX], [], [BOX, BOX], [BOX, [110, 220, 10, 20]], BOX, [BOX, [1, 2, 3, 4]], [[0.1, 0.1, 0.2, 0.2]], [BOX, "x"]],
    "point_set": [[POINT], [POINT, [16, 25]], [POINT, POINT], [[0.0, 0.0], [-0.0, 0.0]], POINT, [[1, 2], [3]]],
    "segment_set": [[SEGMENT], [SEGMENT, SEGMENT], [[[1, 2], [1, 2]]], [], [SEGMENT, [[5, 6], [7, 8]]]],
    "bbox_sequence": [[BOX, BOX], [BOX], [], BOX],
    "point_sequence": [[POINT, POINT], [POINT]],
    "bbox_map": [{"a": BOX, "b": BOX}, {"a": BOX}, {}, {" a": BOX, "a": BOX}, {"": BOX}, {"a": BOX, "b": [1, 1, 1, 1]}],
    "point_map": [{"left": POINT, "right": [30, 40]}, {"x": POINT}, {}, {" x ": POINT, "y": POINT}],
    "bbox_set_map": [{"a": [BOX], "b": [BOX, BOX]}, {"a": [BOX]}, {"a": BOX, "b": [BOX]}, {"a": [], "b": [BOX]}, {"a": "x"}],
    "point_set_map": [{"a": [POINT], "b": [POINT, [1, 1]]}, {"a": [POINT, POINT], "b": []}, {"a": []}],
}


@pytest.mark.parametrize("annotation_type", sorted(TARGETS))
@pytest.mark.parametrize("size", [None, [640, 480], [400, 300], [2, 2]], ids=["no-size", "640x480", "400x300", "2x2"])
def test_targets(annotation_type: str, size: list[int] | None) -> None:
    extra = {} if size is None else {"image_size": size}
    for value in TARGETS[annotation_type]:
        for skip in SKIPS:
            check(label("integer", 1, annotation_type, value, **extra), skip)
    if NATIVE:
        assert check(label("integer", 1, annotation_type, TARGETS[annotation_type][0], image_size=[640, 480]))


@pytest.mark.parametrize("annotation_type", ["bbox_set", "point_set"])
def test_sets_at_the_budget_edge(annotation_type: str) -> None:
    largest = next(n for n in range(1, 10_000) if AssignmentBudget.target_problem((n + 1,)) is not None)
    item = [1, 2, 3, 4] if annotation_type == "bbox_set" else [1, 2]
    for count in (largest, largest + 1):
        items = [[x + 10 * n for x in item] for n in range(count)]
        taken = check(label("integer", 1, annotation_type, items, image_size=[10**6, 10**6]))
        assert taken is (NATIVE and count == largest)


def test_many_duplicates_are_found_past_the_small_set_loop() -> None:
    # Past 16 items the lane sorts to find copies; -0.0 equals 0.0 there as in a tuple.
    items = [[n, n] for n in range(1, 40)] + [[0.0, 5.0], [-0.0, 5.0]]
    assert check(label("integer", 1, "point_set", items, image_size=[640, 480]), frozenset()) is False
    assert check(label("integer", 1, "point_set", items, image_size=[640, 480]), frozenset({"duplicate-items"})) is NATIVE


# --- contracts, sizes, metadata, the label's other fields ----------------------------------------------


def contract_variants() -> list[Any]:
    base = resolve_reward_contract(answer_type="integer", annotation_type="bbox").to_dict()

    class Text(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    reordered = {
        "annotation": base["annotation"],
        "answer": base["answer"],
        "reward_contract_version": base["reward_contract_version"],
    }
    variants: list[Any] = [base, reordered, "contract", None]
    for change in (
        lambda c: c.update(reward_contract_version="v1"),
        lambda c: c.update(extra=1),
        lambda c: c["annotation"].update(id="bbox_giou_v1"),
        lambda c: c["annotation"].pop("type"),
        lambda c: c["answer"].update(id="answer_relaxed_match_v0"),
        lambda c: c["answer"].update(type="number"),
        lambda c: c["annotation"].update(type=" bbox"),
        lambda c: c["annotation"].update(type=Text("anything")),
        lambda c: c.update(reward_contract_version=Text("v9")),
        lambda c: c["annotation"].update(id=1),
        lambda c: c.update(answer="answer_exact_match_v0"),
    ):
        changed = copy.deepcopy(base)
        change(changed)
        variants.append(changed)
    return variants


def test_contracts() -> None:
    taken = [
        check({**label("integer", 1, "bbox", BOX, image_size=[640, 480]), "reward_contract": contract})
        for contract in contract_variants()
    ]
    assert taken[:2] == [NATIVE, NATIVE] and not any(taken[2:])


SIZES: list[Any] = [
    [640, 480],
    [640.0, 480.5],
    (640, 480),
    [0, 480],
    [-1, 5],
    [True, 5],
    [640],
    [640, 480, 3],
    "640x480",
    "[640, 480]",
    [10**400, 5],
    [float("inf"), 5],
    {"width": 640, "height": 480},
    None,
]
METADATA: list[Any] = [
    None,
    {},
    {"task": "count"},
    {"source_image_size": {"width": 1280, "height": 960}},
    {"width": 10, "height": 20},
    {"w": "640", "h": 480},
    {"image_size": [640, 480]},
    {"image_size": "[640, 480]"},
    {"width": 0, "height": 5},
    {"width": True, "height": 5},
    {"image_size": [[640, 480]]},
    {"canvas_size": {"image_size": {"width": 3, "height": 4}}},
    {"img_size": {"canvas_size": {"image_size": {"w": 3, "h": 4}}}},
    {"source_image_size": None, "width": 7, "height": 8},
    {"source_image_size": {"width": 1}, "image_size": [5, 6]},
    {"width": 10**400, "height": 2},
    {1: 2},
    "metadata",
    {"image_width": 300, "width": 200, "height": 100},
    {"source_image_size": {"width": 640, "height": 480}, "note": [1, 2]},
]


@pytest.mark.parametrize("annotation_type", ["bbox", "point"])
def test_sizes_and_metadata(annotation_type: str) -> None:
    value = BOX if annotation_type == "bbox" else POINT
    for image_size, metadata in itertools.product(SIZES, METADATA):
        extra = {name: item for name, item in (("image_size", image_size), ("metadata", metadata)) if item is not None}
        for skip in SKIPS:
            check(label("integer", 1, annotation_type, value, **extra), skip)
    if NATIVE:
        assert check(label("integer", 1, annotation_type, value, metadata={"source_image_size": {"width": 1280, "height": 960}}))


def test_the_label_s_other_fields() -> None:
    base = label("option_letter", "B", "bbox", BOX, image_size=[640, 480])
    cases = [
        ({**base, "id": "row-1", "prompt": "p", "extra": [1]}, NATIVE),  # fields that are not the instance's: left out
        ({**base, "image_sizes": [[640, 480]]}, NATIVE),
        ({**base, "image_sizes": "[[640, 480]]"}, False),
        ({**base, "model_image_size": [448, 336]}, False),
        ({**base, "answer_gt": None}, False),
        ({**base, "answer_gt": {"type": "option_letter", "value": "B", "extra": 1}}, False),
        ({**base, "annotation_gt": {"type": "bbox"}}, False),
        ({**base, "annotation_gt": json.dumps(base["annotation_gt"])}, False),
        ({**base, "annotation_gt": {"type": "boxes", "value": BOX}}, False),
        ({**base, "answer_gt": {"type": "Integer", "value": 1}}, False),
    ]
    for one, expected in cases:
        assert check(one) is expected, one


# --- a pinned reward id, the relaxed answer policy -------------------------------------------------------


def test_a_pin_changes_the_plan() -> None:
    one = label("number", 2.5, "bbox", BOX, image_size=[640, 480])
    assert check(one) is NATIVE
    pin_reward_id("number", "answer_relaxed_match_v0")
    try:
        relaxed = label("number", 2.5, "bbox", BOX, image_size=[640, 480])  # the contract now names the relaxed policy
        assert relaxed["reward_contract"]["answer"]["id"] == "answer_relaxed_match_v0"
        assert check(relaxed) is False and check(one) is False  # the general way (the old contract is refused there)
    finally:
        unpin_reward_id("number")
    assert get_registry() is not None and check(one) is NATIVE


# --- random labels near the lane's edges ---------------------------------------------------------------


def test_fuzz() -> None:
    rng = random.Random(20261205)
    values = {name: [*items, *TARGETS[name][:2]] for name, items in TARGETS.items()}
    taken = 0
    for _ in range(1500):
        annotation_type = rng.choice(sorted(values))
        answer_type = rng.choice(sorted(ANSWERS))
        one = label(answer_type, rng.choice(ANSWERS[answer_type]), annotation_type, rng.choice(values[annotation_type]))
        if rng.random() < 0.6:
            one["image_size"] = rng.choice(SIZES[:8])
        if rng.random() < 0.4:
            one["metadata"] = rng.choice(METADATA[:16])
        taken += check(one, rng.choice(SKIPS))
    assert (taken > 100) is NATIVE


# --- the reward server: the same answers with the lane and without it -----------------------------------


def test_the_server_answers_the_same_with_the_lane_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    rows = [make_item(rng, ANNOTATION_TYPES[i % len(ANNOTATION_TYPES)], "answer_and_annotation") for i in range(96)]
    prompt = "<|im_start|>user\nFind.<|im_end|>\n<|im_start|>assistant\n"
    options = options_from({"trace_reward_mode": "answer_and_annotation"})

    def answers(as_text: bool) -> list[Any]:
        out = []
        _common.clear_instance_caches()
        for row in rows:
            text = json.dumps({k: v for k, v in row.items() if k not in ("response", "trace_reward_mode")})
            one = text if as_text else json.loads(text)
            out.append(server._validate_and_score([prompt + row["response"]], [prompt], [one], options, "all"))
        return out

    with_lane = answers(False)
    assert answers(True) == with_lane  # a label sent as JSON text: the same lane
    monkeypatch.setattr("trace_tasks.data._quick.native_label_lane", lambda: None)
    assert answers(False) == with_lane and answers(True) == with_lane


def test_the_lane_looks_at_every_rule_of_one_instance() -> None:
    """LANE_RULES are the rules the lint's own-instance checks can give (a new one would go unchecked by the lane)."""
    import inspect
    import re

    from trace_tasks.data import _lint

    checks = (_lint._own_warnings, _lint._coordinate_warnings, _lint._duplicates, _lint._map_warnings)
    source = "".join(inspect.getsource(function) for function in checks)
    assert {rule for rule in re.findall(r'"([a-z-]+)"', source) if rule in _lint.WARNING_RULES} == ALL_RULES


# --- the plans: a registry changing meanwhile, names of any length, other mappings ---------------------


def test_a_plan_made_while_the_plugins_change_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that fetched the registry before a pin, whose plan is made while another thread pins and
    meets the new registry: the plan is not kept under the new registry (it mixed the two)."""
    from trace_tasks.data import _quick

    one = label("integer", 1, "bbox", BOX, image_size=[640, 480])
    lane = native_label_lane()
    if lane is None:
        assert quick_compile(one, ALL_RULES) is None
        return
    check_label = lane[0]
    reset_registry()  # a fresh registry: the lane's plans start empty, so (integer, bbox)'s is made below
    assert quick_compile(label("integer", 1, "point", POINT, image_size=[640, 480]), ALL_RULES) is not None
    old, real, switched = get_registry(), _quick._type_info, []

    def meanwhile(entry: Any, registry: Any) -> Any:
        if registry is old and not switched:
            switched.append(True)
            pin_reward_id("bbox", "bbox_click_hit_v0")  # another thread pins ...
            quick_compile(label("integer", 2, "point", POINT, image_size=[640, 480]), ALL_RULES)  # ... and is served
        return real(entry, registry)

    monkeypatch.setattr(_quick, "_type_info", meanwhile)
    try:
        check_label(one, ALL_RULES, old)  # the request that fetched the registry before the pin
        assert switched
        monkeypatch.setattr(_quick, "_type_info", real)
        clicked = label("integer", 1, "bbox", BOX, image_size=[640, 480])
        assert clicked["reward_contract"]["annotation"]["id"] == "bbox_click_hit_v0"
        check(clicked)  # taken or not, the general path's entry (the old plan would pair the click contract with IoU)
        assert check(one) is False  # the old contract names an id that is no longer current
    finally:
        unpin_reward_id("bbox")
    assert check(one) is True


def test_long_unknown_type_names_keep_no_memory() -> None:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for n in range(40):
            one = label("integer", 1, "bbox", BOX, image_size=[640, 480])
            one["answer_gt"]["type"] = f"{n}" + "x" * 100_000
            assert quick_compile(one, ALL_RULES) is None
            del one
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert kept < 1_000_000, f"{kept} bytes kept after 40 labels of 100 KB unknown type names"


def test_another_mapping_type_goes_the_general_way() -> None:
    from collections import OrderedDict

    one = label("integer", 1, "bbox", BOX, image_size=[640, 480])
    assert quick_compile(OrderedDict(one), ALL_RULES) is None  # not an exact dict: declined, never a TypeError
    assert check(one) is NATIVE
