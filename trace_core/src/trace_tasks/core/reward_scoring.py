"""Generic trace scoring: one response against an instance's typed ground truth.

``score_trace_response`` is the public entry point (docs/contracts.md §2).
It is the lenient, low-level scorer: it validates the options (cached),
prepares the raw ground truth for this call (ground truth it cannot use gives
zero rewards and diagnostic flags, never an exception) and runs the one
scoring pipeline, :func:`trace_tasks.scoring.run`. Data-facing tools validate
instances first and run the same pipeline on a target prepared once
(:func:`trace_tasks.compile_instance`), so both give the same dict.
"""

from __future__ import annotations

import marshal
from typing import Any

from trace_tasks.errors import OptionError, ResponseTypeError
from trace_tasks.limits import MAX_ANSWER_DEPTH
from trace_tasks.plugins import get_registry
from trace_tasks.reading import ANSWER_AND_ANNOTATION_KEYS, extract, think_text
from trace_tasks.scoring import (
    CORE_RESULT_KEYS,
    DEFAULT_RESIZE,
    PIXEL,
    declared_model_size,
    document_options,
    frame_problem,
    holds_exact_values,
    prepare_target,
    required_keys,
    resolve_answer_tag,
    resolve_mode,
    resolve_options,
    resolve_recovery,
    result_keys,
    run,
)

__all__ = [
    "CORE_RESULT_KEYS",
    "check_response",
    "evaluate_trace_response_format",
    "extract_trace_prediction",
    "plain",
    "result_keys",
    "score_trace_response",
]


def check_response(response: Any) -> str:
    """``response`` as an exact ``str``; else :class:`~trace_tasks.errors.ResponseTypeError` (a ``TypeError``).

    A ``str`` subclass becomes the plain string it holds (its own ``strip`` or
    ``__eq__`` are not called), as the compiled build would read it.
    """
    if type(response) is str:
        return response
    if not isinstance(response, str):
        raise ResponseTypeError(f"response must be a str (the model's decoded text), got {type(response).__name__}")
    return str.__str__(response)


# --- caller values as plain values -------------------------------------------------------------

_PLAIN_SCALARS = frozenset((str, int, float, bool, type(None)))
#: Deeper than this a value is left as it is: no answer is compared that deep (``MAX_ANSWER_DEPTH``)
#: and no annotation parses, so nothing there is read by either build.
_PLAIN_DEPTH = MAX_ANSWER_DEPTH + 4


def plain(value: Any) -> Any:
    """``value`` with every subclass of ``str``, ``int``, ``float``, ``dict``, ``list`` and ``tuple`` replaced by the plain value it holds.

    The compiled build reads such subclasses at its typed boundaries as the
    plain values they hold (a ``dict`` subclass's own ``__getitem__``, a ``str``
    subclass's own ``strip`` or ``__eq__`` are not called), the pure build would
    call their methods: normalising them here, before either build looks, gives
    both the same result (docs/compiled.md). The contents are read the same
    way, through the base types' own methods. ``value`` itself is returned when
    it holds no subclass (the usual case: one pass, no copy); shared and
    cyclic containers are visited once. Anything else (numpy values, other
    mappings) is left as it is: the scorer reads those the same way in both builds.
    """
    if type(value) in _PLAIN_SCALARS:
        return value
    try:  # C speed: marshal writes exact built-in types only, a subclass is "unmarshallable"
        marshal.dumps(value)  # the current version writes a shared or cyclic container once
        return value
    except (ValueError, TypeError, OverflowError, RecursionError):  # another type, or nested too deep: look
        pass
    if _holds_no_subclass(value):
        return value
    return _plain(value, 0, {})


_BUILTINS = (str, int, float, dict, list, tuple)


