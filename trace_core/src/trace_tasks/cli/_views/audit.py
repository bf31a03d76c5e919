"""What image-blind and reference policies earn on a dataset, through the normal scorer (``trace-tasks audit``, and the report's audit section).

A model learns what a dataset pays for. Before training, the audit answers
every instance with a few fixed policies that never look at the image, scores
each response with the instance's own compiled scorer
(:meth:`trace_tasks.data.CompiledInstance.score`, the very ``score_trace_response``
result, with the scorer options of ``score``) and prints, per annotation type,
the mean of each policy. Policies are computed per *group*: the instances
sharing an answer type and an annotation type. Each response is exactly one
JSON object:

* ``majority-answer``: ``{"answer": A}``, A the group's most frequent
  ``answer_gt.value`` (compared as the answer matcher compares them; ties: the
  one seen first in file order);
* ``majority-answer+empty`` (set types): ``{"answer": A, "annotation": []}``;
* ``majority-answer+whole-image``: the image-blind item the type's owner
  declares (``AnnotationTypeSpec.image_blind``): a box type gets the whole
  image ``[0, 0, W, H]``, a point type the image centre, a segment type the
  diagonal ``[[0, 0], [W, H]]``; a set or a sequence holds one such item, a map
  one per target key (a set map: a one-item set per key); a type whose owner
  declares none has no whole-image policy;
* ``majority-answer+mean-box`` (types whose owner declares averaged items:
  boxes): the group's mean target item, laid out as the whole image is;
  ``majority-answer+mean-box-copies`` (their sets and sequences): as many
  copies of it as the group's most frequent target size;
* ``correct-answer+no-annotation`` and ``correct-answer+whole-image``: the
  instance's own answer, alone and with the whole-image annotation (references:
  never flagged).

In the ``annotation_only`` mode (``--mode annotation_only``) there is no answer:
each ``majority-answer+*`` policy is its image-blind annotation alone
(``{"annotation": ...}``), and the policies that only differ by an answer
(``majority-answer``, ``correct-answer+*``) are not run.

The ``majority-*`` policies know nothing about the image: one whose mean
overall is at least ``--threshold`` is flagged, and the exit code is 1. A
whole-image policy needs the image size: an instance without one is counted
and left out of that policy. The instances are held in memory (one compiled
instance each); an invalid instance is reported, naming its line, and left out
(exit code 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from trace_tasks.data import CompiledInstance, InstanceError, compile_instance
from trace_tasks.plugins import SHAPES, ImageBlind, lay_out
from trace_tasks.runs import (
    MISSING,
    column_value,
    dumps,
    group_name,
    instance_part,
)
from trace_tasks.scoring import (
    ANNOTATION_ONLY,
    PIXEL,
    answer_target,
    frame_scales,
    resolve_mode,
    resolve_resize,
    resolve_tool_call,
)

MAJORITY = "majority-answer"
MAJORITY_EMPTY = "majority-answer+empty"
MAJORITY_WHOLE = "majority-answer+whole-image"
MAJORITY_MEAN_BOX = "majority-answer+mean-box"
MAJORITY_BOX_COPIES = "majority-answer+mean-box-copies"
CORRECT_ONLY = "correct-answer+no-annotation"
CORRECT_WHOLE = "correct-answer+whole-image"
#: Every policy, in the order of the tables.
POLICIES = (MAJORITY, MAJORITY_EMPTY, MAJORITY_WHOLE, MAJORITY_MEAN_BOX, MAJORITY_BOX_COPIES, CORRECT_ONLY, CORRECT_WHOLE)
#: The policies that may be flagged: they know nothing about the image (nor about the instance's own answer).
IMAGE_BLIND = frozenset(policy for policy in POLICIES if policy.startswith("majority-"))
WHOLE_IMAGE = frozenset({MAJORITY_WHOLE, CORRECT_WHOLE})
DEFAULT_THRESHOLD = 0.2


@attrs.define
class Instances:
    """The valid instances of a file in order, the problems of the others, and the ids seen twice."""

    source: str
    compiled: list[CompiledInstance] = attrs.field(factory=list)
    problems: list[str] = attrs.field(factory=list)
    repeated: int = 0
    #: With ``group_by``: each compiled instance's value of it, named as ``score --group-by`` names it.
    labels: list[str] = attrs.field(factory=list)
    #: Whether any line has the ``group_by`` column (one found on no line is an error naming it).
    group_found: bool = False


def load(lines: Iterable[Any], source: str, group_by: str | None = None, trace_reward_mode: Any = None) -> Instances:
    """Validate and compile every line; a line whose id was seen before (a combined file) is counted, not audited.

    A combined line is the instance it holds, as ``score`` reads it (its other
    columns left out). ``group_by``: a column or dotted path read from the line
    (``metadata.task``), each instance's value kept in ``labels``.
    ``trace_reward_mode``: the mode the audit scores in (an instance without an answer is a problem
    in a mode other than ``annotation_only``).
    """
    found = Instances(source)
    seen: set[str] = set()
    for line in lines:
        where = f"{source} line {line.number}"
        if line.error is not None:
            found.problems.append(f"{source}: {line.error}")
            continue
        data = line.value
        if not isinstance(data, Mapping):
            found.problems.append(f"{where}: $: a line must be a JSON object, got {type(data).__name__}")
            continue
        label = None
        if group_by is not None:
            value = column_value(data, group_by)
            found.group_found = found.group_found or value is not MISSING
            label = group_name(None if value is MISSING else value)
        data, _ = instance_part(data)
        data.pop("response", None)
        row_id = data.get("id")
        if isinstance(row_id, str):
            if row_id in seen:
                found.repeated += 1
                continue
            seen.add(row_id)
        try:
            found.compiled.append(compile_instance(data, record=where, trace_reward_mode=trace_reward_mode))
            if label is not None:
                found.labels.append(label)
        except InstanceError as exc:
            found.problems.extend(f"{where}: {problem}" for problem in exc.problems)
    return found


# --- policies ----------------------------------------------------------------------------------


@attrs.define
class Group:
    """The instances sharing an answer type and an annotation type, and what the image-blind policies answer."""

    answer_type: str
    annotation_type: str
    members: list[CompiledInstance] = attrs.field(factory=list)
    _box_sums: tuple[list[float], int] | None = None
    _sizes: dict[int, int] | None = None
    #: With ``audit --group-by``: the value of the column this group shares (then a group is one value's instances).
    label: str | None = None

    @property
    def cell(self) -> str:
        """Where the group's totals go: its annotation type, or ``VALUE/TYPE`` with ``--group-by``."""
        return self.annotation_type if self.label is None else f"{self.label}/{self.annotation_type}"

    def majority_answer(self) -> Any:
        """The most frequent ``answer_gt.value`` (as the matcher compares them); ties: the first in file order."""
        counts: dict[Any, list[Any]] = {}  # canonical form -> [count, first raw value]
        for member in self.members:
            if member.answer_spec is None:  # no answer (annotation_only): nothing to count
                continue
            raw = member.data["answer_gt"]["value"]
            key = _answer_key(raw, member)
            if key in counts:
                counts[key][0] += 1
            else:
                counts[key] = [1, raw]
        if not counts:
            return None
        best = max(counts.values(), key=lambda entry: entry[0])  # max keeps the first of equal counts
        return best[1]

    def mean_box(self, member: CompiledInstance) -> list[float | int] | None:
        """The mean of the target boxes of the group's *other* instances (``None`` when they hold none).

        Leaving the instance out keeps the policy blind to its own target (a group of one has no mean box).
        """
        width = len(blind_item(member, 1.0, 1.0))  # the family's items: flat lists of this many numbers
        if self._box_sums is None:
            sums, count = [0.0] * width, 0
            for other in self.members:
                for box in _items(other.target, width):
                    sums = [a + b for a, b in zip(sums, box, strict=True)]
                    count += 1
            self._box_sums = (sums, count)
        sums, count = self._box_sums
        own = _items(member.target, width)
        left = count - len(own)
        if left == 0:
            return None
        return [_round((sums[i] - sum(box[i] for box in own)) / left) for i in range(width)]

    def common_size(self, member: CompiledInstance) -> int:
        """The most frequent number of target items among the group's other instances (ties: the first in file order)."""
        if self._sizes is None:
            self._sizes = {}
            for other in self.members:
                size = len(other.target)
                self._sizes[size] = self._sizes.get(size, 0) + 1
        counts = dict(self._sizes)
        counts[len(member.target)] -= 1
        return max(counts, key=lambda size: counts[size])


