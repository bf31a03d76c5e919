"""Compiled instances: a validated instance whose target the pipeline prepared once.

:func:`compile_instance` validates (:mod:`trace_tasks.data._validation`) and
keeps what validation computed as a :class:`~trace_tasks.scoring.Target`: the
parsed target, the owner's entries, the answer's canonical form, the image
size and the point half-life. :meth:`CompiledInstance.score` then runs the one
scoring pipeline on it and gives exactly :func:`trace_tasks.score_trace_response`'s
dict for the same inputs, without preparing the ground truth again;
:meth:`CompiledInstance.score_group` scores a GRPO group (one instance, N
responses) and :meth:`CompiledInstance.explain` keeps the run's trail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from trace_tasks.core.reward_scoring import check_response
from trace_tasks.data._records import TrainInstance
from trace_tasks.data._validation import Parts, check
from trace_tasks.errors import InstanceError, OptionError, Problem, ResponseTypeError
from trace_tasks.plugins import AnnotationTypeEntry, AnswerTypeSpec, Registry, RewardEntry, get_registry
from trace_tasks.scoring import (
    ANNOTATION_ONLY,
    DEFAULT_OPTIONS,
    NEVER_MATCHES,
    OPTION_DEFAULTS,
    OPTION_NAMES,
    UNPARSED,
    ScoringOptions,
    Size,
    Target,
    Trail,
    document_options,
    frame_problem,
    prepare_target,
    relaxed_answer,
    resolve_frame,
    resolve_mode,
    resolve_options,
    run,
    scoring_context,
    size_from,
)

__all__ = ["CompiledInstance", "Handover", "compile_instance", "from_handover", "mode_problem"]

#: ``(image_size, image_sizes, metadata, extra_info)`` given at call time, or ``None``.
Sizes = tuple[Any, Any, Any, Any]


#: The scorer's size sources besides the instance's own, in the order it searches them.
SIZE_SOURCES: tuple[str, ...] = ("image_size", "image_sizes", "metadata", "extra_info")


def _options_and_sizes(method: str, options: Any, keywords: dict[str, Any]) -> tuple[ScoringOptions, Sizes | None]:
    """The validated options and the size sources of a :meth:`CompiledInstance.score` call (``keywords`` is emptied)."""
    if options is not None and not isinstance(options, ScoringOptions):
        raise OptionError(f"options must be a trace_tasks.ScoringOptions (or None), got {type(options).__name__}")
    if not keywords:  # the frequent call: no per-call option, no size source
        return (DEFAULT_OPTIONS if options is None else options), None
    pop = keywords.pop
    sizes = (pop("image_size", None), pop("image_sizes", None), pop("metadata", None), pop("extra_info", None))
    if not keywords:
        opts = DEFAULT_OPTIONS if options is None else options
    else:
        base = OPTION_DEFAULTS if options is None else options.keywords()  # keywords override the record's fields
        values = [pop(name, base[name]) for name in OPTION_NAMES]  # the table's order: one cache lookup
        if keywords:  # as Python says it of an explicit signature
            raise TypeError(f"CompiledInstance.{method}() got an unexpected keyword argument {sorted(keywords)[0]!r}")
        opts = resolve_options(*values)
    if sizes[0] is None and sizes[1] is None and sizes[2] is None and sizes[3] is None:
        return opts, None
    return opts, sizes


#: The sizes validation found: in the instance's ``image_size``, in its ``metadata``, its ``model_image_size``.
FoundSizes = tuple[Size | None, Size | None, Size | None]
#: :meth:`CompiledInstance.handover`'s value: ``(id, answer_gt when the instance has no answer type, answer
#: type name, annotation type name, prepared answer, parsed target, sizes, relaxed answer)``.
Handover = tuple[Any, Any, str | None, str, Any, Any, FoundSizes, tuple[str, Any] | None]


@attrs.frozen(slots=True, eq=False, repr=False)
class CompiledInstance:
    """A validated instance with its ground truth prepared once; build it with :func:`compile_instance`.

    ``data`` is the instance as given (for reporting; treat it as read-only),
    ``target`` the target annotation as its owner parsed it, ``annotation_entry``
    and ``reward_entry`` the owner's parse entry and the current reward's score
    entry, ``answer_spec`` the answer type (``None`` for an instance without an
    answer, which is scored in the ``annotation_only`` mode only), ``image_size`` the size found in the
    instance's own ``image_size`` or ``metadata`` (``None`` when none) and
    ``half_life_px`` the point half-life it gives (when no option overrides it).
    """

    data: Mapping[str, Any]
    answer_spec: AnswerTypeSpec | None
    annotation_entry: AnnotationTypeEntry
    reward_entry: RewardEntry
    target: Any
    image_size: Size | None
    half_life_px: float
    _prepared: Target
    _size_image: Size | None
    _size_meta: Size | None
    _registry: Registry

    @classmethod
    def _build(cls, data: Mapping[str, Any], parts: Parts, registry: Registry) -> CompiledInstance:
        assert parts.entry is not None and parts.target is not UNPARSED
        assert parts.answer_spec is None or parts.answer is not UNPARSED
        relaxed = relaxed_answer(data.get("answer_gt"), data.get("reward_contract"), registry)
        sizes = (parts.size_image, parts.size_meta, parts.size_model)
        return cls._assemble(data, parts.answer_spec, parts.entry, parts.answer, parts.target, sizes, relaxed, registry)

    @classmethod
    def _assemble(
        cls,
        data: Mapping[str, Any],
        spec: AnswerTypeSpec | None,
        entry: AnnotationTypeEntry,
        answer: Any,
        parsed: Any,
        sizes: FoundSizes,
        relaxed: tuple[str, Any] | None,
        registry: Registry,
    ) -> CompiledInstance:
        """The instance from what validation found."""
        size_image, size_meta, size_model = sizes
        reward = registry.reward_ids[entry.current_reward_id]
        size = size_image or size_meta
        context = scoring_context(size, None)
        if spec is None:  # no answer: the annotation_only mode's instance
            prepared = Target.compiled(NEVER_MATCHES, True, entry, reward, parsed, size, context)
            prepared.answer_parse_ok = 0.0
        else:  # the answer as validation prepared it, as the scorer prepares it
            prepared = Target.compiled(answer, spec.reads_json_strings, entry, reward, parsed, size, context)
        prepared.model_size = size_model
        prepared.relaxed = relaxed
        return cls(
            data,
            spec,
            entry,
            reward,
            parsed,
            size,
            context.half_life_px,  # half_life_px(size): the context computed it
            prepared,
            size_image,
            size_meta,
            registry,
        )

    def handover(self) -> Handover:
        """This instance as plain picklable values, for another process to score with it without validating it again.

        A process pool's worker gets it (``trace-tasks score --workers N``) and
        rebuilds the instance with :func:`from_handover`: the registry entries go
        by name, the prepared answer and target as they are, so the worker runs
        exactly the pipeline this process would. The record itself stays here (the
        worker's instance keeps only its ``id``, and ``answer_gt`` when it has no
        answer type, which :meth:`check_mode` reads).
        """
        prepared = self._prepared
        spec = self.answer_spec
        answer_gt = self.data.get("answer_gt") if spec is None else None
        return (
            self.data.get("id"),
            answer_gt,
            None if spec is None else spec.name,
            self.annotation_entry.name,
            None if spec is None else prepared.answer,
            self.target,
            (self._size_image, self._size_meta, prepared.model_size),
            prepared.relaxed,
        )

    @property
    def answer_type(self) -> str | None:
        """The answer type's name (``None`` for an instance without an answer)."""
        return self.answer_spec.name if self.answer_spec is not None else None

    @property
    def annotation_type(self) -> str:
        return self.annotation_entry.name

    def __repr__(self) -> str:
        return f"CompiledInstance(id={self.data.get('id')!r}, answer_type={self.answer_type!r}, annotation_type={self.annotation_type!r})"

    def scoring_kwargs(self) -> dict[str, Any]:
        """The instance's keyword arguments of ``score_trace_response`` (what :meth:`score` equals)."""
        data = self.data
        return {
            "answer_gt": data.get("answer_gt"),
            "annotation_gt": data["annotation_gt"],
            "reward_contract": data["reward_contract"],
            "image_size": data.get("image_size"),
            "metadata": data.get("metadata"),
            **({"model_image_size": data["model_image_size"]} if data.get("model_image_size") is not None else {}),
        }

    @document_options
    def score(self, response: str, options: ScoringOptions | None = None, **keywords: Any) -> dict[str, float]:
        """Score one response: exactly ``score_trace_response(response=response, **instance fields, **options)``.

        ``options`` is a :class:`~trace_tasks.ScoringOptions` record; ``keywords``
        are scorer options by name (overriding the record's) and the size sources.
        The options have ``score_trace_response``'s names, defaults and errors
        (:class:`~trace_tasks.errors.OptionError` for an invalid option,
        :class:`~trace_tasks.errors.ResponseTypeError` for a non-string
        response, ``TypeError`` for a keyword that is neither). ``image_size``
        and ``metadata`` given here replace the instance's own (``None`` keeps
        them); ``image_sizes`` and ``extra_info`` are further size sources, in
        the scorer's order.
        """
        if keywords or type(options) is not ScoringOptions:
            opts, sizes = _options_and_sizes("score", options, keywords)
        else:  # the frequent call (the adapters', the reward server's): a record and nothing else
            opts, sizes = options, None
        # The two checks only where they can refuse: an instance without an answer, a declared frame.
        if self.answer_spec is None:
            self.check_mode(opts)
        if opts.prediction_frame != "pixel":
            self.check_frame(opts, sizes)
        return self.run(check_response(response), opts, sizes)

    @document_options
    def score_group(
        self, responses: Sequence[str], options: ScoringOptions | None = None, **keywords: Any
    ) -> list[dict[str, float]]:
        """Score a group of responses to this instance (a GRPO group), in order; options as for :meth:`score`.

        Options are validated once, and every response is checked to be a
        string before any is scored.
        """
        if isinstance(responses, (str, bytes)):
            raise ResponseTypeError("responses must be a sequence of strings (the group's decoded outputs), not one string")
        opts, sizes = _options_and_sizes("score_group", options, keywords)
        texts = [check_response(response) for response in responses]
        self.check_mode(opts)
        self.check_frame(opts, sizes)
        score = self.run
        return [score(text, opts, sizes) for text in texts]

    def explain(self, response: str, opts: ScoringOptions, sizes: Sizes | None = None) -> tuple[dict[str, float], Trail]:
        """Score one response and keep the run's :class:`~trace_tasks.scoring.Trail` (what ``trace-tasks explain`` shows).

        The dict is exactly :meth:`score`'s; the trail is a by-product of the same run,
        with the tools' hints (``Trail(hints=True)``: the normalised readings, what a
        model-native value would have scored).
        """
        trail = Trail(hints=True)
        self.check_mode(opts)
        self.check_frame(opts, sizes)
        return self.run(check_response(response), opts, sizes, trail), trail

    def check_mode(self, opts: ScoringOptions) -> None:
        """:class:`~trace_tasks.errors.OptionError` when this instance has no answer and ``opts`` read one.

        An instance without ``answer_gt`` supports the ``annotation_only`` mode only (docs/contracts.md §12.1).
        """
        if self.answer_spec is None:
            problem = mode_problem(self.data, opts)
            if problem:
                raise OptionError(problem)

    def check_frame(self, opts: ScoringOptions, sizes: Sizes | None = None) -> None:
        """:class:`~trace_tasks.errors.OptionError` when ``opts`` declare a prediction frame this instance cannot be
        scored in (no image size, or a family that cannot convert it); nothing in the ``pixel`` frame."""
        if opts.prediction_frame == "pixel":
            return
        target = self._prepared if sizes is None else self._prepared.with_size(self._find_size(*sizes))
        problem = frame_problem(opts, target)
        if problem:
            raise OptionError(f"instance {self.data.get('id')!r}: {problem}" if self.data.get("id") else problem)

    def run(self, text: str, opts: ScoringOptions, sizes: Sizes | None = None, trail: Trail | None = None) -> dict[str, float]:
        """The pipeline on this instance's prepared target, for options already validated (no checks here)."""
        registry = get_registry()
        if registry is not self._registry:
            # The plugins were reloaded since compiling (a new pin, a family added): the prepared
            # target may belong to another registry, so prepare the instance as given.
            target = prepare_target(
                self.data.get("answer_gt"),
                self.data["annotation_gt"],
                self.data["reward_contract"],
                opts,
                registry,
                self._given(sizes),
            )
            target.model_size = self._prepared.model_size
        elif sizes is None:
            target = self._prepared
        else:
            target = self._prepared.with_size(self._find_size(*sizes))
        return run(text, opts, registry, target, trail)

    def _given(self, sizes: Sizes | None) -> Sizes:
        """The size sources of the instance as given, with a call's own in place."""
        image_size, image_sizes, metadata, extra_info = sizes or (None, None, None, None)
        if image_size is None:
            image_size = self.data.get("image_size")
        if metadata is None:
            metadata = self.data.get("metadata")
        return (image_size, image_sizes, metadata, extra_info)

    def _find_size(self, image_size: Any, image_sizes: Any, metadata: Any, extra_info: Any) -> Size | None:
        """``find_image_size(image_size, image_sizes, metadata, extra_info)`` with the instance's own sizes reused."""
        size = size_from(image_size) if image_size is not None else self._size_image
        if size is None and image_sizes is not None:
            size = size_from(image_sizes)
        if size is None:
            size = size_from(metadata) if metadata is not None else self._size_meta
        if size is None and extra_info is not None:
            size = size_from(extra_info)
        return size


