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
* ``TRACE_TASKS_REWARD_IDS``: the user's pins, ``type=reward_id`` pairs
  separated by commas (``bbox=bbox_giou_v1``): which registered id is current
  for a type instead of its owner's default. :func:`pin_reward_id` does the
  same in-process and wins over the variable for the same type.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

import attrs
import pluggy

from trace_tasks.errors import (
    MissingFamilyError,
    PluginConflictError,
    PluginLoadError,
    PluginValidationError,
    RewardPinError,
    UnknownRewardIdError,
    UnknownTypeError,
    listed,
    suggest,
)
from trace_tasks.plugins import hookspecs
from trace_tasks.plugins._answer_types import ANSWER_REWARD_CONTRACT_ID, ANSWER_VERSIONS, BuiltinAnswerTypes
from trace_tasks.plugins._markers import PROJECT_NAME
from trace_tasks.plugins._records import AnnotationTypeSpec, AnswerTypeSpec, RewardIdSpec

ENTRY_POINT_GROUP = PROJECT_NAME
ALLOW_ENV = "TRACE_TASKS_PLUGINS"
BLOCK_ENV = "TRACE_TASKS_DISABLE_PLUGINS"
PINS_ENV = "TRACE_TASKS_REWARD_IDS"
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
    """One annotation type as the registry indexes it.

    ``reward_ids`` are every id declared for the type (the owner's first, then
    other plugins'); ``pinned_by`` says where the user's pin came from
    (``TRACE_TASKS_REWARD_IDS`` or ``pin_reward_id()``), ``None`` when the
    owner's default is current. ``draw`` is the owner's drawing hook, if any;
    ``native`` its ``trace_native_annotation``, ``scale`` its
    ``trace_scale_annotation``, ``frame`` its ``trace_frame_annotation`` and
    ``reread`` its ``trace_reread_annotation``, if any.
    """

    name: str
    plugin: str
    reward_ids: tuple[str, ...]
    current_reward_id: str
    parse: Callable[..., Any]
    default_reward_id: str = ""
    pinned_by: str | None = None
    spec: AnnotationTypeSpec | None = None
    draw: Callable[..., Any] | None = None
    native: Callable[..., Any] | None = None
    scale: Callable[..., Any] | None = None
    frame: Callable[..., Any] | None = None
    reread: Callable[..., Any] | None = None


