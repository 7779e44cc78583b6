"""What the counterexample search tries: calls into the package, read from the task's tests
and grown from them.

Three sources, in this order (the first that tells a mutant from the solution wins, so the
likeliest come first):

1. **the tests' own calls** — every call a holdout or visible test makes into the package
   whose arguments can be read as plain values: literals, module constants (a table written
   as JSON text and read with ``json.loads`` included), the rows of a ``for`` over a literal
   table (``for items, size, expected in CASES``);
2. **their neighbours** — each argument moved a little: integers ±1, 0 and negated, the
   constants of the mutated line and their boundaries, empty and one-element containers,
   reversed sequences, other strings, trailing arguments left to their defaults;
3. **generated values of the same types**, drawn by Hypothesis (derandomised, so the same
   calls every run).

Read statically (``ast``), never by importing a test: a call's arguments are data the
search sends to the sandbox, never code.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from endstate_harness.graders import pyast
from endstate_harness.layout import PRUNED_NAMES

_FAIL = object()
MAX_ROWS = 40
"""Rows of a ``for`` table read per loop: enough to cover a test's cases."""


@dataclass(frozen=True)
class Call:
    """One call into the package, with plain-value arguments (as Python values)."""

    module: str
    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    init: tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]] | None = None
    source: str = field(default="test", compare=False)
    """Where it came from: ``test``, ``neighbour`` or ``generated``."""

    def wire(self) -> dict[str, Any] | None:
        """The call as the sandbox's caller reads it; None when an argument is no plain value."""
        try:
            data: dict[str, Any] = {
                "module": self.module, "name": self.name,
                "args": [tag(a) for a in self.args],
                "kwargs": {k: tag(v) for k, v in self.kwargs},
            }
            if self.init is not None:
                data["init"] = {"args": [tag(a) for a in self.init[0]],
                                "kwargs": {k: tag(v) for k, v in self.init[1]}}
        except ValueError:
            return None
        return data

    def shown(self) -> str:
        """The call as a test would write it: ``units_of('length')``."""
        short = self.name
        if self.init is not None:
            owner, _, method = self.name.rpartition(".")
            short = f"{owner}({_arguments(*self.init)}).{method}"
        return f"{short}({_arguments(self.args, self.kwargs)})"

    def key(self) -> str:
        return json.dumps(self.wire(), sort_keys=True)


def _arguments(args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]) -> str:
    return ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs)])


def tag(value: Any) -> Any:
    """A plain value as JSON the caller decodes exactly (tuples, sets and bytes tagged).

    Raises:
        ValueError: not a plain value (an object, a float that JSON cannot hold, a dict with
            keys that are not strings).
    """
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        if not math.isfinite(value):
            raise ValueError("a float JSON cannot hold")
        return value
    if kind is bytes:
        return ["bytes", value.hex()]
    if kind in (list, tuple, set, frozenset):
        items = [tag(v) for v in value]
        if kind in (set, frozenset):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return [kind.__name__, items]
    if kind is dict and all(type(k) is str for k in value):
        return {k: tag(v) for k, v in value.items()}
    raise ValueError(f"not a plain value: {kind.__name__}")


# ----- the tests' own calls ------------------------------------------------------------------


def package_modules(roots: list[Path]) -> set[str]:
    """Dotted names of the Python modules of ``roots`` (the fixture and the solution), tests
    left out."""
    found: set[str] = set()
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob("*.py"):
            rel = path.relative_to(root)
            parts = list(rel.with_suffix("").parts)
            if any(p in PRUNED_NAMES for p in rel.parts) or parts[0] in ("tests", "test"):
                continue
            if parts[-1].startswith("test_") or parts[-1].endswith("_test"):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(p.isidentifier() for p in parts):
                found.add(".".join(parts))
    return found


def _aliases(tree: ast.Module, modules: set[str]) -> dict[str, tuple[str, str | None]]:
    """Local name -> (module, attribute or None for the module itself), for the package."""
    out: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in {m.split(".")[0] for m in modules}:
                    continue
                if alias.asname:
                    out[alias.asname] = (alias.name, None)
                else:
                    top = alias.name.split(".")[0]
                    out[top] = (top, None)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in {m.split(".")[0] for m in modules}:
                continue
            for alias in node.names:
                local = alias.asname or alias.name
                # the package's attribute; when a submodule has the same name (``from shapes
                # import area`` with ``shapes/area.py``), :meth:`_Reader.target` decides by
                # use: called, the attribute; reached through, the submodule
                out[local] = (node.module, alias.name)
    return out


