"""What every trainer adapter shares: turning a trainer's row into a compiled instance.

A trainer hands us, per response, a ground truth (the trace instance, as a
mapping or a JSON string holding ``answer_gt``, ``annotation_gt`` and
``reward_contract``), sometimes a per-row ``extra_info`` mapping, and options
from its config. :func:`compile_ground_truth` validates the instance through the
strict path (:func:`trace_tasks.data.compile_instance`, through one shared
:class:`~trace_tasks.data.InstanceCache`, so a GRPO group of rollouts pays
for its ground truth once) and :func:`row_options` gives the options of
:meth:`~trace_tasks.data.CompiledInstance.score` for the row.

Rules:

* Model output never raises here; only the caller's row or options can. A row
  whose instance is missing, malformed or cannot be scored honestly (a
  zero-area target box, an unknown type, a contract that disagrees, an answer
  value its type cannot hold, ...) raises :class:`~trace_tasks.data.InstanceError`
  (a ``ValueError``) naming the row and listing every problem, because a broken
  dataset row silently scored 0 (or 0.5) would hide the bug for a whole run.
  A row that is no instance at all (not JSON, not a mapping, a required field
  missing) raises a :class:`~trace_tasks.errors.RecordError` (a ``ValueError``)
  with the same row name.
  Each adapter surfaces that error the way its trainer shows it best
  (``docs/integrations.md``).
* Scorer options come from the adapter's keyword arguments (the trainer's
  config), then from same-named keys of the row's ``extra_info``, which win:
  a row can, say, switch itself to ``trace_reward_mode="answer"``.
* Keys a trainer adds on its own (``reward_router_address``, ``trainer_state``,
  dataset columns) are not scorer options and are ignored.
* The adapters with ``log_keys`` (verl, TRL, OpenRLHF, EasyR1, the server) log
  :data:`CHARTED_KEYS` by default (``log_keys="charted"``), or
  :func:`stable_keys`, every key the scorer always returns (``"all"``).
  Trainers that log a dict per response need the same keys on every row (verl
  and OpenRLHF stack them per key), so the type-specific diagnostics, present
  only when an annotation was scored, are logged only where a trainer takes
  ragged keys (EasyR1).
* Responses decoded with special tokens are cut at the final object by
  :func:`strip_special_tokens` (OpenRLHF, EasyR1): one implementation.
* A valid row that breaks an authoring rule of the annotation contract (a
  warning of :func:`trace_tasks.data.instance_warnings`: normalised
  coordinates, a one-key map, a point without an image size...) is scored as
  it is, and the rule is logged once per process (``logging`` WARNING on this
  module's logger, ``trace_tasks.integrations._common``) with the first row
  that broke it: a training log gets one line per rule, not one per row.
"""

from __future__ import annotations

import collections
import importlib
import json
import logging
import sys
import threading
import weakref
from collections.abc import Collection, Hashable, Mapping, Sequence
from types import ModuleType
from typing import Any, Optional

import numpy as np

from trace_tasks.core.reward_scoring import result_keys
from trace_tasks.data import CompiledInstance, InstanceCache, entry_cost, instance_warnings, quick_compile
from trace_tasks.errors import OptionError, RecordError, ResponseTypeError, TraceTasksError
from trace_tasks.limits import INSTANCE_ENTRY_MIN_BYTES, MAX_INSTANCE_CACHE_BYTES
from trace_tasks.plugins import get_registry
from trace_tasks.reading import decode_json, is_mapping
from trace_tasks.scoring import OPTION_NAMES, ScoringOptions, options_from

#: Scorer options a trainer config or a row's ``extra_info`` may set: the options table's names.
SCORER_OPTIONS: tuple[str, ...] = OPTION_NAMES
#: The instance fields of a ground truth (``answer_gt`` may be null or absent: an instance of the
#: ``annotation_only`` mode, docs/contracts.md §12.1; the others must be present).
REQUIRED_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract")
#: The fields every ground truth holds, whatever its mode.
NEEDED_FIELDS: tuple[str, ...] = ("annotation_gt", "reward_contract")
#: Optional instance fields that carry the image size for the point half-life (and a declared
#: prediction frame), and the model's resized input size for ``prediction_frame="resized"``.
SIZE_FIELDS: tuple[str, ...] = ("image_size", "image_sizes", "metadata", "model_image_size")
#: The fields handed to the strict compiler: the instance proper. ``image_sizes``
#: is not an instance field; it goes to the scorer as an option of the row.
COMPILED_FIELDS: tuple[str, ...] = (*REQUIRED_FIELDS, "image_size", "metadata", "model_image_size")