@attrs.frozen(slots=True)
class RewardEntry:
    """One reward id: which type it scores, whether it is current, who scores (and explains) it.

    ``parse`` is the version's own parse of a prediction (``RewardIdSpec.parse_prediction``,
    called as a parse hook is: ``parse(annotation_type=..., value=...)``), ``None`` when the
    prediction is the owner's parse; ``spec`` is the declaring ``RewardIdSpec`` (``None`` for an
    owner's own id).
    """

    reward_id: str
    annotation_type: str
    plugin: str
    current: bool
    score: Callable[..., Any]
    explain: Callable[..., Any] | None = None
    description: str = ""
    parse: Callable[..., Any] | None = None
    spec: RewardIdSpec | None = None


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
    #: Reward ids declared for a type no installed plugin owns: unusable until the owner is installed.
    orphan_reward_ids: Mapping[str, RewardEntry] = attrs.field(factory=dict)
    #: Official annotation types whose family is installed but was not loaded, and the variable that
    #: filtered it out (:data:`ALLOW_ENV` or :data:`BLOCK_ENV`): ``{"bbox": "TRACE_TASKS_DISABLE_PLUGINS"}``.
    disabled: Mapping[str, str] = attrs.field(factory=dict)
    #: Answer types whose current answer reward id the user pinned (``{"number": "answer_relaxed_match_v0"}``);
    #: every other answer type is scored by ``answer_exact_match_v0``.
    answer_reward_ids: Mapping[str, str] = attrs.field(factory=dict)

    def current_answer_reward_id(self, answer_type: str) -> str:
        """The answer reward id contracts name for ``answer_type``: the user's pin, else ``answer_exact_match_v0``."""
        return self.answer_reward_ids.get(answer_type, ANSWER_REWARD_CONTRACT_ID)

    def annotation_type(self, name: str) -> AnnotationTypeEntry:
        """The entry for ``name``; raises for a missing official family or an unknown type."""
        entry = self.annotation_types.get(name)
        if entry is not None:
            return entry
        raise_for_unknown_type(name, self.annotation_types, self.disabled)

    def missing_family(self, name: str) -> MissingFamilyError | None:
        """The error for an official type whose family is not loaded (not installed, or disabled), else ``None``."""
        distribution = OFFICIAL_TYPES.get(name)
        if distribution is None or name in self.annotation_types:
            return None
        return MissingFamilyError(name, distribution, disabled_by=self.disabled.get(name))

    def family_advice(self, annotation_type: str) -> str:
        """What to do to get the official family of ``annotation_type`` loaded (install or enable it); "" for another type."""
        return _family_advice(annotation_type, self.disabled)

    def current_reward_id(self, annotation_type: str) -> str:
        return self.annotation_type(annotation_type).current_reward_id

    def not_current_message(self, reward_id: str) -> str | None:
        """Why ``reward_id`` cannot score now, or ``None`` when it is current for its type.

        For an id registered for its type but not current (another id is the
        owner's default, or the user pinned another), the message leads with
        what to do: rebuild the contracts (they will name the current id), or
        pin the id (back); then the facts.
        """
        entry = self.reward_ids.get(reward_id)
        if entry is None:
            orphan = self.orphan_reward_ids.get(reward_id)
            if orphan is not None:
                return (
                    f"reward id {reward_id!r} scores annotation type {orphan.annotation_type!r}, "
                    f"which no installed family owns{_install_hint(orphan.annotation_type, self.disabled)}"
                )
            return (
                f"unknown annotation reward id {reward_id!r}{suggest(reward_id, self.reward_ids)}; "
                f"installed: {', '.join(sorted(self.reward_ids)) or 'none'}"
            )
        if entry.current:
            return None
        name = entry.annotation_type
        type_entry = self.annotation_types[name]
        current = type_entry.current_reward_id
        why = f"pinned by {type_entry.pinned_by}" if type_entry.pinned_by else "the owner's default"
        in_process = f"trace_tasks.pin_reward_id({name!r}, {reward_id!r})"
        # An in-process pin wins over the variable for the same type: then only pin_reward_id() helps.
        how = in_process if type_entry.pinned_by == IN_PROCESS_PIN else f"{PINS_ENV}={name}={reward_id} or {in_process}"
        back = " back" if type_entry.pinned_by else ""
        return (
            f"reward id {reward_id!r} is not current: rebuild the contracts with resolve_reward_contract "
            f"(they will name {current!r}), or pin {reward_id!r}{back} to score them as they are ({how}); "
            f"{reward_id!r} is registered for annotation type {name!r}, whose current id is {current!r} ({why})"
        )

    def check_reward_id(self, reward_id: str) -> RewardEntry:
        """The entry of a current reward id; raises with near matches or the pin to set otherwise."""
        message = self.not_current_message(reward_id)
        if message is not None:
            raise UnknownRewardIdError(message)
        return self.reward_ids[reward_id]


#: ``pinned_by`` of a type pinned with :func:`pin_reward_id` (which wins over :data:`PINS_ENV`).
IN_PROCESS_PIN = "trace_tasks.pin_reward_id()"


def _family_advice(annotation_type: str, disabled: Mapping[str, str]) -> str:
    distribution = OFFICIAL_TYPES.get(annotation_type)
    if distribution is None:
        return ""
    variable = disabled.get(annotation_type)
    if variable == ALLOW_ENV:
        return f"{distribution} is installed but {ALLOW_ENV} leaves it out: add it there, or unset {ALLOW_ENV}"
    if variable:
        return f"{distribution} is installed but {variable} disables it: unset {variable}, or take the family out of it"
    return f"pip install {distribution}"


