"""Checking a value against a JSON Schema: the subset of draft 2020-12 that value schemas use.

Answer and annotation types declare the JSON Schema of a value in canonical
form (``AnswerTypeSpec.json_schema``, ``AnnotationTypeSpec.json_schema``), and
``trace_tasks.response_json_schema`` assembles them into the schema of a final
object. :func:`schema_problems` checks a value against such a schema without
any dependency, for the family kit and the tests; :func:`unsupported_keywords`
lists what it would not check.

Supported: boolean schemas; ``type`` (a name or a list); ``enum``, ``const``;
``properties``, ``required``, ``additionalProperties``, ``propertyNames``,
``minProperties``, ``maxProperties``; ``items``, ``prefixItems``,
``minItems``, ``maxItems``; ``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum``; ``minLength``, ``maxLength``, ``pattern`` (Python's
``re.search``); ``anyOf``, ``oneOf``, ``allOf``, ``not``; ``$ref`` to ``#`` or
``#/$defs/NAME``. Annotation keywords (``$schema``, ``title``,
``description``, ``$comment``, ``examples``, ``default``, ``$defs``...) are
ignored.

Values are Python values as JSON gives them: a ``bool`` is never a number, an
``int`` or an integral ``float`` is an ``integer``, a non-finite float is no
JSON value at all, a tuple is an array, a mapping with a key that is not a
string is no JSON object.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JSON_SCHEMA_DIALECT", "ROLE_KEY_SCHEMA", "SUPPORTED_KEYWORDS", "schema_problems", "unsupported_keywords"]

#: The ``$schema`` of every schema trace_tasks writes.
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: The ``propertyNames`` of a map's role keys as the parser takes them: non-empty, no whitespace at
#: either end (a key without it is its own stripped form, so two keys never become one). ``\s`` is
#: Unicode whitespace in Python's ``re``, as ``str.strip`` strips it. The ``not`` guards Python's
#: ``$``, which also matches before a final newline (ECMA-262's, which decoders use, does not).
ROLE_KEY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "pattern": "^\\S(?:[\\s\\S]*\\S)?$",
    "not": {"pattern": "\\s$"},
}

_CHECKED = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "$ref",
    }
)
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default", "deprecated", "readOnly", "writeOnly"}
)
#: Every keyword :func:`schema_problems` understands (the checked ones and the ignored annotations).
SUPPORTED_KEYWORDS = _CHECKED | _ANNOTATIONS
#: Nesting deeper than this (in the value) is reported, not followed.
_MAX_DEPTH = 200
_SCHEMA_KEYS = ("additionalProperties", "propertyNames", "items", "not")
_SCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")


def unsupported_keywords(schema: Any) -> list[str]:
    """The keywords in ``schema`` (at any depth) that :func:`schema_problems` does not understand, sorted."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        found.update(str(key) for key in node if key not in SUPPORTED_KEYWORDS)
        for key in _SCHEMA_KEYS:
            if key in node:
                stack.append(node[key])
        for key in _SCHEMA_LISTS:
            if isinstance(node.get(key), Sequence):
                stack.extend(node[key])
        for key in ("properties", "$defs"):
            if isinstance(node.get(key), Mapping):
                stack.extend(node[key].values())
    return sorted(found)


def schema_problems(value: Any, schema: Any, *, limit: int = 10) -> list[str]:
    """What is wrong with ``value`` under ``schema``: ``"PATH: MESSAGE"`` lines (``$`` is the value), at most ``limit``.

    An empty list means the value validates.
    """
    out: list[str] = []
    _Check(schema, out, limit).check(value, schema, "$", 0)
    return out


def _json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object" if all(isinstance(key, str) for key in value) else None
    return None