def _answer_key(raw: Any, member: CompiledInstance) -> Any:
    spec = member.answer_spec
    key = answer_target(raw, reads_json_strings=spec.reads_json_strings if spec is not None else True)
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


def _items(value: Any, width: int) -> list[tuple[float, ...]]:
    """The flat items of ``width`` numbers in a parsed value (a box, a list of boxes, a map of either)."""
    if isinstance(value, Mapping):
        return [item for inner in value.values() for item in _items(inner, width)]
    if isinstance(value, (tuple, list)):
        if len(value) == width and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            return [tuple(float(x) for x in value)]
        return [item for inner in value for item in _items(inner, width)]
    return []


def _round(value: float) -> float | int:
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def image_blind(member: CompiledInstance) -> ImageBlind | None:
    """What the owner of the instance's annotation type declares an image-blind policy answers (``None``: nothing)."""
    spec = member.annotation_entry.spec
    return spec.image_blind if spec is not None else None


def shape(member: CompiledInstance) -> str:
    spec = member.annotation_entry.spec
    return spec.shape if spec is not None else ""


def blind_item(member: CompiledInstance, width: float, height: float) -> Any:
    """The family's image-blind item for an image of ``width`` x ``height`` (the whole image for a box, its centre
    for a point, its diagonal for a segment), its numbers rounded to 2 decimals."""
    declared = image_blind(member)
    return _rounded(declared.item(width, height)) if declared is not None else None


