"""Warnings on the annotation contract's authoring rules (``trace_tasks.data._lint``): each rule fires, its clean neighbour does not.

Every rule has a case that breaks it and, next to it, the nearest instance that
keeps it; the neighbour must stay silent, so a rule that fires on everything
fails here as surely as one that never fires.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import trace_tasks
from trace_tasks import resolve_reward_contract, score_trace_response
from trace_tasks.data import (
    WARNING_RULES,
    DatasetLint,
    DataWarning,
    _lint,
    compile_instance,
    dataset_warnings,
    instance_problems,
    instance_warnings,
)

SIZE = [640, 480]


def make(
    annotation_type: str,
    value: Any,
    *,
    answer: Any = 2,
    answer_type: str = "integer",
    image_size: Any = SIZE,
    **extra: Any,
) -> dict[str, Any]:
    """A valid instance (its contract from the resolver); ``image_size=None`` leaves the size out."""
    data: dict[str, Any] = {
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": annotation_type, "value": value},
        "reward_contract": resolve_reward_contract(answer_type=answer_type, annotation_type=annotation_type).to_dict(),
        **extra,
    }
    if image_size is not None:
        data["image_size"] = image_size
    assert instance_problems(data) == [], instance_problems(data)
    return data


def rules(data: dict[str, Any]) -> list[str]:
    return [w.rule for w in instance_warnings(data)]


def only(data: dict[str, Any], rule: str) -> DataWarning:
    found = instance_warnings(data)
    assert [w.rule for w in found] == [rule], found
    return found[0]


def lint(rows: Iterable[dict[str, Any]], **options: Any) -> list[DataWarning]:
    return list(dataset_warnings(rows, **options))


# --- the rule table and the public names ---


def test_every_rule_has_an_id_and_a_description() -> None:
    assert set(WARNING_RULES) == {
        "normalized-coordinates",
        "duplicate-items",
        "count-mismatch",
        "single-item-set",
        "single-item-sequence",
        "single-key-map",
        "empty-map",
        "missing-image-size",
        "conflicting-image-size",
        "zero-length-segment",
        "image-missing",
    }
    assert all(text.strip() for text in WARNING_RULES.values())


def test_the_api_is_exported_beside_instance_problems() -> None:
    for name in ("instance_warnings", "dataset_warnings", "DatasetLint", "DataWarning", "WARNING_RULES"):
        assert name in trace_tasks.__all__ and name in trace_tasks.data.__all__
        assert getattr(trace_tasks, name) is getattr(trace_tasks.data, name)


def test_a_warning_prints_as_rule_path_message() -> None:
    assert str(DataWarning("single-key-map", "use bbox", "$.annotation_gt.value", 3)) == (
        "warning[single-key-map]: $.annotation_gt.value: use bbox"
    )
    assert str(DataWarning("single-item-set", "use bbox")) == "warning[single-item-set]: use bbox"
    assert DataWarning("r", "m", "$.x", 4).to_dict() == {"rule": "r", "line": 4, "path": "$.x", "message": "m"}


def test_an_invalid_instance_has_problems_not_warnings() -> None:
    data = make("bbox", [0.1, 0.2, 0.5, 0.6])
    data["answer_gt"]["type"] = "integr"
    assert instance_problems(data) and instance_warnings(data) == []
    report = DatasetLint().add(data, 1)
    assert report.problems and report.warnings == ()


def test_a_compiled_instance_has_the_same_warnings_as_its_dict() -> None:
    data = make("point_map", {"only": [0.2, 0.3]}, image_size=None)
    from_dict = instance_warnings(data)
    assert [w.rule for w in from_dict] == ["normalized-coordinates", "single-key-map", "missing-image-size"]
    assert instance_warnings(compile_instance(data)) == from_dict
    assert trace_tasks.data.instance_report(data).warnings == tuple(from_dict)


def test_skipped_rules_are_left_out_and_the_others_are_unchanged() -> None:
    """``skip`` (what the adapters pass: the rules they have logged) drops those rules and changes no other warning."""
    import itertools

    breaking = [
        make("point_map", {"only": [0.2, 0.3]}, image_size=None),  # normalized, single-key, missing size
        make("segment_set", [[[1, 2], [3, 4]], [[5, 5], [5, 5]], [[1, 2], [3, 4]]], metadata={"width": 64, "height": 48}),
        make("bbox_set_map", {"a": [[1, 2, 30, 40], [1, 2, 30, 40]]}, image_size=None),
        make("point_map", {}),
        make("segment", [[0.1, 0.2], [0.1, 0.2]], image_size=None),
    ]
    rules_seen = sorted({w.rule for data in breaking for w in instance_warnings(data)})
    assert len(rules_seen) == 7  # every rule one instance can break on its own
    for data in breaking:
        compiled = compile_instance(data)
        every = instance_warnings(data)
        for size in range(len(rules_seen) + 1):
            for skip in itertools.combinations(rules_seen, size):
                kept = [w for w in every if w.rule not in skip]
                assert instance_warnings(data, skip=frozenset(skip)) == kept, (data, skip)
                assert instance_warnings(compiled, skip=set(skip)) == kept, (data, skip)


def test_warnings_never_change_a_score() -> None:
    """The lint reads the instance; the score of every response is the lenient scorer's, warnings or not."""
    data = make("bbox_set", [[1, 2, 30, 40]], answer=3)
    rows = [data, make("bbox_set", [[1, 2, 30, 40], [50, 50, 60, 60]]), make("bbox_set", [[5, 5, 9, 9]], answer=1)] * 3
    assert any(w.rule == "count-mismatch" for w in lint(rows))
    response = '{"answer": 3, "annotation": [[1, 2, 30, 40]]}'
    compiled = compile_instance(data)
    fields = {k: data[k] for k in ("answer_gt", "annotation_gt", "reward_contract", "image_size")}
    assert compiled.score(response) == score_trace_response(response=response, **fields)
    assert compiled.score(response)["overall"] == 1.0  # what the warning is about: a one-box answer earns everything


