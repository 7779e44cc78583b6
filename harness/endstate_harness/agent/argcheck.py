"""Whether a tool call's arguments fit its schema, decided without importing jsonschema."""

from __future__ import annotations

from typing import Any

KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "minimum",
     "exclusiveMinimum", "minLength", "description"}
)  # fmt: skip
"""The keywords :func:`fits` understands; a schema with any other is left to jsonschema."""

_TYPES = frozenset({"object", "string", "integer", "number", "boolean"})

_SIMPLE: dict[int, tuple[dict[str, Any], bool]] = {}


def fits(schema: dict[str, Any], arguments: object) -> bool:
    """True only when ``schema`` is made of :data:`KEYWORDS` and ``arguments`` is valid
    under it; False means "ask jsonschema" (invalid, or a schema this does not cover)."""
    if not _simple(schema):
        return False
    return _valid(schema, arguments)


def _simple(schema: dict[str, Any]) -> bool:
    """``schema`` (an object schema) uses only what :func:`_valid` implements; memoised by
    identity, as the tools' schemas are made once."""
    found = _SIMPLE.get(id(schema))
    if found is None or found[0] is not schema:
        found = _SIMPLE[id(schema)] = (schema, _check(schema, top=True))
    return found[1]


def _check(schema: Any, *, top: bool = False) -> bool:
    if not isinstance(schema, dict) or not set(schema) <= KEYWORDS:
        return False
    kind = schema.get("type")
    if kind not in _TYPES or (top and kind != "object"):
        return False
    for key in ("minimum", "exclusiveMinimum"):
        if key in schema and not _is_number(schema[key]):
            return False
    if "minLength" in schema and not (
        type(schema["minLength"]) is int and schema["minLength"] >= 0
    ):
        return False
    if "description" in schema and not isinstance(schema["description"], str):
        return False
    if kind != "object":
        return not ({"properties", "required", "additionalProperties"} & set(schema))
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    return (
        isinstance(properties, dict)
        and all(_check(sub) for sub in properties.values())
        and isinstance(required, list)
        and all(isinstance(name, str) for name in required)
        and len(set(required)) == len(required)
        and isinstance(schema.get("additionalProperties", True), bool)
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any, kind: str) -> bool:
    """jsonschema's type checker: a bool is no number, and 2.0 is an integer."""
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "number":
        return _is_number(value)
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


def _valid(schema: dict[str, Any], value: Any) -> bool:
    if not _is_type(value, schema["type"]):
        return False
    if _is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            return False
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return False
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        return False
    if schema["type"] != "object":
        return True
    properties = schema.get("properties", {})
    if any(name not in value for name in schema.get("required", ())):
        return False
    if schema.get("additionalProperties", True) is False and any(
        key not in properties for key in value
    ):
        return False
    return all(_valid(properties[key], item) for key, item in value.items() if key in properties)