def _install_hint(annotation_type: str, disabled: Mapping[str, str]) -> str:
    advice = _family_advice(annotation_type, disabled)
    return f" ({advice})" if advice else ""


def raise_for_unknown_type(name: str, known: Iterable[str], disabled: Mapping[str, str] | None = None) -> NoReturn:
    """Raise :class:`MissingFamilyError` for an official type, :class:`UnknownTypeError` (a ``ValueError``) otherwise.

    ``disabled`` is :attr:`Registry.disabled`: an official type found there is
    installed but filtered out, and the error names the variable to change.
    """
    distribution = OFFICIAL_TYPES.get(name)
    if distribution is not None:
        raise MissingFamilyError(name, distribution, disabled_by=(disabled or {}).get(name))
    raise UnknownTypeError(f"unsupported annotation type for reward_contract: {name}{suggest(name, known)}")


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _skipped_by(ep: metadata.EntryPoint, allow: set[str] | None, block: set[str] | None) -> str | None:
    """The variable that filters ``ep`` out (:data:`ALLOW_ENV` or :data:`BLOCK_ENV`), or ``None`` to load it."""
    dist = ep.dist.name if ep.dist is not None else None
    names = {ep.name} | ({dist} if dist else set())
    if allow is not None and not names & allow:
        return ALLOW_ENV
    return BLOCK_ENV if block and names & block else None


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _describe(ep: metadata.EntryPoint) -> str:
    dist = f" of distribution {ep.dist.name} {ep.dist.version}" if ep.dist is not None else ""
    return f"entry point {ep.name!r} ({ep.value}){dist}"


class _Who:
    """Names plugins in error messages: the plugin and the distribution that installed it."""

    def __init__(self, sources: Mapping[str, metadata.EntryPoint]) -> None:
        self.sources = sources

    def __call__(self, plugin: str) -> str:
        ep = self.sources.get(plugin)
        if ep is not None and ep.dist is not None:
            return f"plugin {plugin!r} (distribution {ep.dist.name} {ep.dist.version})"
        if plugin == BUILTIN_PLUGIN_NAME:
            return "trace-core's built-in plugin"
        return f"plugin {plugin!r} (registered in-process)"

    def disable_hint(self, plugin: str) -> str:
        if plugin in self.sources:
            return f"; uninstall one, or set {BLOCK_ENV}={plugin} to disable the second"
        return "; unregister one of them"


_SPEC_NAMES = tuple(name for name in dir(hookspecs) if name.startswith("trace_"))


def _unmarked_hooks(pm: pluggy.PluginManager, plugin: object, name: str, where: str) -> None:
    """Refuse functions that look like hooks but are not registered as ones.

    pluggy silently ignores a function without ``@hookimpl`` and a misspelled
    unmarked one, so the plugin would load and then never be asked.
    """
    registered = {caller.name for caller in pm.get_hookcallers(plugin) or ()}
    for attribute in dir(plugin):
        if not attribute.startswith("trace_") or attribute in registered or not callable(getattr(plugin, attribute, None)):
            continue
        if attribute in _SPEC_NAMES:
            raise PluginValidationError(f"{where} defines {attribute} but it is not marked @trace_tasks.hookimpl", plugin=name)
        hint = suggest(attribute, _SPEC_NAMES)
        if hint:
            raise PluginValidationError(f"{where} defines {attribute}, which is not a trace_tasks hook{hint}", plugin=name)


