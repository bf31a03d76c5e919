"""Parsing the five collection shapes over a family's item parser.

A string value is read once (JSON, else the bounded literal reader); a set or
sequence may be given as a wrapper mapping (``{"bboxes": [...]}``) or, when the
primitive allows it, as one flat item; map keys are stripped, non-empty and
unique after stripping. A collection holds at most ``MAX_COLLECTION_ITEMS``
items, and a set-map at most ``MAX_ANNOTATION_ITEMS`` over all its keys (checked
before each key's items are parsed, so no more than that many are).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trace_tasks.errors import AnnotationParseError, FamilyDefinitionError
from trace_tasks.family._primitives import Primitive
from trace_tasks.limits import MAX_ANNOTATION_ITEMS, MAX_COLLECTION_ITEMS
from trace_tasks.plugins import SHAPES
from trace_tasks.reading import from_numpy, is_mapping, read_annotation_string
from trace_tasks.scoring import native_parser


def _read(value: Any) -> Any:
    if isinstance(value, str):
        parsed, ok = read_annotation_string(value)
        if not ok:
            raise AnnotationParseError("annotation string is neither JSON nor a literal")
        return parsed
    return from_numpy(value)


def _as_list(value: Any, max_items: int = MAX_COLLECTION_ITEMS) -> list[Any]:
    value = from_numpy(value)
    if isinstance(value, (list, tuple)):
        if len(value) > max_items:
            raise _too_many(max_items)
        return list(value)
    raise AnnotationParseError("expected a list")


def _too_many(max_items: int) -> AnnotationParseError:
    if max_items < MAX_COLLECTION_ITEMS:  # what was left of a set-map's allowance
        return AnnotationParseError(f"more than MAX_ANNOTATION_ITEMS ({MAX_ANNOTATION_ITEMS}) items over all keys")
    return AnnotationParseError(f"more than {MAX_COLLECTION_ITEMS} items")


def _item_parser(prim: Primitive) -> Callable[[Any], Any]:
    if prim.parse_item is None:
        raise FamilyDefinitionError(f"primitive {prim.name!r} has no parse_item: only the type's owner parses")
    return prim.parse_item


def parse_collection(value: Any, prim: Primitive) -> list[Any]:
    """Parse a set or sequence of ``prim`` items (string, wrapper and single-item forms)."""
    return _collection(value, prim, MAX_COLLECTION_ITEMS)


def _collection(value: Any, prim: Primitive, max_items: int) -> list[Any]:
    """:func:`parse_collection` of at most ``max_items`` items, refused before any item is parsed."""
    parse_item = _item_parser(prim)
    value = _read(value)
    if prim.wrapper_key is not None and is_mapping(value) and prim.wrapper_key in value:
        value = value[prim.wrapper_key]
    if prim.promote_single and prim.is_item is not None and prim.is_item(value):
        if max_items < 1:
            raise _too_many(max_items)
        return [parse_item(value)]
    return [parse_item(item) for item in _as_list(value, max_items)]


def parse_set_map(value: Any, prim: Primitive) -> dict[str, list[Any]]:
    """Parse a set-map: :func:`parse_map` of collections, at most ``MAX_ANNOTATION_ITEMS`` items over all keys."""
    left = MAX_ANNOTATION_ITEMS

    def one_key(raw: Any) -> list[Any]:
        nonlocal left
        items = _collection(raw, prim, min(left, MAX_COLLECTION_ITEMS))
        left -= len(items)
        return items

    return parse_map(value, one_key)


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
    """The parse function of ``shape`` over ``prim``.

    In the native build, a primitive that declares its kernel (``Primitive.native``)
    has plain JSON values parsed by the native module's restatement of its
    ``parse_item`` (the same values, without a Python call per item: every label the
    server or ``validate`` meets); anything else is parsed here.
    """
    python = _python_parser(shape, prim)
    native = native_parser(prim.native, shape) if prim.native else None
    if native is None:
        return python

    def parse(value: Any) -> Any:
        parsed = native(value)
        return python(value) if parsed is None else parsed

    return parse


def _python_parser(shape: str, prim: Primitive) -> Callable[[Any], Any]:
    parse_item = _item_parser(prim)
    if shape == "scalar":
        return lambda value: parse_item(_read(value))
    if shape in ("set", "sequence"):
        return lambda value: _collection(value, prim, MAX_COLLECTION_ITEMS)  # one call less per response
    if shape == "map":
        # Map values are scalar items taken as they are: a string value is rejected.
        return lambda value: parse_map(value, parse_item)
    if shape == "set_map":
        return lambda value: parse_set_map(value, prim)
    raise FamilyDefinitionError(f"unknown shape {shape!r}; expected one of {SHAPES}")