def _is(kind: str | None, wanted: str) -> bool:
    return kind == wanted or (wanted == "number" and kind == "integer")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (``1 == 1.0``), booleans apart from numbers, arrays and objects deep."""
    ka, kb = _json_type(a), _json_type(b)
    if ka in ("integer", "number") and kb in ("integer", "number"):
        return bool(a == b)
    if ka != kb:
        return False
    if ka == "array":
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if ka == "object":
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Check:
    def __init__(self, root: Any, out: list[str], limit: int) -> None:
        self.root = root
        self.out = out
        self.limit = limit

    def add(self, path: str, message: str) -> None:
        if len(self.out) < self.limit:
            self.out.append(f"{path}: {message}")

    def quietly(self, value: Any, schema: Any, path: str, depth: int) -> bool:
        """Whether ``value`` validates, without reporting (for ``anyOf``, ``oneOf``, ``not``)."""
        probe = _Check(self.root, [], 1)
        probe.check(value, schema, path, depth)
        return not probe.out

    def resolve(self, ref: Any, path: str) -> Any:
        if ref == "#":
            return self.root
        if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(self.root, Mapping):
            defs = self.root.get("$defs")
            name = ref[len("#/$defs/") :]
            if isinstance(defs, Mapping) and name in defs:
                return defs[name]
        self.add(path, f"$ref {ref!r} does not name '#' or '#/$defs/NAME' of this schema")
        return True

    def check(self, value: Any, schema: Any, path: str, depth: int) -> None:  # noqa: C901  one keyword per branch
        if schema is True:
            return
        if schema is False:
            self.add(path, "no value is allowed here")
            return
        if not isinstance(schema, Mapping):
            self.add(path, f"the schema here is {type(schema).__name__}, not an object or a boolean")
            return
        if depth > _MAX_DEPTH:
            self.add(path, f"nested more than {_MAX_DEPTH} levels")
            return
        kind = _json_type(value)
        if kind is None:
            self.add(path, f"{_shown(value)} is no JSON value")
            return
        if "$ref" in schema:
            self.check(value, self.resolve(schema["$ref"], path), path, depth + 1)
        wanted = schema.get("type")
        if wanted is not None:
            names = [wanted] if isinstance(wanted, str) else list(wanted)
            if not any(_is(kind, name) for name in names):
                self.add(path, f"expected {' or '.join(map(str, names))}, got {kind} {_shown(value)}")
                return
        if "enum" in schema and not any(_equal(value, option) for option in schema["enum"]):
            self.add(path, f"{_shown(value)} is not one of {_shown(list(schema['enum']))}")
        if "const" in schema and not _equal(value, schema["const"]):
            self.add(path, f"{_shown(value)} is not {_shown(schema['const'])}")
        if kind in ("integer", "number"):
            self.number(value, schema, path)
        elif kind == "string":
            self.string(value, schema, path)
        elif kind == "array":
            self.array(value, schema, path, depth)
        elif kind == "object":
            self.object(value, schema, path, depth)
        for sub in schema.get("allOf", ()):
            self.check(value, sub, path, depth + 1)
        if "anyOf" in schema and not any(self.quietly(value, sub, path, depth + 1) for sub in schema["anyOf"]):
            self.add(path, f"{_shown(value)} matches none of the anyOf schemas")
        if "oneOf" in schema:
            matched = sum(self.quietly(value, sub, path, depth + 1) for sub in schema["oneOf"])
            if matched != 1:
                self.add(path, f"{_shown(value)} matches {matched} of the oneOf schemas, not exactly one")
        if "not" in schema and self.quietly(value, schema["not"], path, depth + 1):
            self.add(path, f"{_shown(value)} matches the schema it must not match")

    def number(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        if "minimum" in schema and value < schema["minimum"]:
            self.add(path, f"{value!r} is less than the minimum {schema['minimum']!r}")
        if "maximum" in schema and value > schema["maximum"]:
            self.add(path, f"{value!r} is more than the maximum {schema['maximum']!r}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            self.add(path, f"{value!r} is not more than {schema['exclusiveMinimum']!r}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            self.add(path, f"{value!r} is not less than {schema['exclusiveMaximum']!r}")

    def string(self, value: str, schema: Mapping[str, Any], path: str) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            self.add(path, f"{_shown(value)} is shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.add(path, f"{_shown(value)} is longer than {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            self.add(path, f"{_shown(value)} does not match the pattern {schema['pattern']!r}")

    def array(self, value: Sequence[Any], schema: Mapping[str, Any], path: str, depth: int) -> None:
        if "minItems" in schema and len(value) < schema["minItems"]:
            self.add(path, f"expected at least {schema['minItems']} items, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            self.add(path, f"expected at most {schema['maxItems']} items, got {len(value)}")
        prefix = list(schema.get("prefixItems", ()))
        for i, item in enumerate(value[: len(prefix)]):
            self.check(item, prefix[i], f"{path}[{i}]", depth + 1)
        if "items" in schema:
            for i in range(len(prefix), len(value)):
                self.check(value[i], schema["items"], f"{path}[{i}]", depth + 1)
                if len(self.out) >= self.limit:
                    return

    def object(self, value: Mapping[str, Any], schema: Mapping[str, Any], path: str, depth: int) -> None:
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            self.add(path, f"expected at least {schema['minProperties']} keys, got {len(value)}")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            self.add(path, f"expected at most {schema['maxProperties']} keys, got {len(value)}")
        missing = [key for key in schema.get("required", ()) if key not in value]
        if missing:
            self.add(path, f"missing required key{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}[{key!r}]"
            if "propertyNames" in schema:
                self.check(key, schema["propertyNames"], where, depth + 1)
            if key in properties:
                self.check(item, properties[key], where, depth + 1)
            elif extra is False:
                self.add(path, f"key {key!r} is not allowed (allowed: {', '.join(map(repr, properties)) or 'none'})")
            else:
                self.check(item, extra, where, depth + 1)
            if len(self.out) >= self.limit:
                return
