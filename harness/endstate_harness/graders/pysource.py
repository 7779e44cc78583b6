"""What the interpreter runs of a module, read without running it: its text as Python decodes
it, and every statement that can bind a name of its namespace.

Why: a grader that reads a module's source judges *a* program; the verdict is worth something
only if it is the program Python runs. Two gaps separate them. A PEP 263 declaration
(``# coding: utf-7``) makes Python decode bytes that read as a comment in UTF-8 into
statements; so any source that Python would not decode as UTF-8 is refused, never read
another way. And a name holds its *last* binding: a ``def`` read as the function is beaten by
an assignment, an import, a class, another ``def`` under ``if True:`` or in a ``try``, a
``for``/``with``/``except`` target, a walrus, a ``global`` in a function called at import,
or a write to the namespace by name (``globals()[...]``, ``setattr``, ``exec``). So a name is
judged by every binding of it, and a module whose namespace is written by name is refused.

Standard library only: the module is vendored into suites that plain endstate 0.3.0 grades
(``endstate-author vendor``).
"""

import ast
import codecs
import io
import tokenize
from dataclasses import dataclass

UTF8 = frozenset({"utf-8", "utf-8-sig"})
"""The codecs a source may be decoded with here (a BOM is UTF-8 too)."""

DYNAMIC_CALLS = frozenset({"globals", "vars", "locals", "exec", "eval", "__import__"})
"""Builtins through which code writes a namespace by name, or runs text no reader sees."""

PYTHON_SUFFIXES = (".py", ".pyw")
"""Files the interpreter imports as modules."""

BUILTIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
LIBRARY_DECORATORS = {
    "functools": frozenset({"cache", "lru_cache", "wraps", "cached_property", "total_ordering"}),
    "dataclasses": frozenset({"dataclass"}),
}
"""Decorators whose result is the decorated function or class itself (or a descriptor of
it), by module: any other decorator's return value is what the name holds, which the source
does not say."""


def declared_encoding(text: str) -> str:
    """The codec Python decodes this source with (``utf-8`` unless a BOM or a PEP 263 line
    says otherwise), computed as the import system does (``tokenize.detect_encoding`` on the
    bytes' lines) and again on universal newlines (the interpreter reading a script): a
    source read here as UTF-8 is one both call UTF-8.

    ``text`` is the file as the sandbox reads it (UTF-8, invalid bytes replaced): the
    declaration is ASCII, so it survives that reading.

    Raises:
        SyntaxError: the declaration names no codec Python knows (Python refuses it too).
    """
    data = text.encode("utf-8", "surrogateescape")
    universal = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    found = "utf-8"
    for raw in (data, universal):
        name, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        codec = codecs.lookup(name).name
        if codec not in UTF8:
            return codec
        found = codec
    return found


def python_text(text: str, path: str) -> tuple[str, str]:
    """(the source as the interpreter decodes it, "") or ("", why it is refused).

    The text is :func:`importlib.util.decode_source`'s for a UTF-8 source: BOM dropped,
    newlines universal. Any other declared encoding is refused rather than followed: what a
    grader reads and what the interpreter runs must be one text, for the grader here and
    for every other reader of the task (lint reports such a file of the task, ES414)."""
    try:
        codec = declared_encoding(text)
    except SyntaxError as exc:
        return "", f"{path} does not parse: {exc.msg}"
    if codec not in UTF8:
        return "", (f"{path} declares the source encoding {codec!r}: Python decodes it so and "
                    f"runs another program than the UTF-8 text a grader reads; only UTF-8 "
                    f"source is graded (save it as UTF-8 without the declaration)")
    out = text[1:] if text.startswith("\ufeff") else text
    return out.replace("\r\n", "\n").replace("\r", "\n"), ""


def is_python(path: str) -> bool:
    return path.endswith(PYTHON_SUFFIXES)


