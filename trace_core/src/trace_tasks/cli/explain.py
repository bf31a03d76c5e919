"""``trace-tasks explain``: why one response got its reward.

The instance is validated first: what ``trace-tasks validate`` refuses is
refused here (exit 1, one line), since its reward would mislead. The response
is then scored once through the scoring pipeline with a trail
(:meth:`~trace_tasks.CompiledInstance.explain`), and everything printed is
read off that one run: the extraction (the final block, which candidate
scoring used, the format diagnostics), the answer comparison (both normalized
forms), and the annotation as the family that scores the contract's reward id
explained it while scoring (its ``trace_explain_annotation`` capability): the
pairing method and metric, a table of the pairs with their similarity, the
unmatched items on either side, missing and extra map keys, and the reward's
formula. Nothing here scores or matches anything itself; a family without the
capability gets one line saying so. ``--json`` prints the same as one object
whose ``result`` is exactly ``score_trace_response``'s dict.
Whatever a family returns is shown through safe formatters and cannot crash
the report.

When the image size is known, the annotation section notes items outside
the image frame, found through the type owner's ``trace_draw_annotation``
capability. The run also scored the parsed prediction in every other reading
(each declared coordinate frame, ``[x, y, w, h]``, a model-native shape), and
the report lists each mismatch :func:`~trace_tasks.scoring.row_mismatches`
names (:mod:`trace_tasks.cli._views.mismatches`): a reading that scores
clearly better with what it would have scored and the flag that declares it,
an object recovered from inside ``<think>``, and ``<answer>`` tags that
``final_only`` read but the format refused. Under a declared
``--prediction-frame`` the prediction is shown as written and in pixels (the
one scored, and drawn by ``--png``). A prediction that does not parse but
has a model-native shape its owner knows (``trace_native_annotation``) gets a
line naming the shape found and the one the contract expects, and what it
would have scored written that way. A run with an opt-in response policy
(``--recovery``, ``--format-accept-answer-tag``) says so in the extraction.

With ``--png`` (or a ``.jpg``/``.jpeg`` name) it also draws the explanation's
items through that capability (Pillow, ``trace-core[viz]``; see
:mod:`trace_tasks.cli._views.drawing`), under a header with the reward breakdown of
:mod:`trace_tasks.cli._views.breakdown`.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from trace_tasks.cli._options import add_scoring_options, scoring_options
from trace_tasks.cli._views.breakdown import reward_breakdown
from trace_tasks.cli._views.drawing import CannotDraw, DrawingUnavailable, image_problem, picture_format, render
from trace_tasks.cli._views.explanation import candidate_used, plain, show_value, surrogate_note, without_surrogates
from trace_tasks.cli._views.mismatches import mismatch_line, written_json
from trace_tasks.cli._views.sections import (
    SHOW_CHARS,
    Explained,
    explain_response,
    frame_check,
    listed,
    metric_name,
)
from trace_tasks.data import CompiledInstance, compile_instance
from trace_tasks.errors import InstanceError, one_line
from trace_tasks.runs import STDIO, dumps, find_shards, instance_part, open_binary, open_lines, read_lines
from trace_tasks.scoring import ANNOTATION_ONLY, UNPARSED, canonical_text, options_from, row_mismatches

EXIT_OK, EXIT_BAD_INSTANCE, EXIT_USAGE = 0, 1, 2
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
    parser.add_argument(
        "--instance",
        required=True,
        metavar="FILE",
        help="instance file, or a combined score input (.jsonl, .jsonl.gz, .parquet, '-'): as score's INPUT",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--line", type=int, metavar="N", help="1-based line number of the instance")
    where.add_argument("--id", metavar="ID", help="id of the instance")
    parser.add_argument("--response", metavar="TEXT|@FILE", help="the response text, or @FILE to read it (@- for stdin)")
    parser.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="COLUMN",
        help="a column of the user's that is no instance field (as score --keep): left out of the instance (repeatable)",
    )
    parser.add_argument(
        "--png",
        metavar="FILE",
        help="draw targets and predictions to FILE: PNG for .png, JPEG for .jpg/.jpeg (needs trace-core[viz])",
    )
    parser.add_argument(
        "--image", metavar="PATH", help="draw over this image (default: the instance's 'image', else a blank canvas)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the text: 'result' (exactly score_trace_response's dict) and 'explanation'",
    )
    add_scoring_options(parser)
    parser.set_defaults(func=run)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"trace-tasks explain: error: {message}", file=sys.stderr)
    return code


def _find_row(path: str, line_no: int | None, row_id: str | None) -> tuple[int, Any]:
    shards = [] if path == STDIO else find_shards(path)
    if len(shards) > 1:
        raise LookupError(f"{path} names {len(shards)} files: give --instance one of them")
    if shards and shards[0].format == "parquet":
        with open_lines(shards[0]) as (lines, _):
            return _pick(lines, path, line_no, row_id)
    with open_binary(path) as fh:
        return _pick(read_lines(fh), path, line_no, row_id)


def _pick(lines: Any, path: str, line_no: int | None, row_id: str | None) -> tuple[int, Any]:
    for line in lines:
        if line_no is not None and line.number == line_no:
            if line.error is not None:
                raise LookupError(line.error)
            return line.number, line.value
        if row_id is not None and isinstance(line.value, Mapping) and line.value.get("id") == row_id:
            return line.number, line.value
    raise LookupError(f"no line {line_no} in {path}" if line_no is not None else f"no instance with id {row_id!r} in {path}")


def _read_response(arg: str | None, row: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The response text, and notes on how it was read (invalid UTF-8 in an ``@FILE``)."""
    if arg is None:
        response = row.get("response")
        if not isinstance(response, str):
            raise LookupError("no --response given and the line has no 'response' string")
        return response, []
    if arg.startswith("@"):
        source = arg[1:]
        if source == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:  # a text-only stand-in: already decoded
                return sys.stdin.read(), []
            return decode_response(stdin.read(), "standard input")
        return decode_response(Path(source).read_bytes(), source)
    return arg, []


