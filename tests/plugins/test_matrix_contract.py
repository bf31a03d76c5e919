"""The similarity-matrix contract of ``Primitive`` (docs/plugins.md, ``trace_tasks.family.Primitive``).

A list-of-lists matrix is summed as the reward without a second similarity
pass, so it must hold exactly the primitive's ``similarity`` values; a numpy
matrix only chooses the pairs, whose ``similarity`` is summed. Checked for
every official primitive on both sides of its numpy crossover: the two paths
give bit-identical rewards.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

import trace_plugins_bbox.geometry as box_geometry
import trace_plugins_point.geometry as point_geometry
import trace_plugins_segment.geometry as segment_geometry
from trace_plugins_bbox.plugin import BOX
from trace_plugins_point.plugin import POINT
from trace_plugins_segment.plugin import SEGMENT
from trace_tasks import ScoringContext
from trace_tasks.family import Primitive, match_set, pairwise

CTX = ScoringContext(half_life_px=40.0, image_size=(640.0, 480.0))


def _box(rng: random.Random) -> tuple[float, ...]:
    x, y = rng.uniform(0, 600), rng.uniform(0, 440)
    return (x, y, x + rng.uniform(1, 80), y + rng.uniform(1, 80))


def _point(rng: random.Random) -> tuple[float, ...]:
    return (rng.uniform(0, 640), rng.uniform(0, 480))


def _segment(rng: random.Random) -> tuple[float, ...]:
    return (*_point(rng), *_point(rng))


CASES = [
    (BOX, _box, box_geometry.NUMPY_MIN_CELLS),
    (POINT, _point, point_geometry.NUMPY_MIN_CELLS),
    (SEGMENT, _segment, segment_geometry.NUMPY_MIN_CELLS),
]


@pytest.mark.parametrize(("prim", "make", "crossover"), CASES, ids=lambda c: getattr(c, "name", ""))
def test_a_list_matrix_holds_exactly_the_similarity_values(prim: Primitive, make: Any, crossover: int) -> None:
    rng = random.Random(7)
    side = max(2, int(math.sqrt(crossover)) - 1)  # below the crossover: the pure-Python matrix
    preds, gts = [make(rng) for _ in range(side)], [make(rng) for _ in range(side)]
    matrix = prim.matrix(preds, gts, CTX)
    assert isinstance(matrix, list)
    assert matrix == [[prim.similarity(p, g, CTX) for g in gts] for p in preds]


@pytest.mark.parametrize(("prim", "make", "crossover"), CASES, ids=lambda c: getattr(c, "name", ""))
def test_both_matrix_paths_give_bit_identical_rewards(prim: Primitive, make: Any, crossover: int) -> None:
    rng = random.Random(11)
    side = int(math.sqrt(crossover)) + 2  # above the crossover: the numpy matrix
    preds, gts = [make(rng) for _ in range(side)], [make(rng) for _ in range(side)]
    assert isinstance(prim.matrix(preds, gts, CTX), np.ndarray)
    python_only = Primitive(name=prim.name, similarity=prim.similarity, matrix=pairwise(prim.similarity), metric=prim.metric)
    vectorized, plain = match_set(preds, gts, prim, CTX), match_set(preds, gts, python_only, CTX)
    assert vectorized.total == plain.total
    assert sorted(vectorized.pairs) == sorted(plain.pairs)