def _holds_no_subclass(value: Any) -> bool:
    """Whether no subclass of the built-in types is reachable in ``value`` (through exact dicts, lists and tuples).

    The fast check of :func:`plain`: a list or tuple of scalars is one C-speed pass over its
    item types. Each container is visited once (a cycle or a shared child ends there).
    """
    stack = [value]
    visited: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list or kind is tuple:
            if not _PLAIN_SCALARS.issuperset(map(type, item)) and id(item) not in visited:
                visited.add(id(item))
                stack.extend(item)
        elif kind is dict:
            if id(item) not in visited:
                visited.add(id(item))
                if not _PLAIN_SCALARS.issuperset(map(type, item)):
                    stack.extend(item)
                if not _PLAIN_SCALARS.issuperset(map(type, item.values())):
                    stack.extend(item.values())
        elif kind not in _PLAIN_SCALARS and isinstance(item, _BUILTINS):
            return False
    return True


def _plain(value: Any, depth: int, seen: dict[int, Any]) -> Any:
    kind = type(value)
    if kind in _PLAIN_SCALARS or depth > _PLAIN_DEPTH:
        return value
    if (kind is list or kind is tuple) and _PLAIN_SCALARS.issuperset(map(type, value)):
        return value  # the common leaf: a box, a point, a list of strings
    done = seen.get(id(value))
    if done is not None:
        return done
    seen[id(value)] = value  # a cycle back to this container sees it unchanged
    result: Any = value
    if isinstance(value, dict):
        stored = list(dict.items(value))
        pairs = [(_plain(k, depth + 1, seen), _plain(v, depth + 1, seen)) for k, v in stored]
        if kind is not dict or any(a[0] is not b[0] or a[1] is not b[1] for a, b in zip(pairs, stored, strict=True)):
            result = dict(pairs)
    elif isinstance(value, (list, tuple)):
        raw = list.copy(value) if isinstance(value, list) else list(tuple.__iter__(value))
        items = [_plain(item, depth + 1, seen) for item in raw]
        if (kind is not list and kind is not tuple) or any(a is not b for a, b in zip(items, raw, strict=True)):
            result = items if isinstance(value, list) else tuple(items)
    elif isinstance(value, str):
        result = str.__str__(value)
    elif isinstance(value, float):
        result = float.__float__(value)
    elif isinstance(value, int):  # bool cannot be subclassed: type(value) is bool was returned above
        result = int.__int__(value)
    seen[id(value)] = result
    return result


