"""The point matrix of a large set holds exactly the scalar similarity's values (issue 41, item 2).

The pairs of a set are chosen on the matrix and the reward sums the scalar similarity of those pairs;
numpy's hypot and exp may differ from math's in the last bit (on some inputs, by CPU dispatch), so the
matrix is built from math.hypot and math.exp and the choice depends on the reward's own values only.
"""

from __future__ import annotations

import random

import numpy as np

from trace_plugins_point.geometry import NUMPY_MIN_CELLS, similarity, similarity_matrix
from trace_tasks.plugins import ScoringContext


def _item(rng: random.Random, scale: float) -> tuple[float, ...]:
    return tuple(rng.uniform(-scale, scale) for _ in range(2))


def test_every_cell_is_the_scalar_similarity_bit_for_bit() -> None:
    rng = random.Random(41)
    for half_life in (0.7, 37.3, 412.9):
        ctx = ScoringContext(half_life, None)
        for scale in (3.0, 600.0, 1e154, 1e308):  # near, far, squares that overflow, differences that overflow
            preds = [_item(rng, scale) for _ in range(9)]
            gts = [_item(rng, scale) for _ in range(8)]
            assert len(preds) * len(gts) >= NUMPY_MIN_CELLS
            matrix = similarity_matrix(preds, gts, ctx)
            assert isinstance(matrix, np.ndarray) and matrix.shape == (9, 8)
            for i, p in enumerate(preds):
                for j, g in enumerate(gts):
                    assert matrix[i, j].tobytes() == np.float64(similarity(p, g, ctx)).tobytes(), (p, g, half_life)


def test_identical_and_distant_items_score_one_and_zero() -> None:
    ctx = ScoringContext(10.0, None)
    near = _item(random.Random(1), 5.0)
    far = tuple(1e308 if k % 2 else -1e308 for k in range(len(near)))
    matrix = similarity_matrix([near] * 6 + [far] * 2, [near] * 5 + [far], ctx)
    assert matrix[0, 0] == 1.0 and matrix[0, 5] == 0.0 and matrix[6, 0] == 0.0