@dataclass(frozen=True)
class Binding:
    """One statement that binds a name in a scope (the module's, or a class body's)."""

    line: int
    how: str
    """``def``, ``class``, ``import``, ``assignment``, ``del``, ``a for target``, ``a with
    target``, ``an except target``, ``a walrus``, ``a match capture``, ``a global
    declaration in a function``."""
    node: ast.AST
    """The statement; for ``def``/``class`` the definition itself."""
    top: bool
    """A statement of the scope's own body (not inside an ``if``, ``try``, loop, ``with``
    or ``match`` of it): one that runs whenever the scope's body runs."""


def scope_bindings(
    body: list[ast.stmt], *, module: bool = True, nodes: list[ast.AST] | None = None
) -> dict[str, list[Binding]]:
    """Every binding of every name in the scope whose statements are ``body``, in source
    order: its statements and those of the blocks they hold, walruses anywhere in their
    expressions (comprehensions included: a walrus there binds in the scope), and, for a
    module, each ``global`` declaration of a function anywhere in it (calling that function
    at import rebinds the name). Names bound only inside functions, lambdas and nested
    classes are theirs, not the scope's."""
    out: dict[str, list[Binding]] = {}

    def add(name: str, line: int, how: str, node: ast.AST, top: bool) -> None:
        out.setdefault(name, []).append(Binding(line, how, node, top))

    stack: list[tuple[ast.stmt, bool]] = [(s, True) for s in reversed(body)]
    while stack:
        stmt, top = stack.pop()
        line = stmt.lineno
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            add(stmt.name, line, "class" if isinstance(stmt, ast.ClassDef) else "def", stmt, top)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name != "*":
                    add(alias.asname or alias.name.split(".")[0], line, "import", stmt, top)
        elif isinstance(stmt, ast.Global):
            pass  # a module's own ``global`` binds nothing
        own = _scope_expressions(stmt)
        walrus = {id(n.target) for n in own if isinstance(n, ast.NamedExpr)}
        for node in own:
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) \
                    and id(node) not in walrus:
                add(node.id, line, _how(stmt, node), stmt, top)
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                add(node.target.id, line, "a walrus", stmt, top)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                add(node.name, node.lineno, "an except target", stmt, False)
            elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
                add(node.name, node.lineno, "a match capture", stmt, False)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                add(node.rest, node.lineno, "a match capture", stmt, False)
        for inner in reversed(_blocks(stmt)):
            stack.append((inner, False))
    if module:
        for node in every_node(body) if nodes is None else nodes:
            if isinstance(node, ast.Global):
                for name in node.names:
                    add(name, node.lineno, "a global declaration in a function", node, False)
    for found in out.values():
        found.sort(key=lambda b: b.line)
    return out


def _how(stmt: ast.stmt, node: ast.Name) -> str:
    if isinstance(node.ctx, ast.Del):
        return "del"
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return "a for target"
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return "a with target"
    return "assignment"