def _register(pm: pluggy.PluginManager, plugin: object, name: str, where: str) -> None:
    try:
        pm.register(plugin, name=name)
    except ValueError as exc:
        raise PluginConflictError(f"plugin name {name!r} is already registered", plugin=name) from exc
    except pluggy.PluginValidationError as exc:
        raise PluginValidationError(f"{where} is not a valid trace_tasks plugin: {exc}", plugin=name) from exc
    _unmarked_hooks(pm, plugin, name, where)
    if not pm.get_hookcallers(plugin):
        # An entry point naming a module whose hooks live on an object in it
        # (``pkg.plugin`` instead of ``pkg.plugin:family``) would load and do nothing.
        raise PluginValidationError(
            f"{where} implements no trace_tasks hook (does the entry point name the right object?)", plugin=name
        )


def _load_entry_points(pm: pluggy.PluginManager, sources: dict[str, metadata.EntryPoint], skipped: dict[str, str]) -> None:
    """Load the selected entry points into ``pm``; ``skipped`` gets ``distribution -> variable`` for the others."""
    allow, block = _env_list(ALLOW_ENV), _env_list(BLOCK_ENV)
    for ep in _entry_points():
        variable = _skipped_by(ep, allow, block)
        if variable is not None:
            if ep.dist is not None:
                skipped.setdefault(ep.dist.name, variable)
            continue
        if ep.name in sources:
            # pluggy would silently skip the second one: refuse instead.
            raise PluginConflictError(
                f"two plugins use the entry-point name {ep.name!r}: {_describe(sources[ep.name])} and {_describe(ep)}; "
                f"uninstall one of them, or disable both with {BLOCK_ENV}={ep.name}",
                plugin=ep.name,
            )
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginLoadError(
                f"could not import {_describe(ep)}: {type(exc).__name__}: {exc} (set {BLOCK_ENV}={ep.name} to run without it)",
                plugin=ep.name,
            ) from exc
        _register(pm, plugin, ep.name, _describe(ep))
        sources[ep.name] = ep


def _impls_by_plugin(pm: pluggy.PluginManager, hook_name: str) -> dict[str, Callable[..., Any]]:
    hook = getattr(pm.hook, hook_name)
    spec_names = tuple(hook.spec.argnames)
    return {str(pm.get_name(impl.plugin)): _accepting_spec_kwargs(impl, spec_names) for impl in hook.get_hookimpls()}


def _accepting_spec_kwargs(impl: Any, spec_names: tuple[str, ...]) -> Callable[..., Any]:
    """The implementation, callable with every spec argument by keyword.

    pluggy lets an implementation name only some of the spec's arguments; since
    the core calls implementations directly (not through pluggy), drop the
    others here. Without this, ``def trace_parse_annotation(value)`` would fail
    with a TypeError on every response, silently counted as a parse failure.
    """
    fn: Callable[..., Any] = impl.function  # a pluggy HookImpl: the plugin's own function
    names = tuple(impl.argnames)
    if set(names) == set(spec_names):
        return fn  # the usual case: no wrapper on the hot path
    return lambda **kwargs: fn(**{name: kwargs[name] for name in names})