# --- normalized-coordinates ---


def test_coordinates_in_0_1_on_a_real_image() -> None:
    warning = only(make("bbox", [0.1, 0.2, 0.5, 0.6]), "normalized-coordinates")
    assert warning.path == "$.annotation_gt.value"
    assert "within [0, 1] on a 640x480 image" in warning.message
    assert "multiply each x by 640 (the width) and each y by 480 (the height)" in warning.message
    assert rules(make("bbox", [64, 96, 320, 288])) == []  # the same box in pixels
    assert rules(make("point", [0.5, 0.5], image_size=[2, 2])) == []  # a 2 px image: [0, 1] is half of it


def test_coordinates_in_0_1_without_an_image_size() -> None:
    found = instance_warnings(make("bbox", [0.1, 0.2, 0.5, 0.6], image_size=None))
    assert [w.rule for w in found] == ["normalized-coordinates"]  # a box: no half-life, so no missing size warning
    assert "gives no image size" in found[0].message and "multiply each x by the image width" in found[0].message
    assert rules(make("bbox", [10, 20, 50, 60], image_size=None)) == []


def test_coordinates_in_0_1000_reaching_past_a_small_image() -> None:
    warning = only(make("bbox", [100, 200, 930, 400]), "normalized-coordinates")
    assert "within [0, 1000] and some reach past the 640x480 image (x up to 930)" in warning.message
    assert "x * 640 / 1000" in warning.message and "y * 480 / 1000" in warning.message
    assert rules(make("bbox", [100, 200, 600, 400])) == []  # inside the frame: pixels
    assert rules(make("bbox", [100, 200, 930, 400], image_size=[1000, 1000])) == []  # an image near 1000 px
    assert rules(make("bbox", [100, 200, 930, 400], image_size=[900, 850])) == []  # not far from 1000 px


def test_a_group_on_large_images_that_never_passes_1000() -> None:
    rows = [make("bbox", [100 + i, 100, 900 + i, 900], image_size=[1920, 1080]) for i in range(10)]
    (warning,) = lint(rows)
    assert warning.rule == "normalized-coordinates" and warning.path is None and warning.line is None
    assert "the 10 targets" in warning.message and "such as 1920x1080, line 1" in warning.message
    assert lint(rows[:9]) == []  # too few to tell
    reaching = [*rows[:9], make("bbox", [1000, 100, 1500, 900], image_size=[1920, 1080])]
    assert lint(reaching) == []  # one target uses the whole width: pixels


# --- duplicate-items ---


