"""What every trainer adapter shares: turning a trainer's row into scorer kwargs.

A trainer hands us, per response, a ground truth (the trace instance, as a
mapping or a JSON string holding ``answer_gt``, ``annotation_gt`` and
``reward_contract``), sometimes a per-row ``extra_info`` mapping, and options
from its config. :func:`scoring_kwargs` turns that into the keyword arguments of
:func:`trace_tasks.score_trace_response` (minus ``response``).

Rules:

* Model output never raises here; only the caller's row or options can. A row
  that is not an instance raises ``ValueError`` saying what is wrong, because a
  broken dataset row silently scored 0 would hide the bug for a whole run.
* Scorer options come from the adapter's keyword arguments (the trainer's
  config), then from same-named keys of the row's ``extra_info``, which win:
  a row can, say, switch itself to ``trace_reward_mode="answer"``.
* Keys a trainer adds on its own (``reward_router_address``, ``trainer_state``,
  dataset columns) are not scorer options and are ignored.
* Trainers that log a dict per response need the same keys on every row (verl
  and OpenRLHF concatenate them per key), so adapters report
  :func:`stable_keys`: every key the scorer always returns. The type-specific
  diagnostics, present only when an annotation parsed, are left out there.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np

from trace_tasks.core.reward_scoring import score_trace_response
from trace_tasks.options import resolve_options
from trace_tasks.plugins import get_registry

#: Scorer options a trainer config or a row's ``extra_info`` may set.
SCORER_OPTIONS: tuple[str, ...] = (
    "trace_reward_mode",
    "answer_weight",
    "annotation_weight",
    "format_weight",
    "trace_annotation_reward_formula",
    "point_half_life_px",
)
#: Instance fields that must be present in every ground truth.
REQUIRED_FIELDS: tuple[str, ...] = ("answer_gt", "annotation_gt", "reward_contract")
#: Optional instance fields that carry the image size for the point half-life.
SIZE_FIELDS: tuple[str, ...] = ("image_size", "image_sizes", "metadata")

_DEFAULTS: dict[str, Any] = {
    "trace_reward_mode": "answer_and_annotation",
    "answer_weight": 0.5,
    "annotation_weight": 0.5,
    "format_weight": 0.0,
    "trace_annotation_reward_formula": "gated",
    "point_half_life_px": None,
}


class MissingExtraError(ImportError):
    """An optional dependency of an integration is not installed."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"this trace_tasks integration needs {module!r}, which is not installed: "
            f"pip install 'trace-core[{extra}]'"
        ) from exc


def scorer_options(options: Mapping[str, Any], *, strict: bool) -> dict[str, Any]:
    """Pick the scorer options out of ``options`` and validate them now.

    ``strict``: unknown names raise (our own factories); otherwise they are
    ignored (trainers pass keyword arguments of their own).
    """
    unknown = sorted(set(options) - set(SCORER_OPTIONS))
    if strict and unknown:
        raise ValueError(f"unknown scorer option(s) {unknown}; accepted: {list(SCORER_OPTIONS)}")
    picked = {name: options[name] for name in SCORER_OPTIONS if name in options}
    merged = {**_DEFAULTS, **picked}
    resolve_options(*(merged[name] for name in SCORER_OPTIONS))  # raises ValueError naming the bad option
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
        raise ValueError("ground truth is nested more than 64 levels deep")
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


def load_instance(ground_truth: Any, *, where: str = "ground truth") -> dict[str, Any]:
    """The instance mapping of a trainer row: a mapping, or a JSON string (or bytes) of one.

    Raises ``ValueError`` (with ``where`` in the message) when it is not an
    instance: this is the dataset's fault, never the model's.
    """
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8", errors="replace")
    from_json = isinstance(ground_truth, str)
    if from_json:
        try:
            ground_truth = json.loads(ground_truth)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{where} is a string but not JSON: {exc}") from exc
    if not isinstance(ground_truth, Mapping):
        raise ValueError(
            f"{where} must be a trace instance (a mapping or its JSON string with "
            f"{', '.join(REQUIRED_FIELDS)}), got {type(ground_truth).__name__}"
        )
    missing = [name for name in REQUIRED_FIELDS if ground_truth.get(name) is None]
    if missing:
        raise ValueError(f"{where} lacks {missing}; a trace instance needs {list(REQUIRED_FIELDS)}")
    instance = {}
    for name in REQUIRED_FIELDS + SIZE_FIELDS:
        value = ground_truth.get(name)
        if isinstance(value, str) and name in REQUIRED_FIELDS:
            value = load_instance_field(value, name=name, where=where)
        elif not from_json:  # JSON holds no numpy values: skip the copy
            value = to_plain(value)
        instance[name] = value
    for name in REQUIRED_FIELDS:
        if not isinstance(instance[name], Mapping):
            raise ValueError(f"{where}: {name} must be a mapping, got {type(instance[name]).__name__}")
    return instance


def load_instance_field(value: str, *, name: str, where: str) -> Any:
    """A field stored as its own JSON string (one dataset column per field)."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: {name} is a string but not JSON: {exc}") from exc


def scoring_kwargs(
    ground_truth: Any,
    *,
    extra_info: Any = None,
    options: Mapping[str, Any] | None = None,
    where: str = "ground truth",
) -> dict[str, Any]:
    """Keyword arguments of ``score_trace_response`` for one row, without ``response``.

    ``options`` are already-picked scorer options (see :func:`scorer_options`);
    scorer option keys in a mapping ``extra_info`` override them for this row.
    """
    kwargs: dict[str, Any] = load_instance(ground_truth, where=where)
    if options:
        kwargs.update(options)
    if isinstance(extra_info, Mapping):
        extra_info = to_plain(extra_info)
        kwargs.update({name: extra_info[name] for name in SCORER_OPTIONS if name in extra_info})
        kwargs["extra_info"] = extra_info
    return kwargs


_stable_cache: tuple[object, tuple[str, ...]] | None = None


def stable_keys() -> tuple[str, ...]:
    """The keys ``score_trace_response`` returns for every call, in its order.

    Those are all keys except the per-type diagnostics; the one-hot
    ``annotation_type_*`` keys follow the installed families, so the set is
    computed once per plugin registry by scoring an empty response.
    """
    global _stable_cache
    registry = get_registry()
    cached = _stable_cache
    if cached is None or cached[0] is not registry:
        # Answer mode with no annotation target never reaches a family, so no diagnostics.
        probe = score_trace_response(
            response="", answer_gt=None, annotation_gt=None, reward_contract=None, trace_reward_mode="answer"
        )
        cached = (registry, tuple(probe))
        _stable_cache = cached
    return cached[1]


def stable_view(result: Mapping[str, float]) -> dict[str, float]:
    """``result`` restricted to :func:`stable_keys` (every key always present)."""
    return {key: float(result.get(key, 0.0)) for key in stable_keys()}