@document_options
def score_trace_response(
    *,
    response: str,
    answer_gt: Any,
    annotation_gt: Any,
    reward_contract: Any,
    trace_reward_mode: Any = "answer_and_annotation",
    answer_weight: float = 0.5,
    annotation_weight: float = 0.5,
    format_weight: float = 0.0,
    trace_annotation_reward_formula: Any = "gated",
    point_half_life_px: Any = None,
    answer_relative_tolerance: Any = 0.05,
    image_size: Any = None,
    image_sizes: Any = None,
    metadata: Any = None,
    extra_info: Any = None,
    trace_recovery: Any = "lenient",
    format_accept_answer_tag: Any = False,
    prediction_frame: Any = "pixel",
    resize: Any = DEFAULT_RESIZE,
    annotation_native: Any = False,
    tool_call: Any = None,
    model_image_size: Any = None,
) -> dict[str, float]:
    """Score one model response; returns a flat ``dict[str, float]`` (docs/contracts.md §7).

    The scorer options are the fields of :class:`~trace_tasks.ScoringOptions`, each
    a keyword here with the table's default (listed below, from the table);
    ``trace_recovery`` and ``format_accept_answer_tag`` are opt-in departures from
    the response contract (docs/contracts.md §3.7): the defaults are the contract.
    To score with a :class:`~trace_tasks.ScoringOptions` record, pass
    ``**options.keywords()`` (or use :meth:`~trace_tasks.CompiledInstance.score`,
    which takes the record itself). ``image_size``, ``image_sizes``,
    ``metadata`` and ``extra_info`` are the size sources, searched in that order.

    ``prediction_frame`` declares the coordinate frame the model writes
    (``"pixel"``, ``"rel1000"``, ``"rel999"``, ``"rel1"``, ``"resized"``,
    ``"rel1000_yx"``; docs/contracts.md, "Coordinate frames"): the prediction is
    converted to pixels of the image before it is scored (targets stay in
    pixels). A frame other than ``pixel`` needs the image size; ``resized``
    reads the model's input size from ``model_image_size`` ``[width, height]``,
    else computes it with Qwen's ``smart_resize`` under ``resize``
    (``{"factor": 28, "min_pixels": 3136, "max_pixels": 1003520}`` by default).
    ``annotation_native=True`` reads a model-native annotation (Qwen-VL's
    ``[{"bbox_2d": [...], "label": ...}]``) as the annotation.

    Raises only for caller mistakes, each a :class:`~trace_tasks.errors.TraceTasksError`:
    :class:`~trace_tasks.errors.OptionError` (also a ``ValueError``) for an
    invalid option, :class:`~trace_tasks.errors.ResponseTypeError` (also a
    ``TypeError``) for a non-string response, and
    :class:`~trace_tasks.errors.MissingFamilyError` when an official annotation
    type's family is not installed or is disabled (answer-and-annotation mode;
    the message names the package to install or the variable to change).
    """
    # Subclasses of the built-in types become the plain values they hold first (plain), so the
    # pure and the compiled build score the same values (docs/compiled.md).
    options = (  # positional, in the options table's order: one cache lookup
        format_weight,
        trace_reward_mode,
        trace_annotation_reward_formula,
        answer_weight,
        annotation_weight,
        point_half_life_px,
        answer_relative_tolerance,
        trace_recovery,
        format_accept_answer_tag,
        prediction_frame,
        # The default record as None (the option's way of saying "the processor's defaults"): a Resize is a
        # named tuple, which the subclass check below would take apart on every call.
        None if resize is DEFAULT_RESIZE else resize,
        annotation_native,
        tool_call,
    )
    if not _PLAIN_SCALARS.issuperset(map(type, options)):
        options = tuple(map(plain, options))
    opts = resolve_options(*options)
    text = check_response(response)
    registry = get_registry()
    values = (answer_gt, annotation_gt, reward_contract, image_size, image_sizes, metadata, extra_info)
    if not holds_exact_values(values):  # one quick look at all of them (the usual case: nothing to convert)
        values = tuple(map(plain, values))
    answer_gt, annotation_gt, reward_contract, *size_sources = values
    target = prepare_target(answer_gt, annotation_gt, reward_contract, opts, registry, tuple(size_sources))
    if model_image_size is not None:
        target.model_size = declared_model_size(plain(model_image_size))
    if opts.prediction_frame != PIXEL:  # a declared frame: refuse what cannot be converted, before the response
        problem = frame_problem(opts, target)
        if problem:
            raise OptionError(problem)
    return run(text, opts, registry, target)


def evaluate_trace_response_format(
    response: str, *, trace_reward_mode: Any = "answer_and_annotation", format_accept_answer_tag: Any = False
) -> dict[str, Any]:
    """Format diagnostics of a response and the parsed final block.

    Returns ``format`` (1.0 or 0.0), ``structure_ok``, ``json_ok``, ``schema_ok``,
    ``think_text`` (the content of ``<think>...</think>``, if any),
    ``answer_block`` (the final block's text) and ``payload`` (its mapping).
    ``format_accept_answer_tag`` as in :func:`score_trace_response`.
    """
    text = check_response(response)
    keys = required_keys(resolve_mode(plain(trace_reward_mode)))
    fmt = extract(text, keys, answer_tag=resolve_answer_tag(plain(format_accept_answer_tag))).format
    return {
        "format": fmt.format,
        "structure_ok": fmt.structure_ok,
        "json_ok": fmt.json_ok,
        "schema_ok": fmt.schema_ok,
        "think_text": think_text(text),
        "answer_block": fmt.answer_block,
        "payload": fmt.payload,
    }


def extract_trace_prediction(
    response: str, *, trace_recovery: Any = "lenient", format_accept_answer_tag: Any = False
) -> tuple[Any, Any, bool]:
    """``(answer, annotation, found)`` recovered from a response for scoring (options as in :func:`score_trace_response`)."""
    text = check_response(response)
    recovery, answer_tag = resolve_recovery(plain(trace_recovery)), resolve_answer_tag(plain(format_accept_answer_tag))
    payload = extract(text, ANSWER_AND_ANNOTATION_KEYS, recovery, answer_tag).payload
    if payload is None:
        return None, None, False
    return payload.get("answer"), payload.get("annotation"), True