def _blocks(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements of the blocks ``stmt`` holds in the same scope (not a def's or a
    class's body)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return []
    out: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        out.extend(s for s in getattr(stmt, name, []) if isinstance(s, ast.stmt))
    for handler in getattr(stmt, "handlers", []):
        out.extend(handler.body)
    for case in getattr(stmt, "cases", []):
        out.extend(case.body)
    return out


def _scope_expressions(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of ``stmt`` evaluated in its own scope: not those of the blocks it holds
    (they are statements of their own), nor a function's or lambda's body, nor a class's
    body; a def's decorators, defaults and annotations and a class's bases are."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody") and not isinstance(stmt, ast.Lambda):
            continue
        if name == "cases":
            stack.extend(c.pattern for c in value)
            stack.extend(c.guard for c in value if c.guard is not None)
            continue
        items = value if isinstance(value, list) else [value]
        stack.extend(v for v in items if isinstance(v, ast.AST))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.ExceptHandler):
            if node.type is not None:
                stack.append(node.type)
            continue  # its body is a block
        if isinstance(node, ast.Lambda):
            stack.extend(d for d in [*node.args.defaults, *node.args.kw_defaults] if d)
            continue
        if isinstance(node, ast.comprehension):
            stack.extend([node.iter, *node.ifs])  # its target is the comprehension's own
            continue
        if isinstance(node, ast.arguments):
            every = [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]
            stack.extend(d for d in [*node.defaults, *node.kw_defaults] if d)
            stack.extend(a.annotation for a in every if a is not None and a.annotation)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def every_node(body: list[ast.stmt]) -> list[ast.AST]:
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


REFLECTIVE_ATTRIBUTES = frozenset({
    "__dict__", "__code__", "__globals__", "__builtins__", "__closure__", "__defaults__",
    "__kwdefaults__", "__func__", "__getattribute__", "__setattr__", "__delattr__",
    "__wrapped__",
})  # fmt: skip
"""Attributes through which code reaches a namespace or a function's code and can change
what a name runs without binding the name (``format_usd.__code__ = other.__code__``); and
``__class__``, written only (``self.__class__.__name__`` is everyday code)."""

MODULE_LOADERS = frozenset({"import_module", "reload", "__import__"})
"""Calls that hand back a module object by a string (``importlib.import_module(__name__)``)."""


def written_by_name(
    tree: ast.Module, nodes: list[ast.AST] | None = None
) -> list[tuple[int, str]]:
    """Where code of the module can change what a name holds without a statement that binds
    it, or runs text no reader sees: ``globals()``, ``vars()``, ``locals()``, ``exec``,
    ``eval``, ``__import__``, ``importlib.import_module``/``reload``, ``sys.modules`` (by any
    name ``sys`` is imported as), a star import, a reflective attribute
    (:data:`REFLECTIVE_ATTRIBUTES`, read or written, also through ``getattr``), and
    ``getattr``/``setattr``/``delattr`` with a computed name on a module object (a name an
    import binds) or, for the last two, on anything. (line, what) in source order."""
    nodes = every_node(tree.body) if nodes is None else nodes
    modules = {"sys"} | {a.asname or a.name.split(".")[0]
                         for n in nodes if isinstance(n, ast.Import | ast.ImportFrom)
                         for a in n.names}
    sys_names = {a.asname or "sys" for n in nodes if isinstance(n, ast.Import)
                 for a in n.names if a.name == "sys"} | {"sys"}
    found: list[tuple[int, str]] = []
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call):
            owner, _, called = dotted(node.func).rpartition(".")
            if owner in ("", "builtins", "__builtins__", "importlib") and (
                called in DYNAMIC_CALLS or called in MODULE_LOADERS
            ):
                found.append((line, f"{called}()"))
            elif called in ("getattr", "setattr", "delattr", "hasattr") and isinstance(
                node.func, ast.Name
            ):
                why = _reflective_call(called, node.args, modules)
                if why:
                    found.append((line, why))
        elif isinstance(node, ast.Attribute) and (node.attr in REFLECTIVE_ATTRIBUTES or (
            node.attr == "__class__" and not isinstance(node.ctx, ast.Load)
        )):
            found.append((line, node.attr))
        elif isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(
            node.value, ast.Name) and node.value.id in sys_names:
            found.append((line, "sys.modules"))
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            found.append((line, f"from {node.module or '.'} import *"))
        elif isinstance(node, ast.ImportFrom) and node.module in ("sys", "importlib") and any(
            a.name in ("modules", "import_module", "reload") for a in node.names
        ):
            found.append((line, f"from {node.module} import {node.names[0].name}"))
    return sorted(found)


def _reflective_call(called: str, args: list[ast.expr], modules: set[str]) -> str:
    if len(args) < 2:
        return ""
    name = args[1].value if isinstance(args[1], ast.Constant) else None
    if isinstance(name, str):
        return f"{called}() of {name}" if name in REFLECTIVE_ATTRIBUTES else ""
    if called in ("setattr", "delattr"):
        return f"{called}() with a computed name"
    owner = args[0]
    if isinstance(owner, ast.Name) and owner.id in modules:
        return f"{called}() with a computed name on the module {owner.id}"
    return ""


