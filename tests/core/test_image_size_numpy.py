"""Image sizes that arrive as numpy values (rows read through pandas or pyarrow)."""

from __future__ import annotations

import numpy as np
import pytest

from trace_tasks import score_trace_response
from trace_tasks.scoring import find_image_size

POINT_CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "point_soft_distance_v0", "type": "point"},
}


@pytest.mark.parametrize(
    "sources",
    [
        (np.array([640, 480]),),
        (np.array([640.0, 480.0]),),
        (None, np.array([[640, 480], [10, 10]])),
        (None, None, {"width": np.int64(640), "height": np.float32(480)}),
        (None, None, None, {"image_size": np.array([640, 480])}),
    ],
)
def test_numpy_sizes_are_found(sources: tuple[object, ...]) -> None:
    assert find_image_size(*sources) == (640.0, 480.0)


@pytest.mark.parametrize("bad", [np.bool_(True), np.float64("nan"), np.int64(0), np.float64("inf")])
def test_numpy_non_sizes_are_skipped(bad: object) -> None:
    assert find_image_size({"width": bad, "height": 480}) is None


def test_a_huge_array_is_not_walked() -> None:
    assert find_image_size(np.zeros((1000, 1000))) is None


def test_numpy_size_selects_the_half_life() -> None:
    result = score_trace_response(
        response='{"answer": 1, "annotation": [15, 20]}',
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "point", "value": [0, 0]},
        reward_contract=POINT_CONTRACT,
        image_size=np.array([640, 480]),
    )
    assert result["annotation_point_half_life_px"] == pytest.approx(28.0)