def test_equal_items_in_a_set() -> None:
    warning = only(make("point_set", [[10, 20], [10, 20], [50, 60]]), "duplicate-items")
    assert warning.path == "$.annotation_gt.value[1]"
    assert "equals item [0] of the set" in warning.message and "at most 2/3" in warning.message
    assert rules(make("point_set", [[10, 20], [10, 21], [50, 60]])) == []
    path = make("point_sequence", [[10, 20], [10, 20]], answer=[1, 2], answer_type="index_list")
    assert rules(path) == []  # a sequence may revisit an item


def test_equal_items_in_one_set_of_a_set_map() -> None:
    value = {"red": [[1, 2, 30, 40], [1, 2, 30, 40]], "blue": [[1, 2, 30, 40]]}
    warning = only(make("bbox_set_map", value), "duplicate-items")
    assert warning.path == "$.annotation_gt.value['red'][1]" and "of the set of key 'red'" in warning.message
    assert rules(make("bbox_set_map", {"red": [[1, 2, 30, 40]], "blue": [[1, 2, 30, 40]]})) == []  # across keys: two roles


def test_many_duplicates_are_reported_up_to_a_bound() -> None:
    found = instance_warnings(make("point_set", [[10, 20]] * 9))
    assert [w.rule for w in found] == ["duplicate-items"] * (_lint.MAX_DUPLICATES_SHOWN + 1)
    assert found[-1].message.startswith("and 3 more items of the set") and "at most 1/9" in found[0].message


# --- count-mismatch ---


def counting(sizes_and_answers: list[tuple[int, Any]], **extra: Any) -> list[dict[str, Any]]:
    boxes = [[10 * i, 10 * i, 10 * i + 5, 10 * i + 5] for i in range(1, 9)]
    return [make("bbox_set", boxes[:size], answer=answer, **extra) for size, answer in sizes_and_answers]


def test_a_count_that_disagrees_with_its_set_in_a_counting_group() -> None:
    rows = counting([(2, 2), (3, 3), (1, 1), (1, 3), (0, 0), (4, 4)])
    (warning,) = lint(rows)
    assert (warning.rule, warning.line, warning.path) == ("count-mismatch", 4, "$.answer_gt.value")
    assert warning.message.startswith("the answer is 3 but the bbox_set target holds 1 item")
    assert "5 of the 6 instances with an integer answer and a bbox_set annotation answer the size of their set" in warning.message
    assert "annotate exactly the counted objects (an empty set for a zero count)" in warning.message


def test_a_zero_count_is_an_empty_set() -> None:
    rows = counting([(2, 2), (3, 3), (1, 1), (1, 0)])
    assert [(w.rule, w.line) for w in lint(rows)] == [("count-mismatch", 4)]
    assert lint(counting([(2, 2), (3, 3), (1, 1), (0, 0)])) == []


def test_no_count_warning_where_the_group_is_not_a_counting_task() -> None:
    assert lint(counting([(2, 2), (3, 3), (1, 4), (1, 5)])) == []  # half agree: not "most"
    assert lint(counting([(2, 2), (1, 3)])) == []  # too small a group
    assert lint(counting([(2, 2), (3, 3), (1, 1)])) == []  # all agree
    mixed = counting([(2, 2), (3, 3), (1, 1)]) + counting([(1, 3)], answer_type="number")
    assert lint(mixed) == []  # a number answer is another group


def test_many_mismatches_list_the_first_and_count_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_lint, "MAX_LISTED_PER_GROUP", 2)
    rows = counting([(2, 2)] * 6 + [(1, 3)] * 5)
    found = lint(rows)
    assert [(w.rule, w.line) for w in found] == [("count-mismatch", 7), ("count-mismatch", 8), ("count-mismatch", None)]
    assert found[-1].message.startswith("and 3 more instances with an integer answer and a bbox_set annotation")


def test_group_by_a_field_separates_tasks() -> None:
    counted = counting([(2, 2), (3, 3), (1, 1), (4, 4)], metadata={"task": "count"})
    difference = counting([(2, 5), (3, 7), (1, 4)], metadata={"task": "more_than"})
    rows = counted + difference
    assert [(w.rule, w.line) for w in lint(rows)] == [("count-mismatch", 5), ("count-mismatch", 6), ("count-mismatch", 7)]
    assert lint(rows, group_by="metadata.task") == []
    broken = [*rows, *counting([(1, 3)], metadata={"task": "count"})]
    (warning,) = lint(broken, group_by="metadata.task")
    assert warning.line == 8 and "instances with metadata.task='count', an integer answer" in warning.message