def attribute_writes(tree: ast.Module, name: str) -> list[int]:
    """Lines where code of the module writes or deletes an attribute called ``name`` on any
    object (``Class.name = ...``, ``module.name = ...``, ``self.name = ...``,
    ``setattr(x, "name", ...)``): each can replace the function of that name."""
    return written_attributes(tree).get(name, [])


def written_attributes(
    tree: ast.Module, nodes: list[ast.AST] | None = None
) -> dict[str, list[int]]:
    """Every attribute name the module's code writes or deletes (see
    :func:`attribute_writes`), with the lines, in order (``nodes``: :func:`every_node` of
    the module, when the caller has it)."""
    out: dict[str, list[int]] = {}
    for node in every_node(tree.body) if nodes is None else nodes:
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            out.setdefault(node.attr, []).append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "setattr", "delattr"
        ) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(
            node.args[1].value, str
        ):
            out.setdefault(node.args[1].value, []).append(node.lineno)
    for lines in out.values():
        lines.sort()
    return out


def unknown_decorator(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    bindings: dict[str, list[Binding]],
) -> str:
    """The first decorator of ``node`` that may return something else than what it decorates,
    as written; "" when none. Known are the builtins of :data:`BUILTIN_DECORATORS` (their
    names bound nowhere in ``bindings``) and those of :data:`LIBRARY_DECORATORS`, named
    through their module (``functools.cache``, the module bound only by ``import functools``)
    or imported from it (``cache``, bound only by ``from functools import cache``)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not _known_decorator(dotted(target), bindings):
            return ast.unparse(decorator)
    return ""


def _known_decorator(name: str, bindings: dict[str, list[Binding]]) -> bool:
    root, _, attribute = name.partition(".")
    bound = bindings.get(root, [])
    if not attribute:
        if root in BUILTIN_DECORATORS:
            return not bound
        return bool(bound) and all(
            isinstance(b.node, ast.ImportFrom) and b.node.module in LIBRARY_DECORATORS
            and not b.node.level
            and any((a.asname or a.name) == root and a.name in LIBRARY_DECORATORS[b.node.module]
                    for a in b.node.names)
            for b in bound
        )
    if root not in LIBRARY_DECORATORS or attribute not in LIBRARY_DECORATORS[root]:
        return False
    return bool(bound) and all(
        isinstance(b.node, ast.Import)
        and any(a.name == root and a.asname is None for a in b.node.names)
        for b in bound
    )


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = dotted(node.value)
        return f"{owner}.{node.attr}" if owner else ""
    return ""


def sole_definition(
    bindings: dict[str, list[Binding]], name: str, where: str
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None, str]:
    """(the one definition of ``name`` in a scope, "") or (None, why the name is not
    that definition when Python runs the scope): no binding, more than one (the name is
    bound again after its def, or before it), or a definition nested in a block."""
    found = bindings.get(name, [])
    if not found:
        return None, ""
    definitions = [b for b in found if b.how in ("def", "class")]
    if len(found) == 1 and definitions and definitions[0].top:
        node = definitions[0].node
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        return node, ""
    if len(found) == 1:
        only = found[0]
        if only.how in ("def", "class"):
            return None, (f"{name} is defined only inside a block of {where} (line {only.line}):"
                          f" whether Python runs that definition cannot be told from the source")
        return None, f"{name} is bound by {only.how} (line {only.line}) in {where}, not a def"
    shown = ", ".join(f"line {b.line}: {b.how}" for b in found[:6])
    first = definitions[0].line if definitions else None
    again = [b for b in found if first is not None and b.line > first]
    if again:
        b = again[0]
        return None, (f"{name} is bound again after its def in {where} ({shown}): Python "
                      f"runs the last binding (line {b.line}: {b.how}), which is not the def "
                      f"read here")
    return None, (f"{name} is bound {len(found)} times in {where} ({shown}): which one Python "
                  f"runs cannot be told from the source")
