"""Does a JSON value from ``args`` fit a grader parameter's annotation? (ES208)"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from endstate_harness.graders import pyast

_SEQUENCES = {
    "list", "List", "Sequence", "MutableSequence", "Iterable", "Collection", "Reversible",
    "Container",
}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict"}
_TUPLES = {"tuple", "Tuple"}
_PASS_THROUGH = {"Annotated", "Final", "ClassVar", "Required", "NotRequired", "ReadOnly"}
_SIMPLE = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "None": "none",
    "NoneType": "none",
    "Any": "any",
    "object": "any",
}

@dataclass(frozen=True)
class TypeSpec:
    """An annotation reduced to the shapes a JSON value can take.

    ``kind`` is one of any, str, int, float, bool, none, list (``items`` is the element),
    tuple (``items`` are the fixed positions), dict (``items`` is (key, value)), union,
    literal (``values``).
    """

    kind: str
    items: tuple[TypeSpec, ...] = ()
    values: tuple[Any, ...] = ()


ANY = TypeSpec("any")


@dataclass(frozen=True)
class Mismatch:
    """Where (below the argument) the value does not fit, and what was expected there."""

    path: tuple[str | int, ...]
    expected: str
    value: Any
    string_as_sequence: bool = False


@lru_cache(maxsize=1024)
def parse_annotation(text: str | None) -> TypeSpec:
    """The :class:`TypeSpec` of an annotation's source text; ``any`` when unknown or bad.

    Cached: a suite's tasks name the same few graders, so the same few annotations.
    """
    if not text:
        return ANY
    try:
        tree = pyast.expression(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ANY
    try:
        return _spec(tree.body, depth=0)
    except RecursionError:
        return ANY


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _union(members: list[TypeSpec]) -> TypeSpec:
    flat: list[TypeSpec] = []
    for member in members:
        if member.kind == "any":
            return ANY
        for part in member.items if member.kind == "union" else (member,):
            if part not in flat:
                flat.append(part)
    return flat[0] if len(flat) == 1 else TypeSpec("union", tuple(flat))


def _spec(node: ast.expr, depth: int) -> TypeSpec:
    if depth > 20:
        return ANY
    if isinstance(node, ast.Constant):
        if node.value is None:
            return TypeSpec("none")
        if isinstance(node.value, str):  # a quoted forward reference
            return parse_annotation(node.value)
        return ANY
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_spec(node.left, depth + 1), _spec(node.right, depth + 1)])
    name = _name_of(node)
    if name is not None:
        if name in _SIMPLE:
            return TypeSpec(_SIMPLE[name])
        if name in _SEQUENCES or name in _TUPLES:
            return TypeSpec("list", (ANY,))
        if name in _MAPPINGS:
            return TypeSpec("dict", (ANY, ANY))
        return ANY
    if isinstance(node, ast.Subscript):
        head = _name_of(node.value)
        params = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head is None or not params:
            return ANY
        if head in _PASS_THROUGH:
            return _spec(params[0], depth + 1)
        if head == "Optional":
            return _union([_spec(params[0], depth + 1), TypeSpec("none")])
        if head == "Union":
            return _union([_spec(p, depth + 1) for p in params])
        if head == "Literal":
            values = []
            for p in params:
                if not isinstance(p, ast.Constant):
                    return ANY
                values.append(p.value)
            return TypeSpec("literal", values=tuple(values))
        if head in _SEQUENCES:
            return TypeSpec("list", (_spec(params[0], depth + 1),))
        if head in _TUPLES:
            if len(params) == 2 and isinstance(params[1], ast.Constant) and params[1].value is ...:
                return TypeSpec("list", (_spec(params[0], depth + 1),))
            if len(params) == 1 and isinstance(params[0], ast.Tuple) and not params[0].elts:
                return TypeSpec("tuple", ())
            return TypeSpec("tuple", tuple(_spec(p, depth + 1) for p in params))
        if head in _MAPPINGS and len(params) == 2:
            return TypeSpec("dict", (_spec(params[0], depth + 1), _spec(params[1], depth + 1)))
        return ANY
    return ANY


_WORDS = {
    "any": ("any value", "values"),
    "str": ("a string", "strings"),
    "int": ("an integer", "integers"),
    "float": ("a number", "numbers"),
    "bool": ("true or false", "booleans"),
    "none": ("null", "nulls"),
}


def describe(spec: TypeSpec) -> str:
    """A reader's phrase for what the JSON value must be: ``an array of strings``."""
    if spec.kind in _WORDS:
        return _WORDS[spec.kind][0]
    if spec.kind == "list":
        item = spec.items[0]
        return "an array" if item.kind == "any" else f"an array of {_plural(item)}"
    if spec.kind == "tuple":
        if not spec.items:
            return "an empty array"
        inner = ", ".join(describe(i) for i in spec.items)
        return f"an array of exactly {len(spec.items)} items ({inner})"
    if spec.kind == "dict":
        value = spec.items[1]
        return "an object" if value.kind == "any" else f"an object of {_plural(value)}"
    if spec.kind == "union":
        return " or ".join(describe(i) for i in spec.items)
    if spec.kind == "literal":
        return "one of " + ", ".join(json.dumps(v) for v in spec.values)
    return "any value"


