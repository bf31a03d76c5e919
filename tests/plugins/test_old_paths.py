"""The flat layout's import paths keep working for one release, with a DeprecationWarning naming the new module.

A third-party family written before the rooms (``from trace_tasks.shapes import
ShapeFamily``...) must still load, pass the kit and score; the library itself
never imports an old path.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import trace_tasks
import trace_tasks.family
from trace_tasks import _moved, resolve_reward_contract, score_trace_response

OLD_FAMILY = '''
"""A family as a third party wrote it against trace-core's flat layout."""
from trace_tasks.coordinates import coordinates, is_flat
from trace_tasks.drawing import Box
from trace_tasks.errors import AnnotationParseError
from trace_tasks.shapes import Primitive, ShapeFamily, pairwise
from trace_tasks.specs import ScoringContext


def parse_interval(value):
    lo, hi = coordinates(value, 2)
    if not lo < hi:
        raise AnnotationParseError("empty interval")
    return (lo, hi)


def overlap(a, b, ctx: ScoringContext) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    union = max(a[1], b[1]) - min(a[0], b[0])
    value = inter / union if inter > 0 and union > 0 else 0.0
    return value if 0.0 <= value <= 1.0 else 0.0  # inf / inf is NaN: the kit's huge intervals catch it


INTERVAL = Primitive(
    name="old_interval",
    parse_item=parse_interval,
    is_item=lambda value: is_flat(value, 2),
    similarity=overlap,
    matrix=pairwise(overlap),
    metric="iou",
    draw=lambda item: [Box(item[0], 0.0, item[1], 1.0)],
    examples=([0, 10], [20, 30]),
)
family = ShapeFamily(INTERVAL, {"old_interval": ("scalar", "old_interval_iou_v0"), "old_interval_set": ("set", "old_interval_set_iou_v0")})
'''


def _forget_old_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name.rpartition(".")[2] in _moved.MOVED and name.startswith("trace_tasks."):
            monkeypatch.delitem(sys.modules, name)


def test_each_old_path_warns_and_gives_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    _forget_old_paths(monkeypatch)
    with pytest.warns(DeprecationWarning, match=r"trace_tasks\.shapes is deprecated .* import from trace_tasks\.family"):
        shapes = importlib.import_module("trace_tasks.shapes")
    assert shapes.ShapeFamily is trace_tasks.family.ShapeFamily
    assert shapes.coordinates is trace_tasks.family.coordinates  # the building blocks it re-exported
    for old, (instead, _) in _moved.MOVED.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(f"trace_tasks.{old}")
        if old != "shapes":
            assert any(issubclass(w.category, DeprecationWarning) and instead in str(w.message) for w in caught), old
        assert dir(module), old
    from trace_tasks.instances import CompiledInstance, InstanceError, compile_instance  # split in three: all found

    assert (CompiledInstance, InstanceError, compile_instance) == (
        trace_tasks.CompiledInstance,
        trace_tasks.InstanceError,
        trace_tasks.compile_instance,
    )
    from trace_tasks.distance import half_life_px, soft_similarity  # split in two

    assert half_life_px((640.0, 480.0)) == 28.0 and soft_similarity(0.0, 1.0) == 1.0
    with pytest.raises(ImportError):
        from trace_tasks.specs import NoSuchName  # noqa: F401


def test_a_family_written_against_the_old_paths_loads_passes_the_kit_and_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, register: Callable[[object, str], None]
) -> None:
    _forget_old_paths(monkeypatch)
    (tmp_path / "old_interval_family.py").write_text(textwrap.dedent(OLD_FAMILY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(DeprecationWarning):
        module = importlib.import_module("old_interval_family")
    register(module.family, "old-interval")
    trace_tasks.family.assert_family_ok(types=["old_interval", "old_interval_set"])
    contract = resolve_reward_contract(answer_type="integer", annotation_type="old_interval_set").to_dict()
    result = score_trace_response(
        response='{"answer": 1, "annotation": [[0, 10], [20, 25]]}',
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "old_interval_set", "value": [[0, 10], [20, 30]]},
        reward_contract=contract,
    )
    assert result["annotation_reward"] == pytest.approx(0.75)


def test_the_library_imports_no_old_path() -> None:
    root = Path(trace_tasks.__file__).parent
    old = {f"trace_tasks.{name}" for name in _moved.MOVED}
    for path in root.rglob("*.py"):
        if path.name == "_moved.py":
            continue
        text = path.read_text(encoding="utf-8")
        for name in old:
            assert f"from {name} import" not in text and f"import {name}\n" not in text, (path, name)