def decode_response(data: bytes, name: str) -> tuple[str, list[str]]:
    """A response file's bytes as text: invalid UTF-8 is replaced by U+FFFD, and a note says so."""
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        note = (
            f"{name} is not valid UTF-8 (the first invalid byte, 0x{data[exc.start]:02x}, is at byte {exc.start}): "
            "each invalid byte sequence was read as U+FFFD (the replacement character), and the response "
            "so read is what is explained and scored"
        )
        return text, [note]


def run(args: argparse.Namespace) -> int:
    try:
        options = scoring_options(args)
        opts = options_from(options)
        if args.png:
            picture_format(args.png)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        number, row = _find_row(args.instance, args.line, args.id)
        if not isinstance(row, Mapping):
            return _fail(f"line {number} is not a JSON object", EXIT_BAD_INSTANCE)
        response, notes = _read_response(args.response, row)
    except (LookupError, OSError) as exc:
        return _fail(str(exc))
    keep = tuple(c.strip() for value in args.keep for c in value.split(",") if c.strip())
    data, _ = instance_part(row, keep)  # a combined line's other columns are no part of the instance, as in score
    data.pop("response", None)
    try:
        compiled = compile_instance(data, record=f"{args.instance}:{number}", trace_reward_mode=opts.trace_reward_mode)
    except InstanceError as exc:  # what validate refuses is not explained: its reward would mislead
        return _fail(str(exc), EXIT_BAD_INSTANCE)
    explained = explain_response(response, compiled, opts)
    explained = attrs.evolve(explained, notes=tuple(notes))
    if args.json:
        # Strict JSON; ASCII-escaped when the response holds lone surrogates, which no UTF-8 stream can write.
        print(dumps(explanation_json(explained)))
    else:
        header = _header(args.instance, number, compiled) + [f"  note: {note}" for note in notes]
        print("\n".join(without_surrogates(line)[0] for line in header + list(explained.lines)))
    if args.png:
        return _draw(args, compiled, explained)
    return EXIT_OK


def _header(path: str, number: int, instance: CompiledInstance) -> list[str]:
    size = list(instance.image_size) if instance.image_size else "not given"
    return [
        f"instance {instance.data.get('id')!r} ({path} line {number})",
        f"  answer type {instance.answer_type or 'none (no answer_gt)'}, annotation type {instance.annotation_type} "
        f"(reward id {instance.reward_entry.reward_id}), image size {size}",
    ]


def _draw(args: argparse.Namespace, instance: CompiledInstance, explained: Explained) -> int:
    explanation, context = explained.explanation, explained.context
    if explanation is None:
        return _fail(f"nothing to draw: {explained.problem or 'no explanation'}", EXIT_BAD_INSTANCE)
    entry = instance.annotation_entry
    owner = f"the plugin {entry.plugin!r} that owns {entry.name!r}"
    if entry.draw is None:
        return _fail(f"{owner} has no draw capability (trace_draw_annotation); nothing drawn", EXIT_BAD_INSTANCE)
    image = args.image or instance.data.get("image")
    if image and not Path(image).is_absolute() and not Path(image).exists() and args.instance != "-":
        image = str(Path(args.instance).parent / image)  # relative to the instance file
    if image and not args.image:  # what the report draws, the instance's image is held to
        problem = image_problem(image)
        if problem:
            return _fail(f"cannot draw over the instance's image {image}: it {problem}; give --image PATH", EXIT_BAD_INSTANCE)

    draw = entry.draw

    def draw_item(value: Any) -> Any:
        return draw(annotation_type=entry.name, item=value)

    header = [
        f"{instance.data.get('id')}: {entry.name} ({explained.reward_id})",
        *reward_breakdown(explained.result, reward_id=explained.reward_id, formula=explanation.formula),
    ]
    metric = metric_name(explanation.metric)
    half_life = context.half_life_px if context is not None and metric != "IoU" else None
    try:
        picture = render(
            args.png, explanation, draw_item, owner=owner, size=context.image_size if context else None,
            image_path=image, header=header, metric=metric, half_life=half_life, hint=explained.hint,
        )  # fmt: skip
    except DrawingUnavailable as exc:
        return _fail(str(exc))
    except CannotDraw as exc:
        return _fail(str(exc), EXIT_BAD_INSTANCE)
    except OSError as exc:
        return _fail(f"cannot draw: {exc}", EXIT_BAD_INSTANCE)
    area = f"{picture.area[0]}x{picture.area[1]} at {picture.origin}, scale x{picture.scale}"
    print(f"\nwrote {args.png} ({picture.width}x{picture.height}, {picture.format}; image area {area})")
    printed = set(frame_check(explained))  # already in the text report
    for note in picture.notes:
        if note not in printed:
            print(f"  note: {without_surrogates(note)[0]}")
    return EXIT_OK


