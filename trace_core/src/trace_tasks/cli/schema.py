"""``trace-tasks schema``: the final object of a contract, as a JSON Schema or as prompt text.

``trace-tasks schema --answer-type T --annotation-type U [--mode M]`` prints
:func:`trace_tasks.response_json_schema` (draft 2020-12, for a constrained
decoder such as vLLM's structured outputs); ``--instructions`` prints
:func:`trace_tasks.format_instructions` instead, the text a prompt carries.
``--instance FILE --id ID`` takes the types, and a map type's role keys,
from that instance (the ``instance=`` argument of both functions). A type
whose owner declares no schema is left unconstrained, and a note on
standard error says so. Nothing is scored.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from trace_tasks.cli._options import add_scoring_options
from trace_tasks.runs import EXIT_OK, EXIT_USAGE, open_binary, read_lines
from trace_tasks.scoring import format_instructions, response_json_schema


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of the final object (or, with --instructions, the prompt text asking for it)",
        description=(
            "Print the JSON Schema (draft 2020-12) of the final object a response must end with, for these answer "
            "and annotation types and output mode: exactly its keys, additionalProperties false, each value's schema "
            "from its type's owner. With --instructions, print the prompt text asking for that object instead."
        ),
    )
    parser.add_argument("--answer-type", metavar="T", help="answer_gt.type (integer, string, ...); required without --instance")
    parser.add_argument(
        "--instance", metavar="FILE", help="take the types and a map type's role keys from the instance --id ID of FILE"
    )
    parser.add_argument("--id", metavar="ID", help="with --instance: the id of the instance")
    parser.add_argument(
        "--annotation-type",
        metavar="U",
        help="annotation_gt.type (bbox_set, point, ...); required unless --mode is answer",
    )
    parser.add_argument(
        "--mode",
        default="answer_and_annotation",
        help="trace_reward_mode: answer (alias answer_only) or answer_and_annotation (alias annotation); default %(default)s",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="print the prompt text (format_instructions) instead of the schema"
    )
    parser.add_argument(
        "--format-accept-answer-tag",
        action="store_true",
        help="with --instructions: ask for the object inside <answer>...</answer> (for format_accept_answer_tag)",
    )
    # The frame the model is asked to write: bounds in the schema, the range (and y-first order) in the instructions.
    add_scoring_options(parser, only=("prediction_frame", "resize"))
    parser.set_defaults(func=run)


def _instance(path: str, row_id: str) -> Mapping[str, Any]:
    with open_binary(path) as fh:
        for line in read_lines(fh):
            if isinstance(line.value, Mapping) and line.value.get("id") == row_id:
                return line.value
    raise LookupError(f"no instance with id {row_id!r} in {path}")


def run(args: argparse.Namespace) -> int:
    kwargs: dict[str, Any] = {
        "answer_type": args.answer_type,
        "annotation_type": args.annotation_type,
        "trace_reward_mode": args.mode,
        "prediction_frame": args.prediction_frame,
        "resize": args.resize,
    }
    try:
        if (args.instance is None) != (args.id is None) or (args.instance is None and args.answer_type is None):
            raise ValueError("give --answer-type (and --annotation-type), or --instance FILE with --id ID")
        if args.instance is not None:
            kwargs["instance"] = _instance(args.instance, args.id)
        if args.instructions:
            print(format_instructions(**kwargs, format_accept_answer_tag=args.format_accept_answer_tag))
            return EXIT_OK
        schema = response_json_schema(**kwargs)
    except (ValueError, LookupError, OSError) as exc:  # the caller's mistake (a missing family is exit 1, in main)
        print(f"trace-tasks schema: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    note = schema.get("$comment")
    if note:
        print(f"trace-tasks schema: note: {note}", file=sys.stderr)
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return EXIT_OK
