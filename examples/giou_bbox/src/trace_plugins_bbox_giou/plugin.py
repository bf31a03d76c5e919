"""The trace_tasks plugin: reward id ``bbox_giou_v1`` for annotation type ``bbox``.

It owns no type. ``ShapeRewards`` declares the id through ``trace_reward_ids``
and scores it (and explains the score) with a primitive that only needs a
similarity: the values it receives are the ones the ``bbox`` owner parsed. The
entry point names :data:`rewards`.

Installing this never changes what new contracts get: ``bbox_soft_iou_v0``
stays current until the user pins ``bbox=bbox_giou_v1``
(``TRACE_TASKS_REWARD_IDS`` or ``trace_tasks.pin_reward_id``).
"""

from __future__ import annotations

from trace_plugins_bbox_giou.geometry import giou01
from trace_tasks.family import Primitive, ShapeRewards, pairwise

REWARD_ID = "bbox_giou_v1"

GIOU = Primitive(name="bbox_giou", similarity=giou01, matrix=pairwise(giou01), metric="giou")

rewards = ShapeRewards(
    GIOU,
    {REWARD_ID: ("bbox", "scalar")},
    description="generalized IoU of the two boxes, rescaled to [0, 1] as (giou + 1) / 2",
)