# --------------------------------------------------------------------------- --json


def _json_value(value: Any, depth: int = 0) -> Any:
    """A value as JSON can hold it: tuples as lists, non-finite floats and odd objects as their text."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**63 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth > 64:
        return "..."
    if isinstance(value, Mapping):
        return {str(key): _json_value(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(item, depth + 1) for item in value]
    return show_value(value)


def _item(item: Any) -> dict[str, Any]:
    return {"label": _json_value(getattr(item, "label", None)), "value": _json_value(getattr(item, "value", None))}


def _answer_json(explained: Explained) -> dict[str, Any] | None:
    """The answer step of ``explain --json``; ``None`` in the ``annotation_only`` mode (no answer is read)."""
    trail, instance = explained.trail, explained.instance
    options = trail.options
    if instance.answer_spec is None or (options is not None and options.trace_reward_mode == ANNOTATION_ONLY):
        return None
    reads_json = instance.answer_spec.reads_json_strings
    expected = instance.data["answer_gt"]["value"]
    return {
        "predicted": _json_value(trail.predicted_answer),
        "predicted_normalized": canonical_text(trail.predicted_answer, reads_json_strings=reads_json),
        "expected": _json_value(expected),
        "expected_normalized": canonical_text(expected, reads_json_strings=reads_json),
        "match": explained.result["answer_reward"] == 1.0,
    }


def explanation_json(explained: Explained) -> dict[str, Any]:
    """``{"result": ..., "explanation": ...}``: the scorer's dict and what the same run saw, for ``explain --json``."""
    trail, instance = explained.trail, explained.instance
    ext = trail.extraction
    assert ext is not None
    annotation: dict[str, Any] = {
        "type": instance.annotation_type,
        "reward_id": explained.reward_id,
        "predicted": _json_value(trail.prediction),
        "parsed": trail.prediction is not None and trail.parsed_prediction is not UNPARSED,
        "parse_error": one_line(trail.parse_errors[0]) if trail.parse_errors else None,
        "image_size": _json_value(trail.context.image_size) if trail.context else None,
        "half_life_px": trail.context.half_life_px if trail.context else None,
        "problem": trail.problem or None,
        "native_format": None
        if trail.native is None
        else {
            "found": plain(str(trail.native.found), SHOW_CHARS),
            "expected": plain(str(trail.native.expected), SHOW_CHARS),
            "converted_reward": trail.native_reward,
        },
        "readings": dict(trail.readings),
        **written_json(trail),
        "mismatches": [
            {"kind": m.kind, "reward": m.reward, "scored": m.scored, "line": mismatch_line(m)} for m in row_mismatches(trail)
        ],
    }
    explanation = trail.explanation
    if explanation is not None:
        annotation.update(
            method=plain(explanation.method, SHOW_CHARS),
            metric=plain(explanation.metric, 24),
            pairs=[
                {
                    "prediction": _item(getattr(pair, "prediction", None)),
                    "target": _item(getattr(pair, "target", None)),
                    "similarity": _json_value(getattr(pair, "similarity", None)),
                }
                for pair in listed(explanation.pairs)
            ],
            unmatched_predictions=[_item(item) for item in listed(explanation.unmatched_predictions)],
            unmatched_targets=[_item(item) for item in listed(explanation.unmatched_targets)],
            missing_keys=[_json_value(key) for key in listed(explanation.missing_keys)],
            extra_keys=[_json_value(key) for key in listed(explanation.extra_keys)],
            formula=plain(explanation.formula, SHOW_CHARS) if explanation.formula else "",
        )
    return {
        "result": explained.result,
        "notes": [*explained.notes, *([surrogate_note(explained.surrogates, in_json=True)] if explained.surrogates else [])],
        "explanation": {
            "extraction": {
                "final_block": ext.format.answer_block,
                "candidate": candidate_used(ext),
                "structure_ok": ext.format.structure_ok,
                "json_ok": ext.format.json_ok,
                "schema_ok": ext.format.schema_ok,
                "format": ext.format.format,
            },
            "answer": _answer_json(explained),
            "annotation": annotation,
        },
    }
