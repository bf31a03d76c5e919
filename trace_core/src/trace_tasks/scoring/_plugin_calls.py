"""Calling a family's parse and score hooks on model output, and checking what they return.

Model output is hostile and plugins have bugs: a parse that fails is the
model's doing (no reward, nothing logged); a score hook that raises or breaks
the contract of ``trace_score_annotation`` is the plugin's bug (no reward, a
WARNING naming the plugin once per kind of problem). Neither reaches the caller.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

from trace_tasks.errors import AnnotationParseError
from trace_tasks.plugins import AnnotationScore, AnnotationTypeEntry, NativeFormat
from trace_tasks.reading import from_numpy, is_mapping, literal_budget

log = logging.getLogger("trace_tasks.core.reward_scoring")  # the logger users already configure

#: What :func:`parse_prediction` returns for a value that does not parse.
UNPARSED: Any = object()

_RESERVED_KEYS = frozenset({"annotation_reward", "annotation_parse_ok"})


def is_diagnostic_key(key: object) -> bool:
    """Whether a plugin may report ``key``: ``annotation_*`` only, never a core key.

    A plugin returning ``{"overall": 0.99}`` would otherwise set the reward.
    """
    return (
        isinstance(key, str)
        and key.startswith("annotation_")
        and key not in _RESERVED_KEYS
        and not key.startswith("annotation_type_")
    )


_diagnostic_key_ok: dict[object, bool] = {}
_reported: set[tuple[str, str]] = set()


class PluginBug(Exception):
    """A score hook broke the contract of ``trace_score_annotation``; ``kind`` names how."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


#: What a plugin bug does to the response, by kind (what the log says; "the response counts as an
#: annotation failure" for every kind not listed).
_CONSEQUENCES = {
    "key": "the key is dropped and the rest of the result stands",
    "native": "the value is read as no model-native shape",
    "parse": "the response counts as a parse failure (annotation_parse_ok 0), as if the model had written no value",
}