# --- single-item-set, single-item-sequence ---


def test_a_group_of_one_item_sets_is_a_scalar_type() -> None:
    rows = [make("bbox_set", [[i, i, i + 9, i + 9]], answer="B", answer_type="option_letter") for i in range(3)]
    (warning,) = lint(rows)
    assert warning.rule == "single-item-set" and warning.line is None and warning.path is None
    assert "all 3 instances with an option_letter answer and a bbox_set annotation have a set target of exactly one item" in (
        warning.message
    )
    assert "(lines 1, 2, 3)" in warning.message and "write 'bbox'" in warning.message
    assert lint([*rows[:2], make("bbox_set", [[1, 1, 9, 9], [20, 20, 29, 29]], answer="B", answer_type="option_letter")]) == []
    assert lint(rows[:2]) == []  # too small a group


def test_a_group_of_set_maps_with_one_item_per_set_is_a_map_type() -> None:
    rows = [make("point_set_map", {"a": [[i, 1]], "b": [[i, 9]]}, answer="x", answer_type="string") for i in range(3)]
    (warning,) = lint(rows)
    assert warning.rule == "single-item-set" and "write 'point_map'" in warning.message
    rows[1] = make("point_set_map", {"a": [[1, 1], [2, 2]], "b": [[1, 9]]}, answer="x", answer_type="string")
    assert lint(rows) == []


def test_a_group_of_one_item_sequences_is_a_scalar_type() -> None:
    rows = [make("point_sequence", [[i, 5]], answer=[1], answer_type="index_list") for i in range(4)]
    (warning,) = lint(rows)
    assert warning.rule == "single-item-sequence" and "write 'point'" in warning.message and "lines 1, 2, 3, 4" in warning.message
    rows[2] = make("point_sequence", [[1, 5], [2, 6]], answer=[1, 2], answer_type="index_list")
    assert lint(rows) == []


# --- single-key-map, empty-map ---


def test_a_one_key_map_is_a_scalar_type() -> None:
    warning = only(make("bbox_map", {"answer_endpoint": [1, 2, 30, 40]}), "single-key-map")
    assert "a bbox_map with one key ('answer_endpoint')" in warning.message and "the scalar type 'bbox'" in warning.message
    assert rules(make("bbox_map", {"source": [1, 2, 30, 40], "target": [50, 60, 70, 80]})) == []


def test_a_one_key_set_map_is_a_set_type() -> None:
    warning = only(make("point_set_map", {"red": [[1, 2], [3, 4]]}), "single-key-map")
    assert "the set type 'point_set'" in warning.message
    assert rules(make("point_set_map", {"red": [[1, 2], [3, 4]], "blue": []})) == []


def test_a_map_with_no_key() -> None:
    warning = only(make("point_map", {}), "empty-map")
    assert "the empty prediction {} earns its full annotation reward" in warning.message
    assert rules(make("point_set", [], answer=0)) == []  # an empty set is a valid zero count


# --- image sizes ---


def test_a_point_or_segment_instance_without_an_image_size() -> None:
    for annotation_type, value in (("point", [10, 20]), ("segment", [[10, 20], [30, 40]]), ("point_set", [])):
        warning = only(make(annotation_type, value, image_size=None), "missing-image-size")
        assert warning.path == "$.image_size" and "a fixed 32 px whatever the image" in warning.message
        assert rules(make(annotation_type, value)) == []
        assert rules(make(annotation_type, value, image_size=None, metadata={"width": 640, "height": 480})) == []
    assert rules(make("bbox", [10, 20, 30, 40], image_size=None)) == []  # boxes are scored by IoU: no half-life


def test_image_size_and_metadata_that_disagree() -> None:
    warning = only(make("point", [10, 20], metadata={"width": 1280, "height": 960}), "conflicting-image-size")
    assert warning.path == "$.metadata" and "1280x960, image_size says 640x480" in warning.message
    assert rules(make("point", [10, 20], metadata={"width": 640, "height": 480})) == []


# --- zero-length-segment ---


