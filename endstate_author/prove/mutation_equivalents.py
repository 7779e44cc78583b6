"""Mutants that are equivalent by construction, so never generated (issue 44, item 4).

An equivalent mutant behaves like the solution on every input; reported as a survivor it is
noise the author must mark by hand. Each rule here removes a mutant only where reading the
source proves it changes nothing a grader can see (or nothing the task's contract speaks of),
never where it merely seems unlikely to:

* an argument dropped that is the literal the callee's own signature defaults it to (a
  function or class of the task's tree whose definition is read, or a builtin constructor
  whose call with no argument builds the same value: ``Decimal("0")`` → ``Decimal()``);
* anything inside the arguments of a raised exception's constructor, unless a constant part of
  that message appears in the task's prompt or a test (then the message is contract);
* deleting a ``raise AssertionError`` / ``assert False``: an invariant the code asserts of
  itself, which no contract test can reach without a bug elsewhere;
* swapping two arguments one of which is an empty literal.

The reasons are spelt out in ``docs/guide/prove.md`` (mutants).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

from endstate_harness.graders import pyast

Param = tuple[str, str]
"""(name, ``ast.dump`` of its default when that is a literal, else "")."""


@dataclass(frozen=True)
class Signature:
    """What a call site needs of its callee: its parameters' literal defaults, and whether
    it can return anything but None (a class, a generator or a coroutine always does)."""

    positional: tuple[Param, ...] = ()
    keyword_only: tuple[Param, ...] = ()
    returns_value: bool = True


Functions = tuple[tuple[str, Signature], ...]
"""``name`` (a function, a class called as its constructor) or ``Class.method`` → signature."""


def _literal_dump(node: ast.AST | None) -> str:
    if node is None:
        return ""
    try:
        pyast.literal_eval(ast.unparse(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ""
    return ast.dump(node)


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not of the functions and classes defined in it."""
    out: list[ast.AST] = []
    stack = list(getattr(fn, "body", []))
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                      ast.Lambda)):
                stack.append(child)
    return out


def _returns_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if isinstance(fn, ast.AsyncFunctionDef):
        return True  # a coroutine
    for node in _own_nodes(fn):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None
        ):
            return True
    return False


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef, bound: bool,
               returns: bool | None = None) -> Signature:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.AST | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    params = tuple((a.arg, _literal_dump(d)) for a, d in zip(positional, defaults, strict=True))
    if bound:
        params = params[1:]
    kwonly = tuple((a.arg, _literal_dump(d))
                   for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True))
    return Signature(params, kwonly, _returns_value(fn) if returns is None else returns)