def report_plugin_bug(plugin: str, reward_id: str, kind: str, detail: str, exc_info: Any = None) -> None:
    """Log a plugin's broken result at WARNING, once per plugin and kind (a run scores millions)."""
    if (plugin, kind) in _reported:
        return
    _reported.add((plugin, kind))
    log.warning(
        "trace_tasks: plugin %r scoring %r: %s; %s (logged once per plugin and kind of problem)",
        plugin, reward_id, detail, _CONSEQUENCES.get(kind, "the response counts as an annotation failure"), exc_info=exc_info,
    )  # fmt: skip


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (booleans and non-numbers are not numbers here)."""
    if type(value) is float:
        return value if value - value == 0.0 else None  # NaN and infinities fail
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = from_numpy(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


#: Diagnostic key sets seen, by their tuple of keys: whether every key is the plugin's own.
_key_sets_ok: dict[tuple[Any, ...], bool] = {}
_FLOAT = frozenset((float,))


def _plain_diagnostics(raw: dict[Any, Any]) -> bool:
    """Whether ``raw`` is valid as it is: its own ``annotation_*`` keys, finite floats only.

    The common case, checked in a few C-speed passes (a family reports the same
    keys on every call); anything else goes through the per-key checks.
    """
    keys = tuple(raw)
    ok = _key_sets_ok.get(keys)
    if ok is None:
        ok = all(isinstance(key, str) and is_diagnostic_key(key) for key in keys)
        if len(_key_sets_ok) >= 1024:  # a plugin inventing keys: keep memory bounded
            _key_sets_ok.clear()
        _key_sets_ok[keys] = ok
    if not ok or not _FLOAT.issuperset(map(type, raw.values())):
        return False
    total: float = sum(raw.values())  # only floats here (checked just above)
    return total - total == 0.0  # every value finite (a sum that overflows takes the slow path)


def checked_score(score: Any, plugin: str, reward_id: str) -> tuple[float, dict[str, float]]:
    """The reward and diagnostics of a score hook's result, or :class:`PluginBug` when it breaks the contract.

    A valid result is an :class:`AnnotationScore` holding a finite reward in
    [0, 1] and a mapping of finite numbers. Keys that would overwrite a core
    key are dropped (and reported), not fatal.
    """
    if not isinstance(score, AnnotationScore):
        raise PluginBug("result", f"returned {type(score).__name__} instead of an AnnotationScore")
    # Its fields are read as Any, as what they may really hold: AnnotationScore does not check
    # its arguments, so a plugin can put a string or a bool in ``reward``. Read as the declared
    # float, a compiled reading would raise a bare TypeError here, or turn True into 1.0, before
    # the checks below could name the problem.
    fields: Any = score
    reward = _number(fields.reward)
    if reward is None:
        raise PluginBug("reward", f"reward {fields.reward!r} is not a finite number")
    if not 0.0 <= reward <= 1.0:
        raise PluginBug("range", f"reward {reward!r} is outside [0, 1]")
    raw = fields.diagnostics
    if type(raw) is dict and _plain_diagnostics(raw):
        return reward, dict(raw)
    if not is_mapping(raw):
        raise PluginBug("diagnostics", f"diagnostics are a {type(raw).__name__}, not a mapping")
    out = {}
    for key, value in raw.items():
        ok = _diagnostic_key_ok.get(key) if isinstance(key, str) else False
        if ok is None:
            ok = _diagnostic_key_ok[key] = is_diagnostic_key(key)
        if not ok:
            report_plugin_bug(plugin, reward_id, "key", f"diagnostic key {key!r} is not an annotation_* key of its own; dropped")
            continue
        number = _number(value)
        if number is None:
            raise PluginBug("diagnostic value", f"diagnostic {key!r} is {value!r}, not a finite number")
        out[key] = number
    return reward, out


def parse_value(
    parse: Callable[..., Any],
    type_name: str,
    value: Any,
    literal_left: list[int],
    why: list[BaseException] | None = None,
    plugin: str | None = None,
) -> Any:
    """The owner's parse of a raw annotation value, or :data:`UNPARSED` (and the exception appended to ``why``).

    Literal strings in ``value`` share the budget ``literal_left`` (the
    response's for a prediction, the target's own for a target). ``plugin``:
    the parse hook's plugin, for a prediction's parse. Any exception but
    :class:`~trace_tasks.errors.AnnotationParseError` is then also its bug,
    logged once (a broken parse hook would otherwise look like a model that
    never writes a value, for a whole run).
    """
    try:
        with literal_budget(literal_left):
            return parse(annotation_type=type_name, value=value)
    except Exception as exc:  # AnnotationParseError, or anything odd a hostile value provokes
        if why is not None:
            why.append(exc)
        if plugin is not None and not isinstance(exc, AnnotationParseError):
            report_plugin_bug(plugin, type_name, "parse", f"trace_parse_annotation raised {type(exc).__name__}: {exc}")
        return UNPARSED


def native_format(entry: AnnotationTypeEntry, value: Any, literal_left: list[int]) -> NativeFormat | None:
    """The owner's ``trace_native_annotation`` of a predicted value that did not parse, or ``None``.

    Asked only after a failed parse (never on the hot path), under what is left
    of the response's literal budget. A hook that raises or returns something
    other than a :class:`~trace_tasks.plugins.NativeFormat` is the plugin's bug:
    logged once, read as ``None``.
    """
    native = entry.native
    if native is None:
        return None
    try:
        with literal_budget(literal_left):
            found = native(annotation_type=entry.name, value=value)
    except Exception as exc:
        report_plugin_bug(entry.plugin, entry.name, "native", f"trace_native_annotation raised {type(exc).__name__}: {exc}")
        return None
    if found is None or isinstance(found, NativeFormat):
        return found
    report_plugin_bug(
        entry.plugin, entry.name, "native", f"trace_native_annotation returned {type(found).__name__} instead of a NativeFormat"
    )
    return None


class AnnotationResult:
    """The annotation part of one scored response (reward, parse flag, type one-hot, diagnostics, native-shape flag)."""

    __slots__ = ("diagnostics", "native", "parse_ok", "reward", "type_name")

    def __init__(self, type_name: str | None = None) -> None:
        self.reward = 0.0
        self.parse_ok = 0.0
        self.type_name = type_name
        self.diagnostics: Mapping[str, float] = {}
        self.native = False  # the prediction did not parse but has a model-native shape its owner knows