def _asked(plugin: str, hook_name: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
    """What a plugin's hook answers while the registry is built; its exception a :class:`PluginValidationError`.

    A hook that raises here would stop every command and every scoring call, whatever family they
    use, with a traceback naming neither the plugin nor how to run without it.
    """
    try:
        return fn(**kwargs)
    except Exception as exc:
        raise PluginValidationError(
            f"plugin {plugin!r} raised {type(exc).__name__}: {exc} from {hook_name} while the plugins were loaded "
            f"(fix the plugin, or set {BLOCK_ENV}={plugin} to run without it)",
            plugin=plugin,
        ) from exc


def _call_each(pm: pluggy.PluginManager, hook_name: str, record: type) -> list[tuple[str, Any]]:
    """Call a collecting hook on every plugin: ``(plugin, record)`` pairs, records type-checked."""
    out = []
    for name, fn in _impls_by_plugin(pm, hook_name).items():
        answer = _asked(name, hook_name, fn)
        if answer is None:
            continue
        if isinstance(answer, (record, str, bytes, Mapping)) or not isinstance(answer, Iterable):
            raise PluginValidationError(
                f"plugin {name!r} returned {answer!r} from {hook_name}; expected a list of {record.__name__} "
                f"(fix the plugin, or set {BLOCK_ENV}={name} to run without it)",
                plugin=name,
            )
        for item in _asked(name, hook_name, functools.partial(list, answer)):  # a generator's own code runs here
            if not isinstance(item, record):
                raise PluginValidationError(
                    f"plugin {name!r} returned {item!r} from {hook_name}; expected {record.__name__}", plugin=name
                )
            out.append((name, item))
    return out


def parse_pins(raw: str | None) -> dict[str, str]:
    """``TRACE_TASKS_REWARD_IDS`` as ``{annotation type: reward id}``; raises on a malformed entry."""
    pins: dict[str, str] = {}
    for part in (raw or "").split(","):
        if not part.strip():
            continue
        name, sep, rid = part.partition("=")
        if not sep or not name.strip() or not rid.strip():
            raise RewardPinError(f"{PINS_ENV}: {part.strip()!r} is not TYPE=REWARD_ID (example: bbox=bbox_giou_v1)")
        pins[name.strip()] = rid.strip()
    return pins


def build_registry(
    extra_plugins: Iterable[tuple[str, object]] = (),
    *,
    load_entry_points: bool = True,
    pins: Mapping[str, str] | None = None,
) -> Registry:
    """Load plugins and index them.

    ``extra_plugins`` are ``(name, plugin)`` pairs registered in-process;
    ``pins`` are in-process pins, applied over ``TRACE_TASKS_REWARD_IDS``.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(BuiltinAnswerTypes(), name=BUILTIN_PLUGIN_NAME)
    sources: dict[str, metadata.EntryPoint] = {}
    skipped: dict[str, str] = {}
    if load_entry_points:
        _load_entry_points(pm, sources, skipped)
    for name, plugin in extra_plugins:
        _register(pm, plugin, name, f"plugin {name!r}")
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        owner = pm.get_name(exc.plugin) if exc.plugin is not None else None
        where = _describe(sources[owner]) if owner in sources else f"plugin {owner or '?'!r}"
        hint = next((suggest(h, _SPEC_NAMES) for h in dir(exc.plugin) if h.startswith("trace_") and h not in _SPEC_NAMES), "")
        raise PluginValidationError(
            f"{where} implements a hook that matches no trace_tasks hook spec: {exc}{hint}", plugin=owner
        ) from exc
    all_pins = {pin: (rid, PINS_ENV) for pin, rid in parse_pins(os.environ.get(PINS_ENV)).items()}
    all_pins.update({pin: (rid, "pin_reward_id()") for pin, rid in (pins or {}).items()})
    return _index(pm, sources, all_pins, skipped)


def _owned_types(pm: pluggy.PluginManager, who: _Who) -> dict[str, tuple[str, AnnotationTypeSpec]]:
    owners: dict[str, tuple[str, AnnotationTypeSpec]] = {}
    for plugin, spec in _call_each(pm, "trace_annotation_types", AnnotationTypeSpec):
        if spec.name in owners:
            first = owners[spec.name][0]
            raise PluginConflictError(
                f"annotation type {spec.name!r} is owned by both {who(first)} and {who(plugin)}{who.disable_hint(plugin)}",
                plugin=plugin,
            )
        owners[spec.name] = (plugin, spec)
    return owners


def _declared_ids(
    pm: pluggy.PluginManager,
    owners: Mapping[str, tuple[str, AnnotationTypeSpec]],
    who: _Who,
    specs: dict[str, RewardIdSpec],
) -> dict[str, tuple[str, str, str]]:
    """reward id -> (declaring plugin, annotation type, description), owners' ids first; ``specs`` gets the
    ``RewardIdSpec`` of each id declared through ``trace_reward_ids``."""
    declared: dict[str, tuple[str, str, str]] = {}

    def add(plugin: str, rid: str, annotation_type: str, description: str) -> None:
        if rid in declared:
            first = declared[rid][0]
            raise PluginConflictError(
                f"reward id {rid!r} is declared by both {who(first)} and {who(plugin)}{who.disable_hint(plugin)}",
                plugin=plugin,
            )
        declared[rid] = (plugin, annotation_type, description)

    for name, (plugin, spec) in owners.items():
        for rid in spec.reward_ids:
            add(plugin, rid, name, spec.description)
    for plugin, item in _call_each(pm, "trace_reward_ids", RewardIdSpec):
        add(plugin, item.reward_id, item.annotation_type, item.description)
        specs[item.reward_id] = item
    return declared


def _prediction_parse(spec: RewardIdSpec | None) -> Callable[..., Any] | None:
    """A version's own prediction parse, called as a parse hook is (``annotation_type=``, ``value=``)."""
    parse_prediction = spec.parse_prediction if spec is not None else None
    if parse_prediction is None:
        return None

    def parse(annotation_type: str, value: Any) -> Any:
        return parse_prediction(value)

    return parse


def _defaults(
    pm: pluggy.PluginManager,
    owners: Mapping[str, tuple[str, AnnotationTypeSpec]],
    declared: Mapping[str, tuple[str, str, str]],
    who: _Who,
) -> dict[str, str]:
    """Each type's default id, asked of every plugin separately so a non-owner cannot answer."""
    resolvers = _impls_by_plugin(pm, "trace_resolve_reward_id")
    defaults: dict[str, str] = {}
    for name, (owner, spec) in owners.items():
        for plugin, resolve in resolvers.items():
            answer = _asked(plugin, "trace_resolve_reward_id", resolve, annotation_type=name)
            if plugin == owner:
                defaults[name] = answer
            elif answer is not None:
                raise PluginValidationError(
                    f"{who(plugin)} answers trace_resolve_reward_id for annotation type {name!r}, which {who(owner)} "
                    f"owns: only a type's owner names its default id (it must return None for other types); "
                    f"a user who wants {answer!r} pins it with {PINS_ENV}={name}={answer}",
                    plugin=plugin,
                )
        default = defaults.get(name)
        if default is None:
            raise PluginValidationError(
                f"{who(owner)} declares annotation type {name!r} but resolves no default reward id for it", plugin=owner
            )
        if default not in spec.reward_ids:
            raise PluginValidationError(
                f"the default reward id {default!r} that {who(owner)} resolves for {name!r} is not one it declares: {spec.reward_ids}",
                plugin=owner,
            )
    return defaults


def _answer_pin(name: str, rid: str, source: str, fix: str | None, answer_pins: dict[str, str]) -> None:
    """An answer reward version pinned for an answer type (``number=answer_relaxed_match_v0``), checked."""
    if rid != ANSWER_REWARD_CONTRACT_ID and name not in ANSWER_VERSIONS[rid]:
        scored = ", ".join(ANSWER_VERSIONS[rid])
        advice = fix or "pin it for an answer type it scores"
        raise RewardPinError(f"{advice}: {source} pins {name}={rid}, but {rid!r} scores only the answer types {scored}")
    if rid != ANSWER_REWARD_CONTRACT_ID:
        answer_pins[name] = rid


def _apply_pins(
    pins: Mapping[str, tuple[str, str]],
    owners: Mapping[str, tuple[str, AnnotationTypeSpec]],
    declared: Mapping[str, tuple[str, str, str]],
    defaults: dict[str, str],
    disabled: Mapping[str, str],
    answer_pins: dict[str, str],
) -> dict[str, str]:
    """The current id of each type, with the user's pins checked and applied; returns ``type -> pin source``.

    A pin of an answer reward version for an answer type goes to ``answer_pins`` instead.

    A bad pin's message leads with what to do (correct or remove the pin, load
    the family), then says what is wrong; the type's registered ids come last.
    """
    pinned_by: dict[str, str] = {}
    for name, (rid, source) in pins.items():
        fix = f"correct or remove {name}={rid} in {PINS_ENV}" if source == PINS_ENV else None
        if name not in owners and (rid in ANSWER_VERSIONS or rid == ANSWER_REWARD_CONTRACT_ID):
            _answer_pin(name, rid, source, fix, answer_pins)
            continue
        if name not in owners:
            family = _family_advice(name, disabled)
            advice = fix or "pin a type an installed family owns"
            raise RewardPinError(
                f"{advice}{f', or load its family ({family})' if family else ''}: "
                f"{source} pins annotation type {name!r}, which no installed family owns{'' if family else suggest(name, owners)}"
            )
        offered = [r for r, (_, t, _) in declared.items() if t == name]
        if rid not in offered:
            elsewhere = declared.get(rid)
            why = f"it scores {elsewhere[1]!r}" if elsewhere else f"no installed plugin declares it{suggest(rid, offered)}"
            advice = f"{fix} (pin an id registered for {name!r})" if fix else f"pin an id registered for {name!r}"
            raise RewardPinError(
                f"{advice}: {source} pins {name}={rid}, but {why}; ids registered for {name!r}: {listed(offered)}"
            )
        defaults[name] = rid
        pinned_by[name] = PINS_ENV if source == PINS_ENV else IN_PROCESS_PIN
    return pinned_by


def _index(
    pm: pluggy.PluginManager,
    sources: dict[str, metadata.EntryPoint],
    pins: Mapping[str, tuple[str, str]],
    skipped: Mapping[str, str],
) -> Registry:
    """The registry's tables; ``skipped`` maps the distributions the environment filtered out to the variable."""
    who = _Who(sources)
    parsers = _impls_by_plugin(pm, "trace_parse_annotation")
    scorers = _impls_by_plugin(pm, "trace_score_annotation")
    explainers = _impls_by_plugin(pm, "trace_explain_annotation")
    drawers = _impls_by_plugin(pm, "trace_draw_annotation")
    natives = _impls_by_plugin(pm, "trace_native_annotation")
    scalers = _impls_by_plugin(pm, "trace_scale_annotation")
    framers = _impls_by_plugin(pm, "trace_frame_annotation")
    rereaders = _impls_by_plugin(pm, "trace_reread_annotation")

    owners = _owned_types(pm, who)
    for name, (plugin, _) in owners.items():
        if plugin not in parsers:
            raise PluginValidationError(
                f"{who(plugin)} declares annotation type {name!r} but no trace_parse_annotation", plugin=plugin
            )
    specs: dict[str, RewardIdSpec] = {}
    declared = _declared_ids(pm, owners, who, specs)
    for rid, (plugin, _, _) in declared.items():
        if plugin not in scorers:
            raise PluginValidationError(f"{who(plugin)} declares reward id {rid!r} but no trace_score_annotation", plugin=plugin)
    current = _defaults(pm, owners, declared, who)
    defaults = dict(current)
    disabled = {t: skipped[dist] for t, dist in OFFICIAL_TYPES.items() if dist in skipped and t not in owners}
    answer_pins: dict[str, str] = {}
    pinned_by = _apply_pins(pins, owners, declared, current, disabled, answer_pins)

    reward_ids: dict[str, RewardEntry] = {}
    orphans: dict[str, RewardEntry] = {}
    for rid, (plugin, name, description) in declared.items():
        declared_spec = specs.get(rid)
        entry = RewardEntry(
            rid,
            name,
            plugin,
            current.get(name) == rid,
            scorers[plugin],
            explainers.get(plugin),
            description,
            _prediction_parse(declared_spec),
            declared_spec,
        )
        (reward_ids if name in owners else orphans)[rid] = entry
    annotation_types = {
        name: AnnotationTypeEntry(
            name=name,
            plugin=plugin,
            reward_ids=tuple(r for r, e in reward_ids.items() if e.annotation_type == name),
            current_reward_id=current[name],
            parse=parsers[plugin],
            default_reward_id=defaults[name],
            pinned_by=pinned_by.get(name),
            spec=spec,
            draw=drawers.get(plugin),
            native=natives.get(plugin),
            scale=scalers.get(plugin),
            frame=framers.get(plugin),
            reread=rereaders.get(plugin),
        )
        for name, (plugin, spec) in owners.items()
    }

    answer_types: dict[str, AnswerTypeSpec] = {}
    answer_owner: dict[str, str] = {}
    for plugin, spec in _call_each(pm, "trace_answer_types", AnswerTypeSpec):
        if spec.name in answer_types:
            first = answer_owner[spec.name]
            raise PluginConflictError(
                f"answer type {spec.name!r} is claimed by both {who(first)} and {who(plugin)}{who.disable_hint(plugin)}",
                plugin=plugin,
            )
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
                annotation_types=tuple(t for t, (p, _) in owners.items() if p == name),
                reward_ids=tuple(r for r, (p, _, _) in declared.items() if p == name),
                answer_types=tuple(a for a, p in answer_owner.items() if p == name),
                hooks=tuple(sorted(h.name for h in pm.get_hookcallers(plugin_obj) or ())),
            )
        )
    return Registry(pm, tuple(infos), annotation_types, reward_ids, answer_types, indicators, orphans, disabled, answer_pins)


