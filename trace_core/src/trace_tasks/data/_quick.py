"""The common label compiled in one native call: the reward server's lane (native build only).

Every label the reward server meets (``/get_reward``, ``/verify``) is validated,
compiled and linted before its response is scored (the server's
``validate_labels``, and ``compile_ground_truth`` for a label sent as JSON
text). In the native build the general path for that costs about two plain
scorer calls, most of it Python steps that each do little. :func:`quick_compile`
hands the label to the native module's ``check_label`` instead, which takes the
label most datasets hold:

* ``answer_gt`` and ``annotation_gt`` exactly ``{"type", "value"}``, the answer
  type a built-in one, the annotation type scored by a native kernel (the
  official families' boxes, points and segments, in every shape);
* the contract ``resolve_reward_contract`` writes for the pair (checked by the
  contract rules once per pair: the plan below);
* a plain answer (an integer, a finite number, a boolean, text not written as a
  JSON literal, a list or a list of lists of whole numbers and text), a plain
  target within the assignment budget, sizes as two numbers, ``metadata`` with
  text keys, no ``model_image_size``;
* and no authoring rule broken that this process has not logged yet.

It returns what the general path computes (the same compiled instance, field
for field); any other label, and any label breaking a rule not logged yet,
returns ``None`` and goes the general way, which reports or logs what it finds.
Only labels decoded from JSON come here (no numpy value can hide inside).
tests/data/test_quick_compile.py compares the two paths on the server
benchmark's labels and on labels aimed at each condition.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from trace_tasks.data._compiled import CompiledInstance
from trace_tasks.data._lint import SMALL_IMAGE_PX, _type_info
from trace_tasks.data._validation import _SIZE_KEYS, _budget_problem, _plain_contract
from trace_tasks.plugins import ANSWER_RELAXED_ID, BUILTIN_ANSWER_TYPES, Registry, get_registry
from trace_tasks.scoring import (
    NATIVE_ANSWER_RULES,
    NATIVE_KERNEL_DRAWINGS,
    NATIVE_SHAPES,
    native_label_lane,
    native_lane_setup,
    native_reward_codes,
)

__all__ = ["LANE_FIELDS", "LANE_RULES", "quick_compile"]

#: The fields of a label the compiled instance holds, in the general path's order (``COMPILED_FIELDS``).
LANE_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata", "model_image_size")
#: The authoring rules of one instance (``data._lint._own_warnings``), in the order of the native lane's bits.
LANE_RULES: tuple[str, ...] = (
    "normalized-coordinates",
    "zero-length-segment",
    "duplicate-items",
    "single-key-map",
    "empty-map",
    "missing-image-size",
    "conflicting-image-size",
)


def quick_compile(label: dict[str, Any], skip: Collection[str]) -> tuple[CompiledInstance, dict[str, Any]] | None:
    """``label`` (decoded from JSON) compiled as the general path compiles it, and its other scorer inputs; or None.

    ``skip`` holds the authoring rules this process has logged: a label breaking
    another one returns None, so that the general path logs it. None also in the
    pure build, and for every label the lane does not take (see the module).
    """
    lane = native_label_lane()
    if lane is None or type(label) is not dict:  # a mapping of another type (an OrderedDict): the general path
        return None
    check_label, ready = lane
    if not ready():
        native_lane_setup(LANE_FIELDS, LANE_RULES, _SIZE_KEYS, _budget_problem, float(SMALL_IMAGE_PX), CompiledInstance, _plan)
    found: tuple[CompiledInstance, dict[str, Any]] | None = check_label(label, skip, get_registry())
    return found


def _plan(answer_type: str, annotation_type: str, registry: Registry) -> tuple[Any, ...] | None:
    """What ``check_label`` needs of a pair of types, or None when the lane cannot take the pair.

    ``(answer spec, annotation entry, reward entry, contract, kernel code, shape code, answer rule, scored by
    distance)``: a built-in answer type, an annotation type whose current reward the native path
    scores with a kernel whose items its owner draws as the kernel's (the lint reads them so), the contract
    the rules accept (not naming the pinned relaxed answer policy), and a type whose examples say whether it
    is scored by distance.
    """
    spec, entry = registry.answer_types.get(answer_type), registry.annotation_types.get(annotation_type)
    if spec is None or entry is None or entry.spec is None or not any(spec is builtin for builtin in BUILTIN_ANSWER_TYPES):
        return None
    rule = NATIVE_ANSWER_RULES.get(spec.name)
    reward = registry.reward_ids.get(entry.current_reward_id)
    codes = native_reward_codes(reward) if reward is not None else None
    contract = _plain_contract(answer_type, annotation_type, registry)
    info = _type_info(entry, registry)
    if rule is None or codes is None or contract is None or info.distance is None or info.shape != entry.spec.shape:
        return None
    shape, kernel = codes
    if entry.spec.drawn_as != NATIVE_KERNEL_DRAWINGS.get(kernel) or NATIVE_SHAPES.get(entry.spec.shape) != shape:
        return None
    if contract["answer"].get("id") == ANSWER_RELAXED_ID:  # the pinned relaxed policy (opt-in): the general path
        return None
    if get_registry() is not registry:  # the plugins changed while the plan was made (a pin in another thread)
        return None
    return (spec, entry, reward, contract, kernel, shape, rule, info.distance)