def _rounded(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_rounded(inner) for inner in value]
    return _round(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def laid_out(item: Any, member: CompiledInstance, copies: int = 1) -> Any:
    """``item`` as an annotation of the member's type: itself, a list of ``copies``, or one per target key."""
    return lay_out(item, shape(member), member.target if isinstance(member.target, Mapping) else (), copies)


def applies(policy: str, member: CompiledInstance) -> bool:
    """Whether a policy is defined for the member's annotation type (a whole-image one may still lack a size)."""
    kind = shape(member)
    if policy in (MAJORITY, CORRECT_ONLY):
        return True
    if policy == MAJORITY_EMPTY:
        return kind == "set"
    declared = image_blind(member)
    if policy in WHOLE_IMAGE:
        return declared is not None and kind in SHAPES
    if policy == MAJORITY_MEAN_BOX:
        return declared is not None and declared.averaged and kind in SHAPES
    if policy == MAJORITY_BOX_COPIES:
        return declared is not None and declared.averaged and kind in ("set", "sequence")
    return False


#: Why a policy left an instance out: it needs an image size the instance lacks; it needs other instances in the group.
NO_IMAGE_SIZE = "no_image_size"
ALONE = "alone_in_group"
#: Why a policy left an instance out under a declared frame: the policy averages pixel targets of other images.
PIXELS_ONLY = "pixels_only"
#: The reasons in words (the text table's notes).
SKIPPED_WORDS = {
    NO_IMAGE_SIZE: "without an image size",
    ALONE: "alone in their group (no other target to average)",
    PIXELS_ONLY: "under a declared --prediction-frame (the mean of other images' pixel targets has no one frame)",
}


#: The policies run in the ``annotation_only`` mode: those with an image-blind annotation (the answer left out).
ANNOTATION_ONLY_POLICIES = frozenset({MAJORITY_EMPTY, MAJORITY_WHOLE, MAJORITY_MEAN_BOX, MAJORITY_BOX_COPIES})


def frame_extent(member: CompiledInstance, options: Mapping[str, Any]) -> tuple[float, float] | None:
    """The image's ``(width, height)`` as the declared frame writes it, y-first swapped; ``None`` in pixels.

    The inverse of :func:`trace_tasks.scoring.frame_scales`: 1000 x 1000 for ``rel1000``, the resized
    input's size for ``resized``. A family's image-blind item for that extent is what a model writing
    the frame writes (its numbers are ``(x, y)`` pairs; ``rel1000_yx`` swaps the extent, so each pair
    comes out ``(y, x)``).
    """
    frame = options.get("prediction_frame") or PIXEL
    if frame == PIXEL or member.image_size is None:
        return None
    declared = member.data.get("model_image_size")
    model = (float(declared[0]), float(declared[1])) if isinstance(declared, (list, tuple)) and len(declared) == 2 else None
    resize = resolve_resize(options.get("resize"))
    width, height = member.image_size
    scale_x, scale_y, y_first = frame_scales(frame, (width, height), model, resize)
    extent = (width / scale_x, height / scale_y)
    return (extent[1], extent[0]) if y_first else extent


def response(
    policy: str,
    member: CompiledInstance,
    group: Group,
    majority: Any,
    annotation_only: bool = False,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any] | str:
    """The policy's JSON object for one instance, or why the policy leaves it out (:data:`NO_IMAGE_SIZE`, :data:`ALONE`,
    :data:`PIXELS_ONLY`).

    ``annotation_only``: the object without its answer (``{"annotation": ...}``). Under a declared
    ``prediction_frame`` (in ``options``) the whole-image item is written in it.
    """
    found = _response(policy, member, group, majority, options)
    if annotation_only and not isinstance(found, str):
        found.pop("answer", None)
    return found


def _response(
    policy: str, member: CompiledInstance, group: Group, majority: Any, options: Mapping[str, Any] | None = None
) -> dict[str, Any] | str:
    extent = frame_extent(member, options or {})
    gt = member.data.get("answer_gt")
    own = gt.get("value") if isinstance(gt, Mapping) else None
    if policy == MAJORITY:
        return {"answer": majority}
    if policy == CORRECT_ONLY:
        return {"answer": own}
    if policy == MAJORITY_EMPTY:
        return {"answer": majority, "annotation": []}
    if policy in WHOLE_IMAGE:
        if member.image_size is None:
            return NO_IMAGE_SIZE
        annotation = laid_out(blind_item(member, *(extent or member.image_size)), member)
        return {"answer": majority if policy == MAJORITY_WHOLE else own, "annotation": annotation}
    if (options or {}).get("prediction_frame", PIXEL) not in (None, PIXEL):
        return PIXELS_ONLY
    if len(group.members) == 1:
        return ALONE
    box = group.mean_box(member)
    if box is None:  # the other targets hold no box (empty sets): their mean is the empty set
        return {"answer": majority, "annotation": []}
    copies = group.common_size(member) if policy == MAJORITY_BOX_COPIES else 1
    return {"answer": majority, "annotation": laid_out(box, member, copies)}


# --- scoring -----------------------------------------------------------------------------------


@attrs.define
class Totals:
    """One policy on one annotation type: the rows scored, their sums, the instances left out for want of a size."""

    rows: int = 0
    overall: float = 0.0
    answer: float = 0.0
    annotation: float = 0.0
    skipped: dict[str, int] = attrs.field(factory=dict)

    def add(self, scores: Mapping[str, float]) -> None:
        self.rows += 1
        self.overall += scores["overall"]
        self.answer += scores["answer_reward"]
        self.annotation += scores["annotation_reward"]

    def mean(self, total: float) -> float:
        return total / self.rows if self.rows else 0.0


@attrs.define
class Audit:
    """The audit of a set of instances: totals by ``(annotation type, policy)``, the groups, the threshold."""

    threshold: float
    totals: dict[tuple[str, str], Totals] = attrs.field(factory=dict)
    groups: list[Group] = attrs.field(factory=list)
    majorities: list[Any] = attrs.field(factory=list)
    #: With ``--group-by``: each cell's annotation type and value (a cell is ``VALUE/TYPE``).
    cells: dict[str, tuple[str, str | None]] = attrs.field(factory=dict)

    def flagged(self, policy: str, totals: Totals) -> bool:
        return policy in IMAGE_BLIND and totals.rows > 0 and totals.mean(totals.overall) >= self.threshold

    def entries(self) -> list[dict[str, Any]]:
        out = []
        for (cell, policy), totals in self.totals.items():
            annotation_type, label = self.cells.get(cell, (cell, None))
            out.append(
                {
                    "policy": policy,
                    "annotation_type": annotation_type,
                    **({} if label is None else {"group": label}),
                    "rows": totals.rows,
                    "mean_overall": totals.mean(totals.overall),
                    "mean_answer_reward": totals.mean(totals.answer),
                    "mean_annotation_reward": totals.mean(totals.annotation),
                    "image_blind": policy in IMAGE_BLIND,
                    "flagged": self.flagged(policy, totals),
                    "skipped": dict(totals.skipped),
                }
            )
        return out

    def any_flagged(self) -> bool:
        return any(self.flagged(policy, totals) for (_, policy), totals in self.totals.items())


def group_instances(compiled: Iterable[CompiledInstance], labels: list[str] | None = None) -> list[Group]:
    """Groups by ``(answer type, annotation type)`` (and each instance's ``labels`` value), in the order their first instance comes."""
    groups: dict[tuple[str | None, str, str], Group] = {}
    members = list(compiled)
    for member, label in zip(members, labels if labels else [None] * len(members), strict=True):
        key = (label, member.answer_type or "none", member.annotation_type)  # "none": no answer (annotation_only)
        if key not in groups:
            groups[key] = Group(key[1], member.annotation_type, label=label)
        groups[key].members.append(member)
    return list(groups.values())


def audit(
    compiled: list[CompiledInstance],
    options: Mapping[str, Any],
    threshold: float = DEFAULT_THRESHOLD,
    labels: list[str] | None = None,
) -> Audit:
    """Score every policy on every instance it applies to (``score_trace_response``'s result, through the compiled instance).

    ``labels``: each instance's ``--group-by`` value; the policies are then scored per value and type
    (the majority answer of a value's own instances), in cells ``VALUE/TYPE``.
    """
    result = Audit(threshold)
    result.groups = group_instances(compiled, labels)
    result.cells = {group.cell: (group.annotation_type, group.label) for group in result.groups if group.label is not None}
    annotation_only = resolve_mode(options.get("trace_reward_mode")) == ANNOTATION_ONLY
    tool = resolve_tool_call(options.get("tool_call"))
    policies = [p for p in POLICIES if p in ANNOTATION_ONLY_POLICIES] if annotation_only else list(POLICIES)
    # The table order: annotation types in file order, then the policies in POLICIES order.
    for group in result.groups:
        for policy in policies:
            if applies(policy, group.members[0]):
                result.totals.setdefault((group.cell, policy), Totals())
    ordered = sorted(result.totals, key=lambda key: (_first_seen(result.groups, key[0]), POLICIES.index(key[1])))
    result.totals = {key: result.totals[key] for key in ordered}
    for group in result.groups:
        majority = group.majority_answer()
        result.majorities.append(majority)
        for member in group.members:
            for policy in policies:
                if not applies(policy, member):
                    continue
                totals = result.totals[(group.cell, policy)]
                obj = response(policy, member, group, majority, annotation_only, options)
                if isinstance(obj, str):
                    totals.skipped[obj] = totals.skipped.get(obj, 0) + 1
                    continue
                totals.add(member.score(_written(obj, tool), **options))
    return result


def _written(obj: dict[str, Any], tool: Any) -> str:
    """The policy's response: its JSON object, or, under a declared tool call, the annotation as that tool's call
    (``<tool_call>`` JSON; a list of argument names takes the annotation's numbers in order) and the answer's object."""
    if tool is None or "annotation" not in obj:
        return dumps(obj)
    annotation = obj["annotation"]
    if tool.single:
        arguments = {tool.arguments[0]: annotation}
    elif isinstance(annotation, list) and len(annotation) == len(tool.arguments):
        arguments = dict(zip(tool.arguments, annotation, strict=True))
    else:
        return dumps({k: v for k, v in obj.items() if k != "annotation"})  # not writable as this call: no annotation
    call = "<tool_call>" + dumps({"name": tool.name, "arguments": arguments}) + "</tool_call>"
    rest = {k: v for k, v in obj.items() if k != "annotation"}
    return call + ("\n" + dumps(rest) if rest else "")


def _first_seen(groups: list[Group], cell: str) -> int:
    return next(i for i, group in enumerate(groups) if group.cell == cell)


# --- output ------------------------------------------------------------------------------------


def tables(result: Audit) -> str:
    """One fixed-width table per annotation type, then the flagged policies."""
    headers = ["policy", "rows", "mean overall", "mean answer", "mean annotation", ""]
    by_type: dict[str, list[list[str]]] = {}
    notes: dict[str, list[str]] = {}
    for (annotation_type, policy), totals in result.totals.items():
        flag = "FLAGGED" if result.flagged(policy, totals) else ("reference" if policy not in IMAGE_BLIND else "")
        by_type.setdefault(annotation_type, []).append(
            [
                policy,
                str(totals.rows),
                f"{totals.mean(totals.overall):.3f}",
                f"{totals.mean(totals.answer):.3f}",
                f"{totals.mean(totals.annotation):.3f}",
                flag,
            ]
        )
        for reason, count in totals.skipped.items():
            why = SKIPPED_WORDS.get(reason, reason)
            notes.setdefault(annotation_type, []).append(f"  {policy}: {count} instance(s) {why}, left out")
    rows_all = [row for rows in by_type.values() for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows_all)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            [cells[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:-1], widths[1:-1], strict=True)), cells[-1]]
        ).rstrip()

    out: list[str] = []
    for annotation_type, rows in by_type.items():
        groups = [g for g in result.groups if g.cell == annotation_type]
        count = sum(len(g.members) for g in groups)
        alone = sum(len(g.members) == 1 for g in groups)
        out.append(f"{annotation_type}: {count} instance(s), {len(groups)} answer type(s)")
        if alone:
            out.append(f"  {alone} instance(s) alone in their group: the group's majority answer is their own answer")
        out.append(line(headers))
        out.append("-" * len(line(headers)))
        out.extend(line(row) for row in rows)
        out.extend(notes.get(annotation_type, []))
        out.append("")
    flagged = [(t, p, totals) for (t, p), totals in result.totals.items() if result.flagged(p, totals)]
    if flagged:
        out.append(
            f"{len(flagged)} image-blind polic{'ies' if len(flagged) != 1 else 'y'} earn mean overall >= {result.threshold}:"
        )
        out.extend(f"  {t}: {p} {totals.mean(totals.overall):.3f}" for t, p, totals in flagged)
    else:
        out.append(f"no image-blind policy earns mean overall >= {result.threshold}")
    return "\n".join(out)


def to_json(result: Audit, instances: Instances, options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "policies": result.entries(),
        "threshold": result.threshold,
        "flagged": result.any_flagged(),
        "groups": [
            {
                "answer_type": group.answer_type,
                "annotation_type": group.annotation_type,
                **({} if group.label is None else {"group": group.label}),
                "instances": len(group.members),
                "majority_answer": majority,
                "without_image_size": sum(member.image_size is None for member in group.members),
            }
            for group, majority in zip(result.groups, result.majorities, strict=True)
        ],
        "instances": len(instances.compiled),
        "repeated_ids_skipped": instances.repeated,
        "instance_problems": instances.problems,
        "options": dict(options),
    }