_lock = threading.Lock()
_current: Registry | None = None
_extra: list[tuple[str, object]] = []
_pins: dict[str, str] = {}


def get_registry() -> Registry:
    """The process-wide registry, built on first use (thread-safe) and then cached."""
    global _current
    registry = _current
    if registry is None:
        with _lock:
            if _current is None:
                _current = build_registry(_extra, pins=_pins)
            registry = _current
    return registry


def register_plugin(plugin: object, name: str) -> None:
    """Register a plugin in-process (tests, notebooks); the registry is rebuilt on next use."""
    global _current
    with _lock:
        if any(n == name for n, _ in _extra):
            raise PluginConflictError(f"plugin name {name!r} is already registered", plugin=name)
        candidate = [*_extra, (name, plugin)]
        registry = build_registry(candidate, pins=_pins)  # validate now, so a bad plugin fails here
        _extra.append((name, plugin))
        _current = registry


def unregister_plugin(name: str) -> None:
    """Undo :func:`register_plugin`."""
    global _current
    with _lock:
        _extra[:] = [(n, p) for n, p in _extra if n != name]
        _current = None


def pin_reward_id(annotation_type: str, reward_id: str) -> None:
    """Make ``reward_id`` the current id of ``annotation_type`` in this process.

    The user's choice, never a plugin's: it wins over the owner's default and
    over ``TRACE_TASKS_REWARD_IDS`` for the same type. Checked at once: an id
    not registered for the type raises :class:`~trace_tasks.errors.RewardPinError`
    and changes nothing. Contracts resolved afterwards carry the pinned id;
    contracts carrying another id of the type stop scoring (and stop validating).
    """
    global _current
    with _lock:
        candidate = {**_pins, annotation_type: reward_id}
        registry = build_registry(_extra, pins=candidate)
        _pins.clear()
        _pins.update(candidate)
        _current = registry


def unpin_reward_id(annotation_type: str) -> None:
    """Undo :func:`pin_reward_id` for ``annotation_type`` (the variable's pin, if any, applies again)."""
    global _current
    with _lock:
        _pins.pop(annotation_type, None)
        _current = None


def pinned_reward_ids() -> dict[str, str]:
    """The pins in force, from ``TRACE_TASKS_REWARD_IDS`` and :func:`pin_reward_id`: ``{type: reward id}``."""
    registry = get_registry()
    return {name: entry.current_reward_id for name, entry in registry.annotation_types.items() if entry.pinned_by}


def reset_registry() -> None:
    """Forget the cached registry (after installing a family, or changing the environment variables)."""
    global _current
    with _lock:
        _current = None
