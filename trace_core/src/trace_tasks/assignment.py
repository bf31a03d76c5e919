"""Maximum-total-similarity one-to-one assignment (scipy's Hungarian solver)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def assign_pairs(matrix: Sequence[Sequence[float]] | np.ndarray) -> list[tuple[int, int]]:
    """Index pairs ``(pred, target)`` of a one-to-one assignment maximizing the total.

    Rows are predictions, columns targets; min(rows, cols) pairs are returned.
    Non-finite cells count as 0 so a hostile coordinate cannot break the solver.
    A single row or column needs no solver: its best cell is the optimum.
    """
    if not isinstance(matrix, np.ndarray):
        if len(matrix) == 0 or len(matrix[0]) == 0:
            return []
        if len(matrix) == 1:
            return [(0, _argmax(matrix[0]))]
        if len(matrix[0]) == 1:
            return [(_argmax([row[0] for row in matrix]), 0)]
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.size == 0:
        return []
    if not np.isfinite(arr).all():
        arr = np.where(np.isfinite(arr), arr, 0.0)
    # Imported here: scipy costs ~0.1 s to import and answer-only users never need it.
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(arr, maximize=True)
    return list(zip(rows.tolist(), cols.tolist(), strict=False))


def _argmax(values: Sequence[float]) -> int:
    best, best_i = -1.0, 0
    for i, v in enumerate(values):
        if v > best and math.isfinite(v):
            best, best_i = v, i
    return best_i
