"""``trace-tasks explain``: why one response got its reward.

Prints the extraction (the final block, which candidate scoring used, the
format diagnostics), the answer comparison (both normalized forms), and the
annotation as the family that scores the contract's reward id explains it
(its ``trace_explain_annotation`` capability, asked with the values and the
:class:`~trace_tasks.specs.ScoringContext` the scorer used): the pairing
method and metric, a table of the pairs with their similarity, the unmatched
items on either side, missing and extra map keys, and the reward's formula.
Nothing here matches items itself, so the table is the assignment the reward
was built from; a family without the capability gets one line saying so.
Whatever a family returns is shown through safe formatters and cannot crash
the report.

When the image size is known, the annotation section notes items outside
the image frame and coordinates that look normalised (0-1, 0-1000), found
through the type owner's ``trace_draw_annotation`` capability
(:mod:`trace_tasks.frames`).

With ``--png`` (or a ``.jpg``/``.jpeg`` name) it also draws the explanation's
items through that capability (Pillow, ``trace-core[viz]``; see
:mod:`trace_tasks.cli._drawing`), under a header with the reward breakdown of
:mod:`trace_tasks.cli._breakdown`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from trace_tasks.cli._breakdown import reward_breakdown
from trace_tasks.cli._checks import instance_problems
from trace_tasks.cli._drawing import CannotDraw, DrawingUnavailable, explanation_notes, picture_format, render
from trace_tasks.cli._extraction_view import (
    candidate_used,
    canonical_form,
    item_name,
    plain,
    predicted_annotation,
    predicted_answer,
    show_number,
    show_value,
)
from trace_tasks.cli._jsonl import open_binary, read_lines
from trace_tasks.cli._options import add_scoring_options, scoring_options
from trace_tasks.core.reward_scoring import evaluate_trace_response_format, score_trace_response
from trace_tasks.distance import half_life_px
from trace_tasks.errors import AnnotationParseError, MissingFamilyError
from trace_tasks.extraction import ANSWER_AND_ANNOTATION_KEYS, ANSWER_KEYS
from trace_tasks.image_size import find_image_size
from trace_tasks.literals import literal_budget
from trace_tasks.options import ANSWER, resolve_mode, resolve_options
from trace_tasks.plugins import get_registry
from trace_tasks.records import TraceInstance, TrainInstance, instance_from_dict
from trace_tasks.specs import AnnotationExplanation, ScoringContext

EXIT_OK, EXIT_BAD_INSTANCE, EXIT_USAGE = 0, 1, 2
SHOW_CHARS = 300
SHOW_ERROR_CHARS = 200
SHOW_KEYS = 20
SHOW_KEY_CHARS = 40
#: Where ``score_trace_response`` looks for the image size, in its order.
SIZE_SOURCES = ("image_size", "image_sizes", "metadata", "extra_info")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="explain the reward of one response (extraction, answer, assignment table, optional picture)",
        description=(
            "Explain the reward of one response to one instance: the extraction, the answer comparison and the "
            "annotation assignment. The instance is line N (--line) or the first line with id ID (--id) of FILE; "
            "the response is --response, or the line's own 'response' field."
        ),
    )
    parser.add_argument("--instance", required=True, metavar="FILE", help="instance file (.jsonl, .jsonl.gz, '-')")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--line", type=int, metavar="N", help="1-based line number of the instance")
    where.add_argument("--id", metavar="ID", help="id of the instance")
    parser.add_argument("--response", metavar="TEXT|@FILE", help="the response text, or @FILE to read it (@- for stdin)")
    parser.add_argument(
        "--png",
        metavar="FILE",
        help="draw targets and predictions to FILE: PNG for .png, JPEG for .jpg/.jpeg (needs trace-core[viz])",
    )
    parser.add_argument(
        "--image", metavar="PATH", help="draw over this image (default: the instance's 'image', else a blank canvas)"
    )
    add_scoring_options(parser)
    parser.set_defaults(func=run)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"trace-tasks explain: error: {message}", file=sys.stderr)
    return code


def _find_row(path: str, line_no: int | None, row_id: str | None) -> tuple[int, Any]:
    with open_binary(path) as fh:
        for line in read_lines(fh):
            if line_no is not None and line.number == line_no:
                if line.error is not None:
                    raise LookupError(line.error)
                return line.number, line.value
            if row_id is not None and isinstance(line.value, Mapping) and line.value.get("id") == row_id:
                return line.number, line.value
    raise LookupError(f"no line {line_no} in {path}" if line_no is not None else f"no instance with id {row_id!r} in {path}")


def _read_response(arg: str | None, row: Mapping[str, Any]) -> str:
    if arg is None:
        response = row.get("response")
        if not isinstance(response, str):
            raise LookupError("no --response given and the line has no 'response' string")
        return response
    if arg.startswith("@"):
        source = arg[1:]
        if source == "-":
            return sys.stdin.read()
        return Path(source).read_text(encoding="utf-8")
    return arg


def run(args: argparse.Namespace) -> int:
    try:
        options = scoring_options(args)
        if args.png:
            picture_format(args.png)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        number, row = _find_row(args.instance, args.line, args.id)
        if not isinstance(row, Mapping):
            return _fail(f"line {number} is not a JSON object", EXIT_BAD_INSTANCE)
        response = _read_response(args.response, row)
    except (LookupError, OSError) as exc:
        return _fail(str(exc))
    data = {k: v for k, v in row.items() if k != "response"}
    try:
        instance = instance_from_dict(data, cls=TrainInstance)
    except ValueError:
        for problem in instance_problems(data, check_values=False):
            print(f"{args.instance}:{number}: {problem}", file=sys.stderr)
        return _fail(f"the instance on line {number} is invalid", EXIT_BAD_INSTANCE)
    try:
        body, view, scores = explain_response(response, instance, options)
    except MissingFamilyError as exc:
        return _fail(str(exc), EXIT_BAD_INSTANCE)
    print("\n".join(_header(args.instance, number, instance) + body))
    if args.png:
        return _draw(args, instance, view, scores)
    return EXIT_OK


def explain_response(
    response: str, instance: TraceInstance, options: Mapping[str, Any]
) -> tuple[list[str], AnnotationView, dict[str, Any]]:
    """The report's sections (extraction, answer, annotation, reward), the annotation view and the scores.

    Raises :class:`~trace_tasks.errors.MissingFamilyError` when no installed
    family owns the instance's types (a caller's problem, as when scoring).
    """
    scores = score_trace_response(response=response, **instance.scoring_kwargs(), **options)
    out = _extraction(response, options["trace_reward_mode"])
    out += _answer(response, instance, options["trace_reward_mode"], scores)
    view = _annotation(response, instance, options, scores, out)
    out += _reward(scores)
    return out, view, scores


def _short(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= SHOW_CHARS else f"{text[:SHOW_CHARS]}... ({len(text)} characters)"


def _header(path: str, number: int, instance: TraceInstance) -> list[str]:
    contract = instance.reward_contract
    return [
        f"instance {instance.id!r} ({path} line {number})",
        f"  answer type {instance.answer_gt.type}, annotation type {instance.annotation_gt.type} "
        f"(reward id {contract.annotation.id}), image size {list(instance.image_size) if instance.image_size else 'not given'}",
    ]


def _keys(mode: str) -> frozenset[str]:
    return ANSWER_KEYS if resolve_mode(mode) == ANSWER else ANSWER_AND_ANNOTATION_KEYS


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _extraction(response: str, mode: str) -> list[str]:
    fmt = evaluate_trace_response_format(response, trace_reward_mode=mode)
    block = fmt["answer_block"]
    lines = ["", "Extraction"]
    lines.append(
        f"  final block: {_short(block) if block is not None else 'none (the response does not end with a fenced block or a balanced object)'}"
    )
    lines.append(
        f"  format: structure {_yes(fmt['structure_ok'])}, JSON {_yes(fmt['json_ok'])}, schema {_yes(fmt['schema_ok'])}"
        f" -> format {fmt['format']:.0f}"
    )
    payload = fmt["payload"]
    if isinstance(payload, Mapping) and not fmt["schema_ok"]:
        found = sorted(map(str, payload))
        lines.append(f"  keys found {found}, required exactly {sorted(_keys(mode))}")
    used, _ = candidate_used(response, _keys(mode))
    lines.append(f"  candidate used for scoring: {used}")
    return lines


def _answer(response: str, instance: TraceInstance, mode: str, scores: Mapping[str, float]) -> list[str]:
    predicted = predicted_answer(response, _keys(mode))
    spec = get_registry().answer_types.get(instance.answer_gt.type.strip())
    reads_json = spec.reads_json_strings if spec is not None else True
    return [
        "",
        f"Answer ({instance.answer_gt.type}, exact match after normalization)",
        f"  predicted {_short(json.dumps(predicted, default=repr))} -> {_short(canonical_form(predicted, reads_json))}",
        f"  expected  {_short(json.dumps(instance.answer_gt.value, default=repr))} -> {canonical_form(instance.answer_gt.value, reads_json)}",
        f"  match: {_yes(scores['answer_reward'] == 1.0)} (answer_reward {scores['answer_reward']:g})",
    ]


@attrs.frozen
class AnnotationView:
    """What the annotation section found, for the report and the picture.

    ``explanation`` is the scoring family's own account (``None`` when there is
    none: no family, no explain capability, a target that does not parse, a
    contract id that is not current); ``lines`` are the report lines and
    ``problem`` says in one line why there is no explanation.
    """

    annotation_type: str
    reward_id: str
    lines: tuple[str, ...]
    explanation: AnnotationExplanation | None = None
    context: ScoringContext | None = None
    problem: str = ""


def scoring_context(scoring_kwargs: Mapping[str, Any], options: Mapping[str, Any]) -> ScoringContext:
    """The context ``score_trace_response`` builds from the same keyword arguments and options."""
    opts = resolve_options(
        options["trace_reward_mode"], options["answer_weight"], options["annotation_weight"],
        options["format_weight"], options["trace_annotation_reward_formula"], options["point_half_life_px"],
    )  # fmt: skip
    sources = tuple(scoring_kwargs.get(key) for key in SIZE_SOURCES)
    size = find_image_size(*sources) if any(source is not None for source in sources) else None
    return ScoringContext(half_life_px(size, opts.point_half_life_px), size)


def explain_annotation(
    response: str, instance: TraceInstance, options: Mapping[str, Any], scoring_kwargs: Mapping[str, Any] | None = None
) -> AnnotationView:
    """Ask the family that scores the contract's reward id to explain the annotation score.

    The values and the context are the scorer's: the owner's parse of the
    target and of the prediction the scorer extracted (``None`` when there is
    none or it does not parse), and the context ``score_trace_response`` builds
    from ``scoring_kwargs`` (default ``instance.scoring_kwargs()``).
    """
    name = instance.annotation_gt.type.strip()
    rid = instance.reward_contract.annotation.id
    lines: list[str] = []

    def without(problem: str) -> AnnotationView:
        lines.append(f"  {problem}")
        return AnnotationView(name, rid, tuple(lines), problem=problem)

    registry = get_registry()
    entry = registry.annotation_types.get(name)
    if entry is None:
        return without(f"no installed family owns annotation type {name!r}; no assignment table")
    reward = registry.reward_ids.get(rid)
    if reward is None or reward.annotation_type != name or rid != entry.current_reward_id:
        why = registry.not_current_message(rid) or f"reward id {rid!r} does not score {name!r}"
        return without(f"the scorer gives annotation_reward 0: {why}; no assignment table")
    if reward.explain is None:
        return without(
            f"the plugin {reward.plugin!r} that scores {rid!r} has no explain capability "
            "(trace_explain_annotation); no assignment table"
        )
    try:
        target = entry.parse(annotation_type=name, value=instance.annotation_gt.value)
    except Exception as exc:
        return without(f"the target does not parse as {name}: {_error(exc)}")
    raw, literal_left = predicted_annotation(response, _keys(options["trace_reward_mode"]))
    prediction: Any = None
    if raw is None:
        lines.append("  no annotation predicted: every target is unmatched")
    else:
        try:
            with literal_budget(literal_left):  # what the extraction left, as when scoring
                prediction = entry.parse(annotation_type=name, value=raw)
        except Exception as exc:  # hostile model output
            lines.append(f"  the prediction does not parse as {name}: {_error(exc)} ({show_value(raw)})")
    context = scoring_context(instance.scoring_kwargs() if scoring_kwargs is None else scoring_kwargs, options)
    try:
        explanation = reward.explain(reward_id=rid, prediction=prediction, target=target, context=context)
    except Exception as exc:  # a limit hit while matching, or a bug in the family
        return without(f"the plugin {reward.plugin!r} could not explain {rid!r}: {_error(exc)}")
    if not isinstance(explanation, AnnotationExplanation):
        return without(
            f"the plugin {reward.plugin!r} returned {show_value(explanation, 60)} instead of an "
            f"AnnotationExplanation for {rid!r}; no assignment table"
        )
    try:
        lines += _table(explanation, context)
    except Exception as exc:  # never reached with the safe formatters; a report must not crash
        lines.append(f"  the explanation could not be shown: {_error(exc)}")
    return AnnotationView(name, rid, tuple(lines), explanation, context)


def _error(exc: BaseException) -> str:
    """One line naming an exception a family raised (its message alone for a parse error)."""
    try:
        text = str(exc) if isinstance(exc, AnnotationParseError) else f"{type(exc).__name__}: {exc}"
    except Exception:
        text = type(exc).__name__
    text = text.replace("\n", "\\n")
    return text if len(text) <= SHOW_ERROR_CHARS else text[:SHOW_ERROR_CHARS] + "..."


def metric_name(metric: Any) -> str:
    """How the report names a pair's similarity: ``IoU`` for ``iou``, else the family's metric."""
    text = metric if isinstance(metric, str) and metric else "similarity"
    return "IoU" if text.lower() == "iou" else plain(text, 24)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else []


def _table(explanation: AnnotationExplanation, context: ScoringContext) -> list[str]:
    metric = metric_name(explanation.metric)
    line = f"  {plain(explanation.method, 80)}; {metric}"
    if metric != "IoU":
        line += f", half-life {context.half_life_px:g} px"
    lines = [line]
    rows = [("prediction", "", "target", "", metric)]
    for pair in _items(explanation.pairs):
        pred, target = getattr(pair, "prediction", None), getattr(pair, "target", None)
        rows.append((
            item_name("P", getattr(pred, "label", "?")), show_value(getattr(pred, "value", None)),
            item_name("T", getattr(target, "label", "?")), show_value(getattr(target, "value", None)),
            show_number(getattr(pair, "similarity", None)),
        ))  # fmt: skip
    for item in _items(explanation.unmatched_predictions):
        rows.append(
            (item_name("P", getattr(item, "label", "?")), show_value(getattr(item, "value", None)), "(unmatched)", "", "0")
        )
    for item in _items(explanation.unmatched_targets):
        rows.append(("(none)", "", item_name("T", getattr(item, "label", "?")), show_value(getattr(item, "value", None)), "0"))
    if len(rows) == 1:
        lines.append("  no items on either side")
    else:
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for what, given in (("missing keys (in the target only)", explanation.missing_keys),
                        ("extra keys (in the prediction only)", explanation.extra_keys)):  # fmt: skip
        keys = _items(given)
        if keys:
            shown = ", ".join(show_value(k, SHOW_KEY_CHARS) for k in keys[:SHOW_KEYS])
            more = f" and {len(keys) - SHOW_KEYS} more" if len(keys) > SHOW_KEYS else ""
            lines.append(f"  {what}: {shown}{more}")
    if explanation.formula:
        lines.append(f"  formula: {plain(explanation.formula, SHOW_CHARS)}")
    return lines


def _annotation(
    response: str, instance: TraceInstance, options: Mapping[str, Any], scores: Mapping[str, float], out: list[str]
) -> AnnotationView:
    view = explain_annotation(response, instance, options)
    out += ["", f"Annotation ({view.annotation_type})"]
    out += view.lines
    if view.explanation is not None:
        reward = getattr(view.explanation.score, "reward", None)
        if not (isinstance(reward, (int, float)) and float(reward) == scores["annotation_reward"]):
            out.append(
                f"  note: the scorer reported annotation_reward {scores['annotation_reward']:.4g} but the explanation "
                f"gives {show_number(reward)}: the family's explain and score capabilities disagree"
            )
        out += [f"  note: {note}" for note in frame_check(view)]
    return view


def frame_check(view: AnnotationView) -> list[str]:
    """Notes on explained items outside the image frame (none without an image size or a draw capability)."""
    size = view.context.image_size if view.context is not None else None
    entry = get_registry().annotation_types.get(view.annotation_type)
    if view.explanation is None or size is None or entry is None or entry.draw is None:
        return []
    draw = entry.draw

    def draw_item(value: Any) -> Any:
        return draw(annotation_type=view.annotation_type, item=value)

    try:
        return explanation_notes(view.explanation, draw_item, owner=entry.plugin, size=size)
    except CannotDraw:  # said when drawing is asked for (--png); the text report stays as it is
        return []


def _reward(scores: Mapping[str, float]) -> list[str]:
    keys = ("overall", "task_reward_raw", "answer_reward", "annotation_reward", "format", "json_found", "annotation_parse_ok")
    diag = [
        k
        for k in scores
        if k.startswith("annotation_")
        and not k.startswith("annotation_type_")
        and k not in ("annotation_reward", "annotation_parse_ok")
    ]
    lines = ["", "Reward"]
    lines.append("  " + ", ".join(f"{k} {scores[k]:.4g}" for k in keys))
    if diag:
        lines.append("  " + ", ".join(f"{k.removeprefix('annotation_')} {scores[k]:.4g}" for k in diag))
    return lines


def _draw(args: argparse.Namespace, instance: TraceInstance, view: AnnotationView, scores: Mapping[str, float]) -> int:
    if view.explanation is None:
        return _fail(f"nothing to draw: {view.problem}", EXIT_BAD_INSTANCE)
    registry = get_registry()
    entry = registry.annotation_types[view.annotation_type]
    owner = f"the plugin {entry.plugin!r} that owns {view.annotation_type!r}"
    if entry.draw is None:
        return _fail(f"{owner} has no draw capability (trace_draw_annotation); nothing drawn", EXIT_BAD_INSTANCE)
    image = args.image or getattr(instance, "image", None)
    if image and not Path(image).is_absolute() and not Path(image).exists() and args.instance != "-":
        image = str(Path(args.instance).parent / image)  # relative to the instance file

    draw = entry.draw

    def draw_item(value: Any) -> Any:
        return draw(annotation_type=view.annotation_type, item=value)

    header = [
        f"{instance.id}: {view.annotation_type} ({view.reward_id})",
        *reward_breakdown(scores, reward_id=view.reward_id, formula=view.explanation.formula),
    ]
    metric = metric_name(view.explanation.metric)
    half_life = view.context.half_life_px if view.context is not None and metric != "IoU" else None
    try:
        picture = render(
            args.png, view.explanation, draw_item, owner=owner, size=view.context.image_size if view.context else None,
            image_path=image, header=header, metric=metric, half_life=half_life,
        )  # fmt: skip
    except DrawingUnavailable as exc:
        return _fail(str(exc))
    except CannotDraw as exc:
        return _fail(str(exc), EXIT_BAD_INSTANCE)
    except OSError as exc:
        return _fail(f"cannot draw: {exc}", EXIT_BAD_INSTANCE)
    area = f"{picture.area[0]}x{picture.area[1]} at {picture.origin}, scale x{picture.scale}"
    print(f"\nwrote {args.png} ({picture.width}x{picture.height}, {picture.format}; image area {area})")
    printed = set(frame_check(view))  # already in the text report
    for note in picture.notes:
        if note not in printed:
            print(f"  note: {note}")
    return EXIT_OK
