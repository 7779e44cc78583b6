"""Declared configuration fields: their section, type, default and whether they are required.

A schema turns the stringly-typed result of parsing into a typed, validated mapping. It
also refuses keys nobody declared (unless told otherwise), because a misspelt key such as
``tiemout = 5`` otherwise does nothing at all and the default silently applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from confkit.coerce import coerce
from confkit.errors import CoercionError, SchemaError

Values = dict[str, dict[str, str]]


@dataclass(frozen=True)
class Field:
    """One declared key of one section."""

    section: str
    key: str
    kind: str = "str"
    default: str | None = None
    required: bool = False


def apply_schema(
    values: Values,
    fields: list[Field],
    *,
    allow_extra: bool = False,
    source: str = "",
) -> dict[str, dict[str, object]]:
    """Typed values for every declared field.

    A field that is absent takes its default (itself a string, coerced like a written
    value); an absent required field without a default is an error.

    Raises:
        SchemaError: a required field is missing, or an undeclared key is present and
            ``allow_extra`` is false.
        CoercionError: a value does not fit its field's type (the message names the field).
    """
    declared = {(f.section, f.key) for f in fields}
    if not allow_extra:
        for section, keys in values.items():
            for key in keys:
                if (section, key) not in declared:
                    raise SchemaError(f"undeclared key {key!r} in [{section}]", source=source)
    typed: dict[str, dict[str, object]] = {}
    for f in fields:
        text = values.get(f.section, {}).get(f.key, f.default)
        if text is None:
            if f.required:
                raise SchemaError(f"missing required key {f.key!r} in [{f.section}]", source=source)
            continue
        if f.kind == "bool" and text.strip().lower() == "off":
            typed.setdefault(f.section, {})[f.key] = False
            continue
        try:
            value = coerce(text, f.kind)
        except CoercionError as exc:
            raise CoercionError(f"[{f.section}] {f.key}: {exc}", source=source) from None
        typed.setdefault(f.section, {})[f.key] = value
    return typed