def _value(node: ast.AST, env: dict[str, Any]) -> Any:
    """``node`` as a plain value under ``env`` (constants bound so far), else ``_FAIL``."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, _FAIL)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _value(node.operand, env)
        if type(inner) in (int, float):
            return -inner if isinstance(node.op, ast.USub) else inner
        return _FAIL
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_value(e, env) for e in node.elts]
        if any(i is _FAIL for i in items) or any(isinstance(e, ast.Starred) for e in node.elts):
            return _FAIL
        kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
        try:
            return kind(items)
        except TypeError:  # an unhashable item in a set
            return _FAIL
    if (isinstance(node, ast.Call) and ast.unparse(node.func) == "json.loads"
            and len(node.args) == 1 and not node.keywords):
        text = _value(node.args[0], env)  # a table written as JSON text: data, read as such
        if isinstance(text, str):
            try:
                return json.loads(text)
            except ValueError:
                return _FAIL
        return _FAIL
    if isinstance(node, ast.Dict):
        keys = [_value(k, env) if k is not None else _FAIL for k in node.keys]
        values = [_value(v, env) for v in node.values]
        if any(x is _FAIL for x in [*keys, *values]):
            return _FAIL
        try:
            return dict(zip(keys, values, strict=True))
        except TypeError:
            return _FAIL
    return _FAIL


def _constants(body: list[ast.stmt], env: dict[str, Any]) -> dict[str, Any]:
    """``env`` with the plain-value assignments of ``body`` (one name, bound once) added."""
    seen: dict[str, int] = {}
    out = dict(env)
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                seen[target.id] = seen.get(target.id, 0) + 1
                value = _value(stmt.value, out)
                if value is not _FAIL:
                    out[target.id] = value
    return {k: v for k, v in out.items() if seen.get(k, 0) <= 1}


def _bind(target: ast.AST, value: Any, env: dict[str, Any]) -> bool:
    if isinstance(target, ast.Name):
        env[target.id] = value
        return True
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, list | tuple):
        if len(target.elts) != len(value):
            return False
        return all(_bind(t, v, env) for t, v in zip(target.elts, value, strict=True))
    return False


class _Reader:
    """The calls into the package a test module makes, with every binding it can read."""

    def __init__(self, aliases: dict[str, tuple[str, str | None]], modules: set[str]) -> None:
        self.aliases = aliases
        self.modules = modules
        self.found: list[Call] = []

    def target(self, func: ast.AST) -> tuple[str, str] | None:
        """(module, dotted name in it) a call's function names in the package."""
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.insert(0, func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in self.aliases:
            return None
        module, attribute = self.aliases[func.id]
        if attribute is not None:
            if not parts:  # called as it was imported: the package's attribute
                return module, attribute
            parts.insert(0, attribute)
        while len(parts) > 1 and f"{module}.{parts[0]}" in self.modules:  # pkg.mod.f
            module = f"{module}.{parts.pop(0)}"
        return (module, ".".join(parts)) if parts else None

    def visit(self, body: list[ast.stmt], env: dict[str, Any]) -> None:
        env = _constants(body, env)
        for stmt in body:
            if isinstance(stmt, ast.For | ast.AsyncFor):
                rows = _value(stmt.iter, env)
                if isinstance(rows, list | tuple) and rows:
                    for row in list(rows)[:MAX_ROWS]:
                        inner = dict(env)
                        if _bind(stmt.target, row, inner):
                            self.visit(stmt.body, inner)
                    continue
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.visit(stmt.body, env)
                continue
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt | ast.excepthandler):
                    continue  # visited below, as statements with their own bindings
                for node in ast.walk(child):
                    if isinstance(node, ast.Call):
                        self.call(node, env)
            for block in ("body", "orelse", "finalbody"):
                stmts = getattr(stmt, block, None)
                if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                    self.visit(stmts, env)
            for handler in getattr(stmt, "handlers", None) or []:
                if isinstance(handler, ast.ExceptHandler):
                    self.visit(handler.body, env)

    def call(self, node: ast.Call, env: dict[str, Any]) -> None:
        init = None
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            owner = self.target(func.value.func)  # Cls(args).method(...)
            made = self._arguments(func.value, env)
            if owner is None or made is None:
                return
            module, name = owner[0], f"{owner[1]}.{func.attr}"
            init = made
        else:
            found = self.target(func)
            if found is None:
                return
            module, name = found
        arguments = self._arguments(node, env)
        if arguments is not None:
            self.found.append(Call(module, name, arguments[0], arguments[1], init))

    @staticmethod
    def _arguments(
        node: ast.Call, env: dict[str, Any]
    ) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]] | None:
        args = [_value(a, env) for a in node.args]
        kwargs = [(k.arg, _value(k.value, env)) for k in node.keywords]
        if any(a is _FAIL for a in args) or any(k is None or v is _FAIL for k, v in kwargs):
            return None
        return tuple(args), tuple((str(k), v) for k, v in kwargs)