logger = logging.getLogger(__name__)

#: Compiled instances shared by every adapter in this process, by content and
#: bounded (4,096 entries, ``limits.MAX_INSTANCE_CACHE_BYTES`` by each entry's estimated
#: size): a GRPO group of 8-16 rollouts (or an instance met again next epoch)
#: is validated and compiled once. Invalid instances are remembered too.
INSTANCE_CACHE = InstanceCache(maxsize=4096)


class MissingExtraError(TraceTasksError, ImportError):
    """An optional dependency of an integration is not installed."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"this trace_tasks integration needs {module!r}, which is not installed: pip install 'trace-core[{extra}]'"
        ) from exc


def scorer_options(options: Mapping[str, Any], *, strict: bool) -> dict[str, Any]:
    """Pick the scorer options out of ``options`` and validate them now.

    ``strict``: unknown names raise (our own factories); otherwise they are
    ignored (trainers pass keyword arguments of their own).
    """
    unknown = sorted(set(options) - set(SCORER_OPTIONS))
    if strict and unknown:
        raise OptionError(f"unknown scorer option(s) {unknown}; accepted: {list(SCORER_OPTIONS)}")
    picked = {name: options[name] for name in SCORER_OPTIONS if name in options}
    options_from(picked)  # raises OptionError naming the bad option
    return picked


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_plain(value: Any, _depth: int = 0) -> Any:
    """Numpy arrays and scalars (from parquet, pandas or Arrow rows) as Python lists and numbers.

    The scorer checks for ``int``/``float``/``list``; a ``numpy.int64`` width or an
    ``ndarray`` of boxes would otherwise read as "not a number".
    """
    kind = type(value)
    if kind in _PLAIN_SCALARS:  # exact type checks first: this runs on every row
        return value
    if _depth > 64:
        raise RecordError("ground truth is nested more than 64 levels deep")
    if kind is list or kind is tuple:
        return [to_plain(v, _depth + 1) for v in value]
    if kind is dict:
        return {k: to_plain(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [to_plain(v, _depth + 1) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: to_plain(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v, _depth + 1) for v in value]
    return value


def load_instance(ground_truth: Any, *, where: str = "ground truth", decoded: bool = False) -> dict[str, Any]:
    """The instance mapping of a trainer row: a mapping, or a JSON string (or bytes) of one.

    Fields stored as their own JSON strings (one dataset column per field) are
    decoded, numpy values become plain Python. Raises
    :class:`~trace_tasks.errors.RecordError` (a ``ValueError``, with ``where``
    in the message) when the row is not an instance at all: this is the
    dataset's fault, never the model's. Whether the instance can be scored
    is :func:`compile_ground_truth`'s business. ``decoded``: the caller decoded
    ``ground_truth`` from JSON itself (the reward server's request body), so it
    holds no numpy values and is not copied.
    """
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8", errors="replace")
    from_json = isinstance(ground_truth, str)
    if from_json:
        try:
            ground_truth = json.loads(ground_truth)
        except (ValueError, RecursionError) as exc:
            raise RecordError(f"{where} is a string but not JSON: {exc}") from exc
    if not is_mapping(ground_truth):
        raise RecordError(
            f"{where} must be a trace instance (a mapping or its JSON string with "
            f"{', '.join(REQUIRED_FIELDS)}), got {type(ground_truth).__name__}"
        )
    missing = [name for name in NEEDED_FIELDS if ground_truth.get(name) is None]
    if missing:
        raise RecordError(
            f"{where} lacks {missing}; a trace instance needs {list(REQUIRED_FIELDS)} "
            "(answer_gt may be null only for the annotation_only mode)"
        )
    instance = {}
    for name in REQUIRED_FIELDS + SIZE_FIELDS:
        value = ground_truth.get(name)
        if isinstance(value, str):
            value = load_instance_field(value, name=name, where=where)
        elif not (from_json or decoded):  # JSON holds no numpy values: skip the copy
            value = to_plain(value)
        instance[name] = value
    for name in REQUIRED_FIELDS:
        if name == "answer_gt" and instance[name] is None:  # no answer: the annotation_only mode's instance
            continue
        if not is_mapping(instance[name]):
            raise RecordError(f"{where}: {name} must be a mapping, got {type(instance[name]).__name__}")
    return instance


def load_instance_field(value: str, *, name: str, where: str) -> Any:
    """A field stored as its own JSON string (one dataset column per field).

    A required field that is not JSON raises; an optional one (``image_size``,
    ``metadata``) is kept as the string, for validation to judge.
    """
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        if name not in REQUIRED_FIELDS:
            return value
        raise RecordError(f"{where}: {name} is a string but not JSON: {exc}") from exc


_Compiled = tuple[CompiledInstance, dict[str, Any]]
#: What :func:`compile_ground_truth` returns: the compiled instance and the row's other scorer inputs.
CompiledEntry = _Compiled
#: Rows already compiled, by their raw value (the ground truth's JSON string, or
#: the tuple of a row's JSON-string columns): a rollout of a known row skips
#: even the JSON parse. Bounded like :data:`INSTANCE_CACHE`, by entries and by
#: bytes (each entry charged :func:`~trace_tasks.data.entry_cost` of its text, or
#: :func:`_columns_cost` of its columns: it holds its raw text, and may
#: keep alive a compiled instance the shared cache has dropped); only valid rows.
#: Each entry keeps its charge beside it, so dropping it counts nothing again.
_RAW_MAX = 4096
_RAW_MAX_BYTES = MAX_INSTANCE_CACHE_BYTES
_raw: collections.OrderedDict[Hashable, tuple[_Compiled, int]] = collections.OrderedDict()
_raw_bytes = [0]
_raw_lock = threading.Lock()
_raw_registry: list[object] = [None]


def _columns_key(ground_truth: Any) -> tuple[tuple[str, str | None], ...] | None:
    """The :data:`_raw` key of a row given as one JSON string per column (TRL, Ray), or None for any other row."""
    if type(ground_truth) is dict and all(type(v) is str or v is None for v in ground_truth.values()):
        return tuple(ground_truth.items())
    return None


def _columns_cost(key: tuple[tuple[str, str | None], ...]) -> int:
    """The estimated bytes a :data:`_raw` entry of columns keeps: each column's text charged as a raw text is
    (:func:`~trace_tasks.data.entry_cost`), the least charge counted once."""
    return sum(entry_cost(name + (value or "")) for name, value in key) - (len(key) - 1) * INSTANCE_ENTRY_MIN_BYTES


def compile_ground_truth(ground_truth: Any, *, where: str = "ground truth", decoded: bool = False) -> _Compiled:
    """The compiled instance of a trainer row, and the row's other scorer inputs.

    Validates through the strict path (cached by content in
    :data:`INSTANCE_CACHE`) and raises :class:`~trace_tasks.data.InstanceError`
    naming ``where`` and listing every problem, or a
    :class:`~trace_tasks.errors.RecordError` from :func:`load_instance` for a row
    that is no instance at all (both are the dataset's fault, and an
    ``InstanceError`` is a ``RecordError``: catch ``RecordError``, or
    ``ValueError``, for either). The second value holds the inputs that are
    not part of the instance (``image_sizes``), to pass to
    :meth:`~trace_tasks.data.CompiledInstance.score`; treat it as read-only.
    ``decoded``: as for :func:`load_instance`; a decoded label given as JSON
    text (the reward server's, as OpenRLHF sends a label column) goes to the
    native build's lane first (:func:`~trace_tasks.data.quick_compile`), as the
    server's label objects do. Each compiled instance is linted
    (:func:`log_warnings`) once, when it is first met: a label met again, as
    text or as an object, is not linted again.
    """
    kind = type(ground_truth)
    text: str | bytes | None = ground_truth if kind is str or kind is bytes else None  # the exact built-in types
    key = text if text is not None else _columns_key(ground_truth)  # a label's text is its own key
    if key is not None:
        registry = get_registry()
        with _raw_lock:
            if _raw_registry[0] is not registry:  # plugins reloaded: compiled targets may be stale
                _raw.clear()
                _raw_bytes[0] = 0
                _raw_registry[0] = registry
            hit = _raw.get(key)
            if hit is not None:
                _raw.move_to_end(key)
                return hit[0]
    entry = None
    if decoded and kind is str:  # the reward server's label as JSON text: the native lane first
        # msgspec first when installed (under half the stdlib's time), the stdlib's values either way (reading's
        # decode_json); text it cannot read goes to load_instance, which says why.
        try:
            label = decode_json(ground_truth)
        except (ValueError, RecursionError):
            label = None
        if type(label) is dict:
            entry = quick_compile(label, _logged_rules)
            ground_truth = label  # decoded once: the general path reads the same mapping, as it would the text
    if entry is None:
        entry = _compile_general(ground_truth, where, decoded)
    if key is not None:
        cost = entry_cost(key) if isinstance(key, (str, bytes)) else _columns_cost(key)
        with _raw_lock:
            if _raw_registry[0] is registry and key not in _raw and cost <= _RAW_MAX_BYTES:
                _raw[key] = (entry, cost)
                _raw_bytes[0] += cost
                while len(_raw) > _RAW_MAX or _raw_bytes[0] > _RAW_MAX_BYTES:
                    _raw_bytes[0] -= _raw.popitem(last=False)[1][1]
    return entry


def _compile_general(ground_truth: Any, where: str, decoded: bool) -> _Compiled:
    """:func:`compile_ground_truth`'s general path: loaded, compiled through the cache, linted once."""
    instance = load_instance(ground_truth, where=where, decoded=decoded)
    fields = {name: instance[name] for name in COMPILED_FIELDS if instance[name] is not None}
    compiled = INSTANCE_CACHE.compile(fields, record=where)
    if compiled not in _linted:  # a label met again as an object (a GRPO group's rows): its rules were looked at
        _linted.add(compiled)  # (two threads meeting it at once both lint it: each rule is still logged once)
        log_warnings(compiled, where)
    image_sizes = instance["image_sizes"]
    return compiled, {} if image_sizes is None else {"image_sizes": image_sizes}


#: The warning rules already logged by this process (each is logged once).
_logged_rules: set[str] = set()
_logged_lock = threading.Lock()
#: The compiled instances already linted (weakly held: they leave with the caches' entries).
_linted: weakref.WeakSet[CompiledInstance] = weakref.WeakSet()


def logged_rules() -> Collection[str]:
    """The authoring rules this process has logged (each is logged once): the reward server's lane skips them."""
    return _logged_rules


def log_warnings(compiled: CompiledInstance, where: str) -> None:
    """Log each authoring-rule warning of ``compiled`` whose rule this process has not logged yet (once per rule).

    The rules already logged are not even checked (``skip``): nothing else reads
    the lint's result here, and a rule is logged once per process.
    """
    found = instance_warnings(compiled, skip=_logged_rules)  # membership tests only (and rules are only added)
    if not found:
        return
    with _logged_lock:
        new = {}
        for warning in found:
            if warning.rule not in _logged_rules and warning.rule not in new:
                new[warning.rule] = warning
        _logged_rules.update(new)
    for warning in new.values():
        logger.warning(
            "%s: %s (the instance is scored as it is; each rule is logged once per process: "
            "`trace-tasks validate` on the dataset lists every instance)",
            where,
            warning,
        )


def clear_instance_caches() -> None:
    """Forget every compiled row (both caches); for tests and long-lived processes that edit plugins."""
    with _raw_lock:
        _raw.clear()
        _raw_bytes[0] = 0
    INSTANCE_CACHE.clear()
    with _logged_lock:
        _linted.clear()


def row_options(options: Mapping[str, Any] | None, extra_info: Any = None) -> dict[str, Any]:
    """Scorer options for one row: ``options`` (already picked, see :func:`scorer_options`),
    overridden by scorer option keys of a mapping ``extra_info``, which is passed on too
    (the scorer looks there for an image size)."""
    kwargs: dict[str, Any] = dict(options) if options else {}
    if isinstance(extra_info, Mapping):
        extra_info = to_plain(extra_info)
        kwargs.update({name: extra_info[name] for name in SCORER_OPTIONS if name in extra_info})
        kwargs["extra_info"] = extra_info
    return kwargs


def score_row(
    response: Any,
    ground_truth: Any,
    *,
    extra_info: Any = None,
    options: Mapping[str, Any] | None = None,
    where: str = "ground truth",
) -> dict[str, float]:
    """Compile one row's instance (strictly, cached) and score ``response`` against it.

    A response that is not a string scores as the empty response. Raises
    :class:`~trace_tasks.data.InstanceError` for a broken instance.
    """
    compiled, inputs = compile_ground_truth(ground_truth, where=where)
    text = response if isinstance(response, str) else ""
    return compiled.score(text, **inputs, **row_options(options, extra_info))


def response_text(response: Any, *, where: str, name: str = "the response") -> str:
    """``response`` when it is text; :class:`~trace_tasks.errors.ResponseTypeError` naming ``where`` otherwise.

    A trainer hands over the decoded text; a list, ``None`` or bytes is the
    trainer's or the caller's mistake (a wrong column, an undecoded batch), and
    scoring it as the empty response would hide that behind a reward of 0.
    """
    if isinstance(response, str):
        return response
    raise ResponseTypeError(f"{where}: {name} must be the decoded response text (a str), got {type(response).__name__}")


def score_checked(
    compiled: CompiledInstance, inputs: Mapping[str, Any], response: Any, options: Mapping[str, Any], *, where: str
) -> dict[str, float]:
    """``compiled.score`` of one row, its caller-side mistakes named: a response that is not text
    (:class:`~trace_tasks.errors.ResponseTypeError`) or a bad option of the row (``extra_info``, a
    dataset column: :class:`~trace_tasks.errors.OptionError`), each with ``where`` in the message."""
    text = response_text(response, where=where)
    try:
        return compiled.score(text, **inputs, **options)
    except OptionError as exc:
        # The adapter's own options were checked when it was built: what fails here is the row's.
        raise OptionError(f"{where}: a scorer option of this row (extra_info, a dataset column): {exc}") from exc


def scoring_kwargs(
    ground_truth: Any,
    *,
    extra_info: Any = None,
    options: Mapping[str, Any] | None = None,
    where: str = "ground truth",
) -> dict[str, Any]:
    """Keyword arguments of the lenient ``score_trace_response`` for one row, without ``response``.

    Kept for callers that want the lenient scorer; the adapters use
    :func:`compile_ground_truth` instead, which refuses a broken instance.
    """
    kwargs: dict[str, Any] = load_instance(ground_truth, where=where)
    kwargs.update(row_options(options, extra_info))
    return kwargs


#: The components people chart, logged by default by every adapter: the rewards,
#: and the flags that describe the *model's output* (``answer_parse_ok`` describes
#: the ground truth, always 1.0 for a validated instance, so it is left out, as are
#: the constant option echoes and the ``annotation_type_*`` one-hot).
CHARTED_KEYS: tuple[str, ...] = (
    "overall",
    "answer_reward",
    "annotation_reward",
    "format",
    "format_structure_ok",
    "format_json_ok",
    "format_schema_ok",
    "json_found",
    "annotation_parse_ok",
    "zero_reward",
)
#: ``log_keys`` values: the charted components, or every always-present key.
LOG_KEY_SETS: tuple[str, ...] = ("charted", "all")
#: Logged by the adapters that refuse a broken row without stopping the trainer:
#: 1.0 for a row whose instance was refused (its rewards are 0), else 0.0.
REFUSED_KEY = "trace_refused"


#: ``on_invalid`` values of the adapters that can keep going past a broken row:
#: score it 0 with :data:`REFUSED_KEY` 1.0 (the full key set), or raise.
ON_INVALID: tuple[str, ...] = ("zero", "raise")


def check_on_invalid(on_invalid: str) -> str:
    """``on_invalid`` itself, or :class:`~trace_tasks.errors.OptionError` for anything but :data:`ON_INVALID`."""
    if on_invalid not in ON_INVALID:
        raise OptionError(f"on_invalid must be one of {list(ON_INVALID)}, got {on_invalid!r}")
    return on_invalid


def refused_row(keys: tuple[str, ...]) -> dict[str, float]:
    """The row a refused instance returns: every key of ``keys`` at 0.0 and :data:`REFUSED_KEY` 1.0.

    The same keys as a scored row (which carries :data:`REFUSED_KEY` 0.0), so a
    trainer that stacks rows by the first row's keys (verl's reward loop) never
    meets a row that lacks one.
    """
    row = dict.fromkeys(keys, 0.0)
    row[REFUSED_KEY] = 1.0
    return row


def position(i: int, name: str | None = None) -> str:
    """How an error names the ``i``-th item of a reward call whose trainer passes no dataset row index.

    ``"position 2 in this call"`` (or ``"labels[2] (position 2 in this call)"``
    with ``name``): the index in the batch the trainer handed over, which is not
    the dataset row.
    """
    where = f"position {i} in this call"
    return where if name is None else f"{name}[{i}] ({where})"


def log_error(log: logging.Logger, message: str, *args: Any) -> None:
    """``log.error(message, *args)``, with the level in the line even when nothing configured logging.

    With no handler anywhere on the logger's chain, Python prints through its
    last-resort handler, which writes the bare message (OpenRLHF 0.11.2's
    reward workers: a refusal would be a stderr line with no "ERROR" in it);
    then the line goes to stderr as ``ERROR <logger>: <message>``.
    """
    if log.hasHandlers():
        log.error(message, *args)
        return
    if not log.isEnabledFor(logging.ERROR):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.handle(log.makeRecord(log.name, logging.ERROR, "(trace_tasks)", 0, message, args, None))


def logged_keys(log_keys: str, options: Mapping[str, Any] | ScoringOptions | None = None) -> tuple[str, ...]:
    """The keys an adapter logs for ``log_keys`` (``"charted"`` or ``"all"``); a caller mistake raises.

    ``options`` are the adapter's scorer options (by name, or their record): with an opt-in response
    policy (docs/contracts.md §3.7) ``"all"`` includes its indicators.
    """
    if log_keys == "charted":
        return CHARTED_KEYS
    if log_keys == "all":
        return stable_keys(options)
    raise OptionError(f"log_keys must be one of {list(LOG_KEY_SETS)}, got {log_keys!r}")


def diagnostics(result: Mapping[str, float]) -> dict[str, float]:
    """The per-type diagnostics of ``result`` (present only when an annotation was scored)."""
    stable = set(stable_keys())
    return {key: value for key, value in result.items() if key not in stable}


#: Plain end-of-turn, end-of-sequence and padding tokens stripped from the end of a
#: response decoded with special tokens, besides any ``<|...|>`` token.
SPECIAL_TOKENS: tuple[str, ...] = (
    "</s>",
    "<eos>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",
    "<pad>",
    "[PAD]",
    "[SEP]",
    "[CLS]",
)
_MAX_TOKEN_LEN = 64
#: The last characters of every special token (``<|...|>`` ends with ``>``): a text ending otherwise ends with none.
_TOKEN_ENDS = frozenset(token[-1] for token in SPECIAL_TOKENS) | {">"}


def strip_special_tokens(text: str) -> str:
    """Drop trailing whitespace and special tokens (``<|im_end|>``, ``</s>``, ``<pad>`` runs, ...).

    The response contract wants the final object to end the text, so a response
    decoded with special tokens (OpenRLHF always, EasyR1 with
    ``skip_special_tokens: false``) would lose its format credit. Moves an end
    index instead of slicing, so a response made of a million tokens is still
    handled in linear time.
    """
    if text[-1:] not in _TOKEN_ENDS and not text[-1:].isspace():  # the usual response: ends with its object
        return text
    end = len(text)
    while True:
        while end and text[end - 1].isspace():
            end -= 1
        if not end or text[end - 1] not in _TOKEN_ENDS:  # no token ends here
            return text[:end]
        if text.endswith("|>", 0, end):
            start = text.rfind("<|", max(0, end - _MAX_TOKEN_LEN), end)
            if start != -1 and not any(ch.isspace() for ch in text[start:end]):
                end = start
                continue
        for token in SPECIAL_TOKENS:
            if text.endswith(token, 0, end):
                end -= len(token)
                break
        else:
            return text[:end]


def stable_keys(options: Mapping[str, Any] | ScoringOptions | None = None) -> tuple[str, ...]:
    """The keys ``score_trace_response`` returns for every call, in its order (``trace_tasks.result_keys``).

    Those are all keys except the per-type diagnostics (and the
    ``annotation_native_format`` flag); the one-hot ``annotation_type_*`` keys
    follow the installed families, and with ``options`` (scorer options by
    name, or their record) that opt into a response policy, its indicators
    follow them.
    """
    if isinstance(options, ScoringOptions):
        return result_keys(None, options)
    return result_keys(None, options_from(options) if options else None)


def stable_view(result: Mapping[str, float], keys: tuple[str, ...] | None = None) -> dict[str, float]:
    """``result`` restricted to ``keys`` (default :func:`stable_keys`), a missing key as 0.0."""
    return {key: float(result.get(key, 0.0)) for key in (keys if keys is not None else stable_keys())}


def picked_metrics(metrics: Optional[Sequence[str]], keys: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``metrics`` as a tuple in the caller's order (all of ``keys`` for ``None``), each a distinct name of ``keys``.

    ``what`` names the items in the error (``"metric names"``, ``"score keys"``): a caller mistake is an
    :class:`~trace_tasks.errors.OptionError` saying which names are allowed.
    """
    if metrics is None:
        return keys
    if isinstance(metrics, str) or not isinstance(metrics, Sequence):
        raise OptionError(f"metrics must be a list of {what} or None, got {metrics!r}")
    picked = tuple(metrics)
    unknown = [name for name in picked if name not in keys]
    if unknown or not picked or len(set(picked)) != len(picked):
        raise OptionError(f"metrics must be distinct names from {list(keys)}, got {list(picked)!r}")
    return picked