def from_handover(state: Handover) -> CompiledInstance:
    """The compiled instance :meth:`CompiledInstance.handover` gave, rebuilt in this process without validation.

    Raises :class:`~trace_tasks.errors.InstanceError` when this process's plugins lack one of its types
    (a worker whose installation differs from its parent's).
    """
    row_id, answer_gt, answer_type, annotation_type, answer, parsed, sizes, relaxed = state
    registry = get_registry()
    spec = None if answer_type is None else registry.answer_types.get(answer_type)
    entry = registry.annotation_types.get(annotation_type)
    if entry is None or (spec is None and answer_type is not None):
        missing = annotation_type if entry is None else answer_type
        raise InstanceError([Problem("$", f"type {missing!r} is not installed in this process (its plugins differ)")])
    data = {"id": row_id} if answer_type is not None else {"id": row_id, "answer_gt": answer_gt}
    return CompiledInstance._assemble(data, spec, entry, answer, parsed, sizes, relaxed, registry)


def mode_problem(data: Mapping[str, Any], opts: ScoringOptions) -> str:
    """Why an instance cannot be scored in ``opts``' mode ("" when it can): one without an answer, in a mode reading one."""
    if data.get("answer_gt") is not None or opts.trace_reward_mode == ANNOTATION_ONLY:
        return ""
    return (  # the id is not named: a row of a run carries it, and every engine says the same
        "this instance has no answer_gt, so it can be scored only with "
        f"trace_reward_mode='annotation_only' (--mode annotation_only), not {opts.trace_reward_mode!r}"
    )


def compile_instance(
    data: Mapping[str, Any], *, record: str | None = None, prediction_frame: Any = None, trace_reward_mode: Any = None
) -> CompiledInstance:
    """Validate ``data`` (a ``TrainInstance`` dict) and compile it for scoring.

    Raises :class:`~trace_tasks.errors.InstanceError` listing every problem
    (``record`` names the record in the message, e.g. ``"instances.jsonl line 3"``).
    ``prediction_frame``: the frame the instance will be scored in; a frame other
    than ``pixel`` without the image size (or whose family cannot convert it) is
    a problem naming the frame. Scoring in a frame checks the same at call time.
    ``trace_reward_mode``: the mode it will be scored in; an instance without
    ``answer_gt`` is valid for ``annotation_only`` only (a problem otherwise; with
    no mode given it compiles, and scoring it in another mode raises ``OptionError``).
    """
    registry = get_registry()
    mode = resolve_mode(trace_reward_mode) if trace_reward_mode is not None else None
    problems, parts = check(data, TrainInstance, registry, resolve_frame(prediction_frame), mode)
    if problems:
        raise InstanceError(problems, record=record)
    return CompiledInstance._build(data, parts, registry)
