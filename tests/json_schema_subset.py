"""A small JSON Schema validator for the keywords ``specbench/reports/summary.schema.json`` uses (jsonschema is
not a dependency): type, const, enum, minimum, maximum, properties, required, additionalProperties,
items and local ``$ref`` to ``#/$defs/...``. An unknown keyword raises, so the schema cannot silently use
one this checker ignores.

>>> validate({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}, {"a": 1.5})
['$.a: 1.5 is not of type integer']
"""
from __future__ import annotations

from typing import Any

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}
_KNOWN = _ANNOTATIONS | {"type", "const", "enum", "minimum", "maximum", "properties", "required",
                         "additionalProperties", "items", "$ref"}


def validate(schema: dict[str, Any], instance: Any) -> list[str]:
    """Every violation of ``schema`` by ``instance`` as ``"$.path: message"`` (empty = valid)."""
    errors: list[str] = []
    _check(schema, schema, instance, "$", errors)
    return errors


def _check(root: dict, schema: dict, value: Any, path: str, errors: list[str]) -> None:
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"{path}: schema keyword(s) not supported here: {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"{path}: only local #/$defs references are supported, got {ref}")
        _check(root, root["$defs"][ref[len("#/$defs/"):]], value, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            errors.append(f"{path}: {value!r} is not of type {' or '.join(types)}")
            return
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                _check(root, props[key], v, f"{path}.{key}", errors)
            elif extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                _check(root, extra, v, f"{path}.{key}", errors)
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            _check(root, schema["items"], v, f"{path}[{i}]", errors)
