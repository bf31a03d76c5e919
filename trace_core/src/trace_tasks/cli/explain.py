"""``trace-tasks explain``: why one response got its reward.

Prints the extraction (the final block, which candidate scoring used, the
format diagnostics), the answer comparison (both normalized forms), and for the
annotation a table of the assignment: each predicted item, its matched target
and their IoU or similarity, then the unmatched items on either side. With
``--png`` it also draws targets and predictions (Pillow, ``trace-core[viz]``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trace_tasks.cli._checks import instance_problems
from trace_tasks.cli._drawing import DrawingUnavailable, draw_png
from trace_tasks.cli._extraction_view import candidate_used, canonical_form, predicted_answer
from trace_tasks.cli._jsonl import open_binary, read_lines
from trace_tasks.cli._options import add_scoring_options, scoring_options
from trace_tasks.cli._pairs import Assignment, assignment, find_primitive
from trace_tasks.core.reward_scoring import evaluate_trace_response_format, score_trace_response
from trace_tasks.distance import half_life_px
from trace_tasks.extraction import ANSWER_AND_ANNOTATION_KEYS, ANSWER_KEYS
from trace_tasks.image_size import find_image_size
from trace_tasks.options import ANSWER, resolve_mode
from trace_tasks.plugins import get_registry
from trace_tasks.records import TraceInstance, TrainInstance, instance_from_dict
from trace_tasks.specs import ScoringContext

EXIT_OK, EXIT_BAD_INSTANCE, EXIT_USAGE = 0, 1, 2
SHOW_CHARS = 300


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
    parser.add_argument("--png", metavar="FILE", help="draw targets and predictions to FILE (needs trace-core[viz])")
    parser.add_argument("--image", metavar="PATH", help="draw over this image (default: the instance's 'image', else a blank canvas)")
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
    out: list[str] = []
    scores = score_trace_response(response=response, **instance.scoring_kwargs(), **options)
    out += _header(args.instance, number, instance)
    out += _extraction(response, options["trace_reward_mode"])
    out += _answer(response, instance, options["trace_reward_mode"], scores)
    table = _annotation(response, instance, options, out)
    out += _reward(scores)
    print("\n".join(out))
    if args.png:
        return _draw(args, instance, table, args.instance)
    return EXIT_OK


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
    lines.append(f"  final block: {_short(block) if block is not None else 'none (the response does not end with a fenced block or a balanced object)'}")
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


def _fmt_item(value: Any) -> str:
    return "[" + ", ".join(f"{v:g}" for v in value) + "]" if isinstance(value, tuple) else repr(value)


def _annotation(response: str, instance: TraceInstance, options: Mapping[str, Any], out: list[str]) -> Assignment | None:
    name = instance.annotation_gt.type.strip()
    out += ["", f"Annotation ({name})"]
    registry = get_registry()
    entry = registry.annotation_types.get(name)
    found = find_primitive(registry, name)
    if entry is None or found is None:
        out.append("  no installed family exposes a primitive for this type; no assignment table")
        return None
    prim, shape = found
    try:
        target = entry.parse(annotation_type=name, value=instance.annotation_gt.value)
    except Exception as exc:
        out.append(f"  the target does not parse: {exc}")
        return None
    _, payload = candidate_used(response, _keys(options["trace_reward_mode"]))
    prediction = payload.get("annotation") if isinstance(payload, Mapping) else None
    pred: Any = None
    if prediction is None:
        out.append("  no annotation predicted")
    else:
        try:
            pred = entry.parse(annotation_type=name, value=prediction)
        except Exception as exc:  # hostile model output
            out.append(f"  the prediction does not parse as {name}: {exc} ({_short(json.dumps(prediction, default=repr))})")
    size = find_image_size(instance.image_size, instance.metadata)
    ctx = ScoringContext(half_life_px(size, options["point_half_life_px"]), size)
    result = assignment(prim, shape, pred, target, ctx)
    metric = "IoU" if prim.metric == "iou" else "similarity"
    how = {"scalar": "one pair", "set": "Hungarian assignment", "sequence": "index-aligned", "map": "by key",
           "set_map": "by key, then Hungarian assignment"}[shape]
    out.append(f"  {how}; {metric}" + ("" if prim.metric == "iou" else f", half-life {ctx.half_life_px:g} px"))
    rows = [("prediction", "", "target", "", metric)]
    rows += [(f"P{p.pred.label}", _fmt_item(p.pred.value), f"T{p.target.label}", _fmt_item(p.target.value), f"{p.score:.4f}")
             for p in result.pairs]
    rows += [(f"P{i.label}", _fmt_item(i.value), "(unmatched)", "", "0") for i in result.unmatched_preds]
    rows += [("(none)", "", f"T{i.label}", _fmt_item(i.value), "0") for i in result.unmatched_targets]
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    for r in rows:
        out.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return result


def _reward(scores: Mapping[str, float]) -> list[str]:
    keys = ("overall", "task_reward_raw", "answer_reward", "annotation_reward", "format", "json_found", "annotation_parse_ok")
    diag = [k for k in scores if k.startswith("annotation_") and not k.startswith("annotation_type_")
            and k not in ("annotation_reward", "annotation_parse_ok")]
    lines = ["", "Reward"]
    lines.append("  " + ", ".join(f"{k} {scores[k]:.4g}" for k in keys))
    if diag:
        lines.append("  " + ", ".join(f"{k.removeprefix('annotation_')} {scores[k]:.4g}" for k in diag))
    return lines


def _draw(args: argparse.Namespace, instance: TraceInstance, table: Assignment | None, instance_path: str) -> int:
    if table is None:
        return _fail("nothing to draw: the annotation has no parsed prediction and target", EXIT_BAD_INSTANCE)
    image = args.image or getattr(instance, "image", None)
    if image and not Path(image).is_absolute() and not Path(image).exists() and instance_path != "-":
        image = str(Path(instance_path).parent / image)  # relative to the instance file
    size = find_image_size(instance.image_size, instance.metadata)
    try:
        width, height = draw_png(args.png, table, size=size, image_path=image)
    except DrawingUnavailable as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot draw: {exc}")
    print(f"\nwrote {args.png} ({width}x{height})")
    return EXIT_OK
