"""The scorer options every scoring subcommand accepts, checked before any input is read."""

from __future__ import annotations

import argparse
from typing import Any

from trace_tasks.scoring import options_from


def int_at_least(minimum: int) -> Any:
    """An argparse ``type`` for whole numbers >= ``minimum`` (1: "a positive integer")."""
    wanted = "a positive integer" if minimum == 1 else f"a whole number >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    return parse


def add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--mode``, the weights, ``--formula``, ``--point-half-life-px``, ``--recovery`` and ``--format-accept-answer-tag``."""
    group = parser.add_argument_group("scorer options (as in score_trace_response)")
    group.add_argument(
        "--mode",
        default="answer_and_annotation",
        help="trace_reward_mode: answer (alias answer_only) or answer_and_annotation (alias annotation); default %(default)s",
    )
    group.add_argument("--answer-weight", type=float, default=0.5, help="answer_weight (default %(default)s)")
    group.add_argument("--annotation-weight", type=float, default=0.5, help="annotation_weight (default %(default)s)")
    group.add_argument(
        "--formula",
        default="gated",
        help="trace_annotation_reward_formula: gated (a wrong answer earns nothing) or additive; default %(default)s",
    )
    group.add_argument(
        "--format-weight", type=float, default=0.0, help="format_weight in [0, 1], blended into overall (default %(default)s)"
    )
    group.add_argument(
        "--point-half-life-px",
        type=float,
        default=None,
        help="point_half_life_px: overrides the image-size policy for points and segments",
    )
    group.add_argument(
        "--recovery",
        default="lenient",
        metavar="POLICY",
        help=(
            "trace_recovery: lenient (the contract's recovery), outside_think (recovery and atomic answers ignore "
            "<think>...</think>) or final_only (the final block or nothing); default %(default)s"
        ),
    )
    group.add_argument(
        "--format-accept-answer-tag",
        action="store_true",
        help="format_accept_answer_tag: a response ending with <answer>OBJECT</answer> gets format 1 (opt-in)",
    )


def scoring_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword options for the scorer; raises :class:`~trace_tasks.errors.OptionError` (a ``ValueError``) naming a bad one."""
    options = {
        "trace_reward_mode": args.mode,
        "answer_weight": args.answer_weight,
        "annotation_weight": args.annotation_weight,
        "format_weight": args.format_weight,
        "trace_annotation_reward_formula": args.formula,
        "point_half_life_px": args.point_half_life_px,
        "trace_recovery": args.recovery,
        "format_accept_answer_tag": bool(args.format_accept_answer_tag),
    }
    options_from(options)  # an OptionError names a bad one before any input is read
    return options