def _plain(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """No decorator that could change its signature or what it returns."""
    names = {ast.unparse(d) for d in node.decorator_list}
    return names <= {"staticmethod", "classmethod"}


def function_facts(tree: ast.Module) -> Functions:
    """The signatures of a module's plain functions, classes (their ``__init__``) and
    methods; a decorated one is left out (a decorator may change either)."""
    out: dict[str, Signature] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and _plain(stmt):
            if not stmt.decorator_list:
                out[stmt.name] = _signature(stmt, bound=False)
        elif isinstance(stmt, ast.ClassDef) and _plain(stmt) and not stmt.decorator_list:
            methods = [s for s in stmt.body
                       if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and _plain(s)]
            for method in methods:
                static = any(ast.unparse(d) == "staticmethod" for d in method.decorator_list)
                out[f"{stmt.name}.{method.name}"] = _signature(method, bound=not static)
            init = next((m for m in methods if m.name == "__init__"), None)
            if init is not None and not stmt.keywords and not any(
                isinstance(s, ast.FunctionDef) and s.name == "__new__" for s in stmt.body
            ):
                out[stmt.name] = _signature(init, bound=True, returns=True)
    return tuple(out.items())


_EMPTY_CALLS = {
    "int": {"0", "'0'"}, "float": {"0", "0.0"}, "complex": {"0"}, "str": {"''"},
    "bytes": {"b''"}, "bool": {"False", "0"}, "list": {"[]", "()"}, "tuple": {"()", "[]"},
    "dict": {"{}"}, "set": {"()", "[]"}, "frozenset": {"()", "[]"},
}  # fmt: skip
"""Builtin constructors whose one argument, at these literals, builds what no argument does."""
_IMPORTED_EMPTY = {("decimal", "Decimal"): {"0", "'0'"}, ("fractions", "Fraction"): {"0", "'0'"}}
"""The same for constructors of the standard library (``Decimal("0") == Decimal()``, the same
type and the same digits)."""

NONE_METHODS = frozenset(
    {"append", "extend", "insert", "sort", "reverse", "clear", "update", "add", "discard",
     "remove", "sleep", "shuffle", "seed", "write_text", "setattr", "delattr", "print"}
)  # fmt: skip
"""Calls that return None whatever they are given: their value replaced by None is no
change (only removing the call would be, which ``remove-statement`` does)."""

EMPTY_LITERALS = ("''", "b''", "[]", "()", "{}", "set()", "dict()", "list()", "tuple()")


def empty_literal(node: ast.AST) -> bool:
    """``{}``, ``[]``, ``()``, ``""``, ``set()`` and the like."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    if isinstance(node, ast.Constant):
        return node.value in ("", b"")
    return ast.unparse(node) in EMPTY_LITERALS


def asserts_itself(stmt: ast.AST) -> bool:
    """``raise AssertionError``, ``raise AssertionError(...)``, ``assert False``: the code's
    own invariant, whose deletion no test of the contract can observe."""
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return isinstance(exc, ast.Name) and exc.id == "AssertionError"
    if isinstance(stmt, ast.Assert):
        return isinstance(stmt.test, ast.Constant) and not stmt.test.value
    return False


@dataclass
class Callees:
    """Resolves a call's callee to its :class:`Signature` where the task's tree defines it."""

    local: dict[str, Signature]
    modules: dict[str, dict[str, Signature]]
    imported: dict[str, tuple[str, str | None]]
    parents: dict[int, ast.AST] = field(default_factory=dict)
    shadowed: frozenset[str] = frozenset()
    """Names the module binds itself (a builtin's name rebound is not the builtin)."""

    def _owner_class(self, node: ast.AST) -> str | None:
        here: ast.AST | None = node
        while here is not None:
            here = self.parents.get(id(here))
            if isinstance(here, ast.ClassDef):
                return here.name
        return None

    def signature(self, call: ast.Call) -> Signature | None:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in self.local:
                return self.local[func.id]
            source = self.imported.get(func.id)
            if source is not None and source[1] is not None:
                return self.modules.get(source[0], {}).get(source[1])
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            base = func.value.id
            if base in ("self", "cls"):
                owner = self._owner_class(call)
                return self.local.get(f"{owner}.{func.attr}") if owner else None
            source = self.imported.get(base)
            if source is not None and source[1] is None:
                return self.modules.get(source[0], {}).get(func.attr)
            if base in self.local or source is not None:
                return None
        return None

    def _qualified(self, func: ast.AST) -> tuple[str, str] | None:
        if isinstance(func, ast.Name):
            source = self.imported.get(func.id)
            if source is not None and source[1] is not None:
                return source[0], source[1]
            if func.id not in self.shadowed and source is None:
                return "builtins", func.id
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            source = self.imported.get(func.value.id)
            if source is not None and source[1] is None:
                return source[0], func.attr
        return None

    def default_argument(self, call: ast.Call, arg: ast.AST) -> bool:
        """Whether ``arg`` of ``call`` is the literal its parameter defaults to: dropping it
        calls the callee with the very same value (type and value)."""
        dump = _literal_dump(arg)
        if not dump:
            return False
        keyword = next((k for k in call.keywords if k.value is arg), None)
        if keyword is None and (len(call.args) == 1 and call.args[0] is arg
                                and not call.keywords):
            known = self._qualified(call.func)
            if known is not None:
                empties = (_EMPTY_CALLS.get(known[1], set()) if known[0] == "builtins"
                           else _IMPORTED_EMPTY.get(known, set()))
                if ast.unparse(arg) in empties:
                    return True
        sig = self.signature(call)
        if sig is None:
            return False
        if keyword is not None:
            params = dict(sig.positional + sig.keyword_only)
            return bool(keyword.arg) and params.get(keyword.arg or "") == dump
        if any(isinstance(a, ast.Starred) for a in call.args):
            return False
        index = next((i for i, a in enumerate(call.args) if a is arg), None)
        if index is None or index >= len(sig.positional):
            return False
        return sig.positional[index][1] == dump

    def returns_none(self, call: ast.Call) -> bool:
        """Whether the call surely returns None (a function of the tree that never returns
        a value, ``list.append`` and its kind, ``print``)."""
        sig = self.signature(call)
        if sig is not None:
            return not sig.returns_value
        func = call.func
        if isinstance(func, ast.Attribute):
            return func.attr in NONE_METHODS
        return isinstance(func, ast.Name) and func.id in ("print", "setattr", "delattr") and (
            func.id not in self.shadowed)


def bound_names(tree: ast.Module) -> frozenset[str]:
    """Every name the module binds at its top level (defs, classes, imports, assignments)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return frozenset(names)


# --- the message of a raised exception ---------------------------------------------------

MIN_PART = 4
"""A message's constant part shorter than this (``": "``, ``"'"``) says nothing by being found
in the prompt or a test."""


def message_parts(call: ast.Call) -> list[str]:
    """The constant strings of an exception constructor's arguments (an f-string's literal
    parts), stripped, each long enough to mean something."""
    parts: list[str] = []
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for inner in ast.walk(arg):
            if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                text = inner.value.strip()
                if len(text) >= MIN_PART:
                    parts.append(text)
    return parts


def raise_arguments(tree: ast.AST, contract: str) -> set[int]:
    """The nodes inside the arguments of each raised exception's constructor whose message
    is no part of the contract: none of its constant parts is found in ``contract`` (the
    task's prompt and tests). A mutant there changes only words a person reads."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        if any(part in contract for part in message_parts(node.exc)):
            continue
        for arg in [*node.exc.args, *node.exc.keywords]:
            out.update(id(inner) for inner in ast.walk(arg))
    return out


def _is_test_file(rel: Path) -> bool:
    name = rel.name
    return rel.suffix == ".py" and (
        name.startswith("test") or name.endswith("_test.py") or name == "conftest.py"
        or any(p in ("tests", "test") for p in rel.parts[:-1])
    )


@functools.lru_cache(maxsize=256)
def _read(path: str, mtime_ns: int, size: int) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def contract_text(root: Path, pruned: frozenset[str] = frozenset()) -> str:
    """What the task says its behaviour is, as text: ``prompt.md``, every holdout file and
    the fixture's visible tests (``root`` is the task folder; a file under a ``pruned``
    folder name is never read)."""
    files: list[Path] = [root / "prompt.md"]
    for name, pattern in (("holdout", "*"), ("fixture", "*.py")):
        base = root / name
        if not base.is_dir():
            continue
        for path in sorted(base.rglob(pattern)):
            rel = path.relative_to(base)
            if (any(part in pruned for part in rel.parts) or path.is_symlink()
                    or not path.is_file() or (name == "fixture" and not _is_test_file(rel))):
                continue
            files.append(path)
    texts = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        texts.append(_read(str(path), stat.st_mtime_ns, stat.st_size))
    return "\n".join(texts)