def _plural(spec: TypeSpec) -> str:
    if spec.kind in _WORDS:
        return _WORDS[spec.kind][1]
    if spec.kind == "list" and spec.items[0].kind != "any":
        return "arrays of " + _plural(spec.items[0])
    if spec.kind in ("list", "tuple"):
        return "arrays"
    if spec.kind == "dict":
        return "objects"
    return f"items that are each {describe(spec)}"


def _accepts_string_items(spec: TypeSpec) -> bool:
    """Whether ``spec`` is a sequence whose items may be strings (where a string fools it)."""
    if spec.kind == "list":
        return spec.items[0].kind in ("str", "any") or _fits_str(spec.items[0])
    if spec.kind == "union":
        return any(_accepts_string_items(i) for i in spec.items)
    return False


def _fits_str(spec: TypeSpec) -> bool:
    return check(spec, "x") is None


def check(spec: TypeSpec, value: Any, path: tuple[str | int, ...] = ()) -> Mismatch | None:
    """None when ``value`` (decoded JSON) fits ``spec``; else where and why it does not."""
    kind = spec.kind
    ok: bool
    if kind == "any":
        return None
    if kind == "str":
        ok = isinstance(value, str)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "none":
        ok = value is None
    elif kind == "literal":
        ok = any(type(value) is type(v) and value == v for v in spec.values)
    elif kind == "list":
        if not isinstance(value, list):
            return Mismatch(path, describe(spec), value, isinstance(value, str)
                            and _accepts_string_items(spec))
        for i, item in enumerate(value):
            found = check(spec.items[0], item, (*path, i))
            if found is not None:
                return found
        return None
    elif kind == "tuple":
        if not isinstance(value, list) or len(value) != len(spec.items):
            return Mismatch(path, describe(spec), value)
        for i, (item_spec, item) in enumerate(zip(spec.items, value, strict=True)):
            found = check(item_spec, item, (*path, i))
            if found is not None:
                return found
        return None
    elif kind == "dict":
        if not isinstance(value, dict) or not _fits_str(spec.items[0]):
            return Mismatch(path, describe(spec), value)
        for key, item in value.items():
            found = check(spec.items[1], item, (*path, key))
            if found is not None:
                return found
        return None
    elif kind == "union":
        if any(check(member, value) is None for member in spec.items):
            return None
        others = [m for m in spec.items if m.kind != "none"]
        if len(others) == 1:
            # ``X | None`` given a wrong X: point as deep into the value as X allows.
            found = check(others[0], value, path)
            if found is not None and found.path != path:
                return found
        return Mismatch(path, describe(spec), value,
                        isinstance(value, str) and _accepts_string_items(spec))
    else:
        return None
    return None if ok else Mismatch(path, describe(spec), value)