def calls_in_tests(test_files: list[Path], modules: set[str]) -> list[Call]:
    """The calls into ``modules`` the test files make, in their order, each once."""
    out: dict[str, Call] = {}
    for path in test_files:
        try:
            tree = pyast.parse(path.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        reader = _Reader(_aliases(tree, modules), modules)
        reader.visit(tree.body, {})
        for call in reader.found:
            if call.wire() is not None:
                out.setdefault(call.key(), call)
    return list(out.values())


# ----- neighbours ----------------------------------------------------------------------------


def _near(value: Any, constants: list[Any]) -> Iterator[Any]:
    """Values a little away from ``value``, of its type (and the mutated line's constants)."""
    kind = type(value)
    if kind is bool:
        yield not value
    elif kind is int:
        yield from (value + 1, value - 1, 0, -1, 1, -value)
        for c in constants:
            if type(c) is int:
                yield from (c, c + 1, c - 1)
    elif kind is float:
        yield from (value + 1.0, value - 1.0, 0.0, -value, value / 2)
    elif kind is str:
        yield from ("", value[:1], value + value[-1:], value.upper(), value.lower(),
                    value[::-1], value + " ", " " + value)
        for c in constants:
            if type(c) is str:
                yield c
    elif kind in (list, tuple):
        yield from (kind(), kind(value[:1]), kind(value[::-1]), kind(value[:-1]),
                    kind([*value, *value[-1:]]))
        for i, item in enumerate(value[:4]):
            for other in list(_near(item, constants))[:4]:
                yield kind([*value[:i], other, *value[i + 1:]])
    elif kind is dict:
        for key in list(value)[:4]:
            for other in list(_near(value[key], constants))[:4]:
                yield {**value, key: other}
        yield {}
        for key in list(value)[:3]:
            yield {k: v for k, v in value.items() if k != key}


def neighbours(call: Call, constants: list[Any]) -> Iterator[Call]:
    """``call`` with one argument moved (:func:`_near`), or trailing arguments dropped."""
    for i, arg in enumerate(call.args):
        for other in _near(arg, constants):
            args = (*call.args[:i], other, *call.args[i + 1:])
            yield Call(call.module, call.name, args, call.kwargs, call.init, "neighbour")
    for i, (key, arg) in enumerate(call.kwargs):
        for other in _near(arg, constants):
            kwargs = (*call.kwargs[:i], (key, other), *call.kwargs[i + 1:])
            yield Call(call.module, call.name, call.args, kwargs, call.init, "neighbour")
    for cut in range(len(call.kwargs)):
        kwargs = call.kwargs[:cut] + call.kwargs[cut + 1:]
        yield Call(call.module, call.name, call.args, kwargs, call.init, "neighbour")
    if call.args:
        yield Call(call.module, call.name, call.args[:-1], call.kwargs, call.init, "neighbour")


def line_constants(source: str) -> list[Any]:
    """The constants a statement's text holds (the mutated line's boundaries)."""
    try:
        tree = pyast.parse(source.strip())
    except (SyntaxError, ValueError):
        return []
    found = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and type(n.value) in (int, str) and not isinstance(n.value, bool)]
    return list(dict.fromkeys(found))[:8]