def test_a_segment_of_zero_length() -> None:
    warning = only(make("segment", [[10, 20], [10, 20]]), "zero-length-segment")
    assert warning.path == "$.annotation_gt.value" and "starts and ends at (10, 20)" in warning.message
    assert rules(make("segment", [[10, 20], [11, 20]])) == []
    in_set = only(make("segment_set", [[[1, 2], [3, 4]], [[5, 5], [5, 5]]]), "zero-length-segment")
    assert in_set.path == "$.annotation_gt.value[1]"


# --- image-missing ---


def test_an_image_path_that_names_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "data"
    (folder / "img").mkdir(parents=True)
    (folder / "img" / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "here.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    lint_ = DatasetLint(image_dir=folder)
    missing = lint_.add(make("bbox", [1, 2, 30, 40], image="img/b.png"), 1).warnings
    assert [(w.rule, w.path, w.line) for w in missing] == [("image-missing", "$.image", 1)]
    assert "'img/b.png' names no file" in missing[0].message and str(folder) in missing[0].message
    assert lint_.add(make("bbox", [1, 2, 30, 40], image="img/a.png"), 2).warnings == ()  # from the instances folder
    assert lint_.add(make("bbox", [1, 2, 30, 40], image="here.png"), 3).warnings == ()  # from the current directory
    assert lint_.add(make("bbox", [1, 2, 30, 40], image=str(folder / "img" / "a.png")), 4).warnings == ()
    assert lint_.add(make("bbox", [1, 2, 30, 40]), 5).warnings == ()  # no image named: nothing to check
    assert lint_.add(make("bbox", [1, 2, 30, 40], image="img"), 6).warnings[0].rule == "image-missing"  # a folder
    assert instance_warnings(make("bbox", [1, 2, 30, 40], image="img/b.png")) == []  # a file-level rule


# --- bounded memory ---


def test_groups_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_lint, "MAX_GROUPS", 3)
    lint_ = DatasetLint(group_by="id")
    for n in range(10):
        lint_.add({**make("bbox_set", [[1, 1, 5, 5]], answer=1), "id": f"i{n}"}, n + 1)
    assert len(lint_._groups) == 3
    assert lint_.finish() == [] and lint_.notes == [
        "more than 3 groups: 7 instances of further groups were not checked by the group rules (group by a field with fewer values)"
    ]
    assert lint_.lines == 10


def test_a_group_keeps_counts_and_a_few_lines_only() -> None:
    lint_ = DatasetLint()
    for n in range(1, 201):
        lint_.add_compiled(compile_instance(make("bbox_set", [[1, 1, 5, 5]], answer=3 if n % 2 else 1)), n)
    (group,) = lint_._groups.values()
    assert group.n == 200 and len(group.lines) == _lint.GROUP_LINES_SHOWN
    assert len(group.listed) == _lint.MAX_LISTED_PER_GROUP and group.unlisted == 80 and group.agree == 100
    # half agree: no counting task, so none of the mismatches is reported
    assert lint_.finish()[0].rule == "single-item-set"
    assert lint_.counts == {"single-item-set": 1}


def test_add_compiled_looks_at_a_repeated_instance_once() -> None:
    compiled = compile_instance(make("bbox_map", {"k": [1, 2, 3, 4]}))
    lint_ = DatasetLint()
    first = lint_.add_compiled(compiled, 1)
    assert lint_._last is not None and lint_._last[0] is compiled
    assert [w.line for w in lint_.add_compiled(compiled, 2)] == [2] and [w.line for w in first] == [1]
    assert lint_.counts == {"single-key-map": 2} and lint_.lines == 2


def test_a_hostile_image_path_gives_a_short_warning(tmp_path: Path) -> None:
    long_name = "x" * 100_000 + ".png"  # too long for the system: no traceback, a message of bounded length
    found = DatasetLint(image_dir=tmp_path).add(make("bbox", [1, 2, 30, 40], image=long_name), 1).warnings
    assert [w.rule for w in found] == ["image-missing"] and len(found[0].message) < 500
    surrogate = DatasetLint(image_dir=tmp_path).add(make("bbox", [1, 2, 30, 40], image="a\ud800.png"), 1).warnings
    assert [w.rule for w in surrogate] == ["image-missing"] and "\\ud800" in surrogate[0].message
