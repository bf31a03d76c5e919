"""Parsing the five collection shapes over a family's item parser.

A string value is read once (JSON, else the bounded literal reader); a set or
sequence may be given as a wrapper mapping (``{"bboxes": [...]}``) or, when the
primitive allows it, as one flat item; map keys are stripped, non-empty and
unique after stripping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trace_tasks.errors import AnnotationParseError, FamilyDefinitionError
from trace_tasks.family._primitives import Primitive
from trace_tasks.limits import MAX_COLLECTION_ITEMS
from trace_tasks.plugins import SHAPES
from trace_tasks.reading import from_numpy, is_mapping, read_annotation_string


def _read(value: Any) -> Any:
    if isinstance(value, str):
        parsed, ok = read_annotation_string(value)
        if not ok:
            raise AnnotationParseError("annotation string is neither JSON nor a literal")
        return parsed
    return from_numpy(value)


def _as_list(value: Any) -> list[Any]:
    value = from_numpy(value)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_COLLECTION_ITEMS:
            raise AnnotationParseError(f"more than {MAX_COLLECTION_ITEMS} items")
        return list(value)
    raise AnnotationParseError("expected a list")


def _item_parser(prim: Primitive) -> Callable[[Any], Any]:
    if prim.parse_item is None:
        raise FamilyDefinitionError(f"primitive {prim.name!r} has no parse_item: only the type's owner parses")
    return prim.parse_item


def parse_collection(value: Any, prim: Primitive) -> list[Any]:
    """Parse a set or sequence of ``prim`` items (string, wrapper and single-item forms)."""
    parse_item = _item_parser(prim)
    value = _read(value)
    if prim.wrapper_key is not None and is_mapping(value) and prim.wrapper_key in value:
        value = value[prim.wrapper_key]
    if prim.promote_single and prim.is_item is not None and prim.is_item(value):
        return [parse_item(value)]
    return [parse_item(item) for item in _as_list(value)]


def parse_map(value: Any, parse_value: Callable[[Any], Any]) -> dict[str, Any]:
    """Parse a keyed map: keys stripped, non-empty, unique after stripping, case kept."""
    value = _read(value)
    if not is_mapping(value):
        raise AnnotationParseError("expected a mapping of role keys")
    if len(value) > MAX_COLLECTION_ITEMS:
        raise AnnotationParseError(f"more than {MAX_COLLECTION_ITEMS} keys")
    out: dict[str, Any] = {}
    for raw_key, raw in value.items():
        key = (raw_key if isinstance(raw_key, str) else str(raw_key)).strip()
        if not key:
            raise AnnotationParseError("empty map key")
        if key in out:
            raise AnnotationParseError(f"duplicate map key {key!r} after stripping")
        out[key] = parse_value(raw)
    return out


def make_parser(shape: str, prim: Primitive) -> Callable[[Any], Any]:
    """The parse function of ``shape`` over ``prim``."""
    parse_item = _item_parser(prim)
    if shape == "scalar":
        return lambda value: parse_item(_read(value))
    if shape in ("set", "sequence"):
        return lambda value: parse_collection(value, prim)
    if shape == "map":
        # Map values are scalar items taken as they are: a string value is rejected.
        return lambda value: parse_map(value, parse_item)
    if shape == "set_map":
        return lambda value: parse_map(value, lambda v: parse_collection(v, prim))
    raise FamilyDefinitionError(f"unknown shape {shape!r}; expected one of {SHAPES}")
