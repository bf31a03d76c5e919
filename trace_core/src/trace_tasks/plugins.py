"""Loading plugins once and indexing what they own.

The registry is built lazily on first use and cached: entry points in the
``trace_tasks`` group are loaded, checked (import errors, duplicate names,
hooks matching no spec, two owners for one type or reward id), and turned into
plain dicts. Scoring then dispatches by dict lookup straight to the owning
plugin's hook implementation.

Environment variables, read when the registry is built:

* ``TRACE_TASKS_PLUGINS``: comma-separated allow-list of entry-point names or
  distributions to load (set but empty: load none).
* ``TRACE_TASKS_DISABLE_PLUGINS``: comma-separated block-list.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import pluggy

from trace_tasks import hookspecs
from trace_tasks.answers import BuiltinAnswerTypes
from trace_tasks.errors import (
    MissingFamilyError,
    PluginConflictError,
    PluginLoadError,
    PluginValidationError,
    UnknownRewardIdError,
    suggest,
)
from trace_tasks.markers import PROJECT_NAME
from trace_tasks.specs import AnnotationTypeSpec, AnswerTypeSpec

ENTRY_POINT_GROUP = PROJECT_NAME
ALLOW_ENV = "TRACE_TASKS_PLUGINS"
BLOCK_ENV = "TRACE_TASKS_DISABLE_PLUGINS"
BUILTIN_PLUGIN_NAME = "trace_tasks.builtin"

#: The official annotation types, in the order the result dict reports them, and
#: the distribution that provides each. Only names: the core knows no geometry.
OFFICIAL_TYPES: Mapping[str, str] = {
    "bbox": "trace-plugins-bbox",
    "bbox_sequence": "trace-plugins-bbox",
    "bbox_set": "trace-plugins-bbox",
    "bbox_map": "trace-plugins-bbox",
    "bbox_set_map": "trace-plugins-bbox",
    "point_map": "trace-plugins-point",
    "point_set_map": "trace-plugins-point",
    "point": "trace-plugins-point",
    "segment": "trace-plugins-segment",
    "segment_set": "trace-plugins-segment",
    "point_sequence": "trace-plugins-point",
    "point_set": "trace-plugins-point",
}


@attrs.frozen(slots=True)
class PluginInfo:
    """What ``trace-tasks plugins`` reports for one registered plugin."""

    name: str
    distribution: str | None
    version: str | None
    entry_point: str | None
    annotation_types: tuple[str, ...]
    reward_ids: tuple[str, ...]
    answer_types: tuple[str, ...]
    hooks: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=False, value_serializer=lambda _i, _a, v: list(v) if isinstance(v, tuple) else v)


@attrs.frozen(slots=True)
class AnnotationTypeEntry:
    """One annotation type as the registry indexes it."""

    name: str
    plugin: str
    reward_ids: tuple[str, ...]
    current_reward_id: str
    parse: Callable[..., Any]


@attrs.frozen(slots=True)
class RewardEntry:
    """One reward id: which type it scores, whether it is current, who scores it."""

    reward_id: str
    annotation_type: str
    plugin: str
    current: bool
    score: Callable[..., Any]


@attrs.frozen(slots=True)
class Registry:
    """The plugin tables, built once; every lookup on the hot path is a dict access."""

    manager: pluggy.PluginManager
    plugins: tuple[PluginInfo, ...]
    annotation_types: Mapping[str, AnnotationTypeEntry]
    reward_ids: Mapping[str, RewardEntry]
    answer_types: Mapping[str, AnswerTypeSpec]
    #: ``annotation_type_<name>`` result keys, official order first.
    type_indicator_keys: tuple[tuple[str, str], ...]

    def annotation_type(self, name: str) -> AnnotationTypeEntry:
        """The entry for ``name``; raises for a missing official family or an unknown type."""
        entry = self.annotation_types.get(name)
        if entry is not None:
            return entry
        raise_for_unknown_type(name, self.annotation_types)
        raise AssertionError("unreachable")

    def current_reward_id(self, annotation_type: str) -> str:
        return self.annotation_type(annotation_type).current_reward_id

    def check_reward_id(self, reward_id: str) -> RewardEntry:
        """The entry of a current reward id; raises with near matches otherwise."""
        entry = self.reward_ids.get(reward_id)
        if entry is None:
            raise UnknownRewardIdError(
                f"unknown annotation reward id {reward_id!r}{suggest(reward_id, self.reward_ids)}; "
                f"installed: {', '.join(sorted(self.reward_ids)) or 'none'}"
            )
        if not entry.current:
            current = self.annotation_types[entry.annotation_type].current_reward_id
            raise UnknownRewardIdError(
                f"reward id {reward_id!r} is not current for annotation type {entry.annotation_type!r}: "
                f"the current id is {current!r}"
            )
        return entry


def raise_for_unknown_type(name: str, known: Iterable[str]) -> None:
    """Raise ``MissingFamilyError`` for an official type, ``ValueError`` otherwise."""
    distribution = OFFICIAL_TYPES.get(name)
    if distribution is not None:
        raise MissingFamilyError(name, distribution)
    raise ValueError(f"unsupported annotation type for reward_contract: {name}{suggest(name, known)}")


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _selected(ep: metadata.EntryPoint, allow: set[str] | None, block: set[str] | None) -> bool:
    dist = ep.dist.name if ep.dist is not None else None
    names = {ep.name} | ({dist} if dist else set())
    if allow is not None and not names & allow:
        return False
    return not (block and names & block)


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _describe(ep: metadata.EntryPoint) -> str:
    dist = f" of distribution {ep.dist.name} {ep.dist.version}" if ep.dist is not None else ""
    return f"entry point {ep.name!r} ({ep.value}){dist}"


def _load_entry_points(pm: pluggy.PluginManager, sources: dict[str, metadata.EntryPoint]) -> None:
    allow, block = _env_list(ALLOW_ENV), _env_list(BLOCK_ENV)
    for ep in _entry_points():
        if not _selected(ep, allow, block):
            continue
        if ep.name in sources:
            # pluggy would silently skip the second one: refuse instead.
            raise PluginConflictError(
                f"two plugins use the entry-point name {ep.name!r}: {_describe(sources[ep.name])} and {_describe(ep)}; "
                "uninstall one of them"
            )
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginLoadError(f"could not import {_describe(ep)}: {type(exc).__name__}: {exc}") from exc
        try:
            pm.register(plugin, name=ep.name)
        except pluggy.PluginValidationError as exc:
            raise PluginValidationError(f"{_describe(ep)} is not a valid trace_tasks plugin: {exc}") from exc
        sources[ep.name] = ep


def _impls_by_plugin(pm: pluggy.PluginManager, hook_name: str) -> dict[str, Callable[..., Any]]:
    hook = getattr(pm.hook, hook_name)
    spec_names = tuple(hook.spec.argnames)
    return {pm.get_name(impl.plugin): _accepting_spec_kwargs(impl, spec_names) for impl in hook.get_hookimpls()}


def _accepting_spec_kwargs(impl: Any, spec_names: tuple[str, ...]) -> Callable[..., Any]:
    """The implementation, callable with every spec argument by keyword.

    pluggy lets an implementation name only some of the spec's arguments; since
    the core calls implementations directly (not through pluggy), drop the
    others here. Without this, ``def trace_parse_annotation(value)`` would fail
    with a TypeError on every response, silently counted as a parse failure.
    """
    fn = impl.function
    names = tuple(impl.argnames)
    if set(names) == set(spec_names):
        return fn  # the usual case: no wrapper on the hot path
    return lambda **kwargs: fn(**{name: kwargs[name] for name in names})


def _call_each(pm: pluggy.PluginManager, hook_name: str) -> list[tuple[str, Any]]:
    """Call a collecting hook on every plugin, keeping who returned what."""
    out = []
    for name, fn in _impls_by_plugin(pm, hook_name).items():
        out.append((name, fn() or ()))
    return out


def build_registry(
    extra_plugins: Iterable[tuple[str, object]] = (), *, load_entry_points: bool = True
) -> Registry:
    """Load plugins and index them. ``extra_plugins`` are ``(name, plugin)`` pairs registered in-process."""
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(BuiltinAnswerTypes(), name=BUILTIN_PLUGIN_NAME)
    sources: dict[str, metadata.EntryPoint] = {}
    if load_entry_points:
        _load_entry_points(pm, sources)
    for name, plugin in extra_plugins:
        try:
            pm.register(plugin, name=name)
        except ValueError as exc:
            raise PluginConflictError(f"plugin name {name!r} is already registered") from exc
        except pluggy.PluginValidationError as exc:
            raise PluginValidationError(f"plugin {name!r} is not a valid trace_tasks plugin: {exc}") from exc
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        owner = pm.get_name(exc.plugin) if exc.plugin is not None else "?"
        where = _describe(sources[owner]) if owner in sources else f"plugin {owner!r}"
        raise PluginValidationError(f"{where} implements a hook that matches no trace_tasks hook spec: {exc}") from exc
    return _index(pm, sources)


def _index(pm: pluggy.PluginManager, sources: dict[str, metadata.EntryPoint]) -> Registry:
    parsers = _impls_by_plugin(pm, "trace_parse_annotation")
    scorers = _impls_by_plugin(pm, "trace_score_annotation")

    type_specs: dict[str, tuple[str, AnnotationTypeSpec]] = {}
    id_owner: dict[str, tuple[str, str]] = {}
    for plugin, specs in _call_each(pm, "trace_annotation_types"):
        for spec in specs:
            if not isinstance(spec, AnnotationTypeSpec):
                raise PluginValidationError(f"plugin {plugin!r} returned {spec!r} from trace_annotation_types")
            if spec.name in type_specs:
                raise PluginConflictError(
                    f"annotation type {spec.name!r} is claimed by both {type_specs[spec.name][0]!r} and {plugin!r}"
                )
            type_specs[spec.name] = (plugin, spec)
            for rid in spec.reward_ids:
                if rid in id_owner:
                    raise PluginConflictError(f"reward id {rid!r} is claimed by both {id_owner[rid][0]!r} and {plugin!r}")
                id_owner[rid] = (plugin, spec.name)
            if plugin not in parsers:
                raise PluginValidationError(f"plugin {plugin!r} declares {spec.name!r} but no trace_parse_annotation")
            if plugin not in scorers:
                raise PluginValidationError(f"plugin {plugin!r} declares {spec.name!r} but no trace_score_annotation")

    annotation_types: dict[str, AnnotationTypeEntry] = {}
    reward_ids: dict[str, RewardEntry] = {}
    for name, (plugin, spec) in type_specs.items():
        current = pm.hook.trace_resolve_reward_id(annotation_type=name)
        if current is None:
            raise PluginValidationError(f"no plugin resolves a current reward id for annotation type {name!r} ({plugin!r})")
        if current not in spec.reward_ids:
            raise PluginValidationError(
                f"the current reward id {current!r} resolved for {name!r} is not one {plugin!r} declares: {spec.reward_ids}"
            )
        annotation_types[name] = AnnotationTypeEntry(name, plugin, spec.reward_ids, current, parsers[plugin])
        for rid in spec.reward_ids:
            reward_ids[rid] = RewardEntry(rid, name, plugin, rid == current, scorers[plugin])

    answer_types: dict[str, AnswerTypeSpec] = {}
    answer_owner: dict[str, str] = {}
    for plugin, specs in _call_each(pm, "trace_answer_types"):
        for spec in specs:
            if not isinstance(spec, AnswerTypeSpec):
                raise PluginValidationError(f"plugin {plugin!r} returned {spec!r} from trace_answer_types")
            if spec.name in answer_types:
                raise PluginConflictError(f"answer type {spec.name!r} is claimed by both {answer_owner[spec.name]!r} and {plugin!r}")
            answer_types[spec.name] = spec
            answer_owner[spec.name] = plugin

    ordered = [t for t in OFFICIAL_TYPES if t in annotation_types]
    ordered += sorted(t for t in annotation_types if t not in OFFICIAL_TYPES)
    indicators = tuple((t, f"annotation_type_{t}") for t in ordered)

    infos = []
    for name, plugin_obj in pm.list_name_plugin():
        ep = sources.get(name)
        dist = ep.dist if ep is not None else None
        infos.append(
            PluginInfo(
                name=name,
                distribution=dist.name if dist is not None else None,
                version=dist.version if dist is not None else None,
                entry_point=f"{ep.name} = {ep.value}" if ep is not None else None,
                annotation_types=tuple(t for t, (p, _) in type_specs.items() if p == name),
                reward_ids=tuple(r for r, (p, _) in id_owner.items() if p == name),
                answer_types=tuple(a for a, p in answer_owner.items() if p == name),
                hooks=tuple(sorted(h.name for h in pm.get_hookcallers(plugin_obj) or ())),
            )
        )
    return Registry(pm, tuple(infos), annotation_types, reward_ids, answer_types, indicators)


_lock = threading.Lock()
_registry: Registry | None = None
_extra: list[tuple[str, object]] = []


def get_registry() -> Registry:
    """The process-wide registry, built on first use (thread-safe) and then cached."""
    global _registry
    registry = _registry
    if registry is None:
        with _lock:
            if _registry is None:
                _registry = build_registry(_extra)
            registry = _registry
    return registry


def register_plugin(plugin: object, name: str) -> None:
    """Register a plugin in-process (tests, notebooks); the registry is rebuilt on next use."""
    global _registry
    with _lock:
        if any(n == name for n, _ in _extra):
            raise PluginConflictError(f"plugin name {name!r} is already registered")
        candidate = [*_extra, (name, plugin)]
        registry = build_registry(candidate)  # validate now, so a bad plugin fails here
        _extra.append((name, plugin))
        _registry = registry


def unregister_plugin(name: str) -> None:
    """Undo :func:`register_plugin`."""
    global _registry
    with _lock:
        _extra[:] = [(n, p) for n, p in _extra if n != name]
        _registry = None


def reset_registry() -> None:
    """Forget the cached registry (after installing a family in a running process)."""
    global _registry
    with _lock:
        _registry = None
