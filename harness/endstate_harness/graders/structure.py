"""Structure read from the sealed source: does a function delegate to another?

Why it exists: a refactor task wants "``format_usd`` is a wrapper around ``format_money``".
Checked in process with ``mock.patch``, the code under test sees the patch and can delegate
only while it is watched; checked here, from the end state's source with :mod:`ast`, nothing
runs and nothing watches. The verdict is what the sealed text says: the function calls the
other one, uses what it returns, and carries no copy of its logic. Behaviour stays the
business of the tests (``judged_tests``).

Annotations are real types: lint reads them (as text, from this source) to type-check a
task's ``args``.
"""

import ast
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import endstate_harness.graders.pyast as pyast
from endstate_harness.graders.codeshape import always_calls, first_copy, reachable_calls
from endstate_harness.graders.pysource import (
    Binding,
    every_node,
    is_python,
    python_text,
    scope_bindings,
    sole_definition,
    unknown_decorator,
    written_attributes,
    written_by_name,
)
from endstate_harness.sandbox.base import Sandbox
from endstate_harness.verdict import Check, Verdict

MAX_HOPS = 5
"""Most re-exports followed to find where the callee is defined."""


def delegates_to(
    sandbox: Sandbox,
    *,
    path: str,
    functions: list[str],
    to: str,
    min_copy_nodes: int = 5,
    uses_result: bool = True,
    every_path: bool = False,
    name: str = "",
) -> Verdict:
    """Pass when each of ``functions`` in ``path`` delegates to ``to``, read from the sealed
    end state's source (nothing is imported or run).

    Args (all keyword):
        path: the file that defines the functions (``money/format.py``).
        functions: their names; ``Class.method`` for a method.
        to: the name the functions call it by (``format_money``): defined in ``path``,
            imported into it (``from money.core import format_money``, ``import money.core
            as core`` then ``core.format_money(...)``), or, for a method, a method of the
            same class (``self.to(...)``). Re-exports are followed to the definition.
        min_copy_nodes: the smallest expression counted as a copy (5 nodes, see below).
        uses_result: also require that what ``to`` returns is used (default true; set false
            when ``to`` returns nothing and is called for its effect).
        every_path: also require that every way through the function to a ``return`` (or
            its end) calls ``to`` first, as a wrapper does (default false: a function that
            calls ``to`` only when it needs it, in a loop or a branch, still delegates).
            Ways out by ``raise`` are free, so a check of the arguments may come first.
        name: label for the checks; default ``"<path>: <function> delegates to <to>"``.

    A function delegates when all three hold:

    * **it calls** ``to``: a call of ``to`` in the function's own code — not only inside a
      nested function, lambda or class, not after a ``return``/``raise`` of the same block,
      not under a constant false condition (``if False:``), and not through a name the
      function or the module binds to something else (a module that binds the name twice
      at its top level fails: which one is called cannot be told);
    * **it uses the result** (unless ``uses_result`` is false): at least one such call is
      not a statement on its own (it is returned, assigned, passed on, or an operand);
    * with ``every_path``, **on every path**: no ``return`` (nor the function's end) can be
      reached without a call of ``to`` — a call counts on a path when its statement runs
      whatever the values (not in one branch of an ``if``, a loop's body, a ``try`` whose
      handler returns, the right side of ``and``/``or`` or a conditional expression), or
      when both branches of an ``if`` make one;
    * **it carries no copy of the logic**: no expression of the function (outside the
      arguments of its calls to ``to`` and outside ``raise`` statements) is a *copy* of an
      expression of ``to``'s body. A copy is an expression of at least ``min_copy_nodes``
      nodes that is equal to one of ``to``'s once both are normalised: source positions
      dropped; the names each function binds itself (parameters, assigned names, loop,
      ``with``, ``except`` and comprehension targets) renamed ``_0, _1, …`` in the order they
      first appear in the expression; every other name (globals, builtins, imports),
      attribute names, constants and operators kept. Nodes are expression nodes (names,
      constants, calls, operations, subscripts, f-string parts), not operators or contexts:
      ``base * factor ** n`` has 5. Docstrings are not code.

    Checks returned: one per function, named ``<label>`` (``<path>: <function> delegates to
    <to>`` by default), whose detail says which part failed (the file does not parse, the
    function or ``to``'s definition is missing, no call, the result dropped, or the copied
    expression with both lines).

    Known limits: a function that calls ``to``, uses its result, and then computes its
    answer another way (code that is no copy of ``to``'s) passes; the behaviour tests are
    what check results. A copy is a copy of ``to``'s own body: logic ``to`` delegates
    further is not followed.
    """
    def label_of(function: str) -> str:
        if name:
            return f"{name}: {function}" if len(functions) > 1 else name
        return f"{path}: {function} delegates to {to}"

    source = _read_module(sandbox, path)
    others = _other_modules(sandbox, source) if not source.error else []
    checks = []
    for function in functions or []:
        why = source.error or _delegation_problem(
            sandbox, source, others, function, to, min_copy_nodes, uses_result, every_path)
        checks.append(Check(name=label_of(function), passed=not why,
                            detail=why or f"{function} calls {to} and carries no copy of it"))
    if not checks:
        checks.append(Check(name=name or f"{path}: delegates to {to}", passed=False,
                            detail="no function named (functions is empty)"))
    return Verdict.from_checks(checks)


@dataclass
class _Source:
    path: str
    tree: ast.Module | None = None
    error: str = ""
    names: dict[str, list[Binding]] = field(default_factory=dict)  # every module binding
    dynamic: list[tuple[int, str]] = field(default_factory=list)  # namespace written by name
    attributes: dict[str, list[int]] = field(default_factory=dict)  # attribute names written


def _read_module(sandbox: Sandbox, path: str) -> _Source:
    """The module as the interpreter runs it (:func:`~endstate_harness.graders.pysource.
    python_text`: a source declaring another encoding than UTF-8 is refused) and every
    binding of its namespace."""
    rel = path.strip("/")
    if not sandbox.exists(rel):
        return _Source(rel, error=f"{rel} is not in the end state")
    text, refused = python_text(sandbox.read_text(rel), rel)
    if refused:
        return _Source(rel, error=refused)
    shadow = _shadowed(sandbox, rel)
    if shadow:
        return _Source(rel, error=shadow)
    try:
        tree = pyast.parse(text, filename=rel)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return _Source(rel, error=f"{rel} does not parse{where}: {exc}")
    nodes = every_node(tree.body)
    return _Source(rel, tree, names=scope_bindings(tree.body, nodes=nodes),
                   dynamic=written_by_name(tree, nodes), attributes=written_attributes(tree, nodes))


def _shadowed(sandbox: Sandbox, rel: str) -> str:
    """Why ``import`` of ``rel``'s module runs another file: a package of the same name
    (``money/format/__init__.py`` beats ``money/format.py``) or an extension module (a
    ``.so`` is found before the source); "" when it runs ``rel``."""
    if not rel.endswith(".py") or rel.endswith("/__init__.py") or rel == "__init__.py":
        return ""
    base = rel[:-3]
    folder, _, stem = base.rpartition("/")
    if sandbox.exists(f"{base}/__init__.py"):
        return f"{base}/ is a package ({base}/__init__.py): `import` runs it, not {rel}"
    for other in sandbox.changed_paths():
        where, _, leaf = other.rpartition("/")
        if other.startswith(f"{base}/__init__."):
            return f"{base}/ is a package ({other}): `import` runs it, not {rel}"
        if where == folder and leaf.startswith(stem + ".") and leaf.endswith((".so", ".pyd")):
            return f"{other} is an extension module of that name: `import` runs it, not {rel}"
    return ""


def _other_modules(sandbox: Sandbox, source: _Source) -> list[tuple[str, "_Summary"]]:
    """Every other Python module of the end state with what :func:`_rebound_elsewhere`
    reads of it (read once per grading)."""
    return [(rel, _summary(rel, text)) for rel, text in sorted(sandbox.end_state_files().items())
            if rel != source.path and is_python(rel)]


def _rebound_elsewhere(others: list[tuple[str, "_Summary"]], source: _Source, name: str) -> str:
    """Why another module of the end state may replace ``name`` of ``source`` when it runs:
    it is Python the interpreter decodes otherwise than as UTF-8 (what it does cannot be
    read), it writes an attribute of that name (``money.format.format_usd = ...``), or it
    reaches names at run time (``vars(module)[...]``, ``setattr`` with a computed name)."""
    for rel, (refused, dynamic, attributes) in others:
        if refused:
            return f"another module of the end state cannot be read: {refused}"
        if name in attributes:
            return (f"{rel} writes an attribute named {name} (line {attributes[name][0]}): it "
                    f"can replace the function of {source.path} when it runs")
        if dynamic:
            line, what = dynamic[0]
            return (f"{rel} reaches names at run time ({what}, line {line}): it can replace "
                    f"{name} of {source.path} when it runs, which the source does not say")
    return ""


_Summary = tuple[str, list[tuple[int, str]], dict[str, list[int]]]
_SUMMARIES: dict[tuple[str, str], _Summary] = {}
"""What :func:`_rebound_elsewhere` needs of a module, by its path and text: prove grades
every mutant of a task, and all but one module of each end state are the same."""


def _summary(rel: str, text: str) -> _Summary:
    """(why the module is refused or "", where it reaches names at run time, the attribute
    names it writes)."""
    key = (rel, text)
    found = _SUMMARIES.get(key)
    if found is None:
        decoded, refused = python_text(text, rel)
        found = (refused, [], {})
        if not refused:
            try:
                tree = pyast.parse(decoded, filename=rel)
            except (SyntaxError, ValueError):
                tree = None  # a module that does not parse runs nothing
            if tree is not None:
                nodes = every_node(tree.body)
                found = ("", written_by_name(tree, nodes), written_attributes(tree, nodes))
        if len(_SUMMARIES) >= 512:
            _SUMMARIES.clear()
        _SUMMARIES[key] = found
    return found


def _delegation_problem(
    sandbox: Sandbox, source: _Source, others: list[tuple[str, _Summary]], function: str,
    to: str, min_nodes: int, uses_result: bool, every_path: bool,
) -> str:
    node, cls, why = _find_function(source, function)
    if why:
        return why
    if node is None:
        return f"{source.path} has no function {function}"
    elsewhere = _rebound_elsewhere(others, source, function.rpartition(".")[2])
    if elsewhere:
        return elsewhere
    callee = _find_callee(sandbox, source, cls, to)
    if isinstance(callee, str):
        return callee
    writes = source.attributes.get(callee.definition.name, [])
    if writes:  # ``self.to = ...`` or ``module.to = ...``: the call reaches that instead
        return (f"{source.path} writes an attribute named {callee.definition.name} (line "
                f"{writes[0]}): it can replace {to} when the function calls it")
    elsewhere = _rebound_elsewhere(others, source, callee.definition.name)
    if elsewhere:
        return elsewhere
    calls = reachable_calls(node, callee.matches)
    if not calls:
        return f"{function} never calls {to} (in code that runs: {callee.how})"
    if uses_result and all(dropped for _call, dropped in calls):
        return f"{function} calls {to} but drops what it returns"
    if every_path and not always_calls(node.body, {id(call) for call, _ in calls}):
        return (f"{function} does not call {to} on every path: a return (or its end) can be "
                f"reached without it")
    copy = first_copy(node, callee.definition, callee.where.rsplit(" line ", 1)[0],
                      callee.matches, min_nodes)
    if copy:
        return f"{function} carries its own copy of {to}'s logic: {copy}"
    return ""


# --- where the callee is and how the function may call it ---------------------------------


@dataclass
class _Callee:
    definition: ast.FunctionDef | ast.AsyncFunctionDef
    where: str  # "money/core.py line 12"
    local: str = ""  # the name the function's module calls it by (``to`` or its alias)
    modules: frozenset[str] = frozenset()  # names bound to the module that defines it
    method: bool = False  # a method of the function's class (``self.to``)
    how: str = ""

    def matches(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Name):
            return bool(self.local) and func.id == self.local
        if isinstance(func, ast.Attribute) and func.attr == self.definition.name:
            owner = func.value
            if self.method:
                return isinstance(owner, ast.Name) and owner.id in {"self", "cls"} | self.modules
            return isinstance(owner, ast.Name) and owner.id in self.modules
        return False


def _find_function(
    source: _Source, function: str
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, ast.ClassDef | None, str]:
    """(the definition Python runs for ``function``, its class, "") or why none can be
    named: every binding of the name in its scope counts (and, for a method, of the class's
    name in the module), and a module that writes its namespace by name is refused."""
    assert source.tree is not None
    if source.dynamic:
        line, what = source.dynamic[0]
        return None, None, (f"{source.path} writes names at run time ({what}, line {line}): "
                            f"what {function} holds when it runs cannot be told from the source")
    owner, _, name = function.rpartition(".")
    scope, where, cls = source.names, source.path, None
    if owner:
        found, why = sole_definition(scope, owner, where)
        if why or not isinstance(found, ast.ClassDef):
            return None, None, why
        cls = found
        decorated = unknown_decorator(cls, scope)
        if decorated:
            return None, cls, (f"class {owner} is decorated with @{decorated}: the name holds "
                               f"what the decorator returns, which the source does not say")
        if any(k.arg == "metaclass" for k in cls.keywords):
            return None, cls, (f"class {owner} has a metaclass: what its body's names hold is "
                               f"the metaclass's choice, which the source does not say")
        scope, where = scope_bindings(cls.body, module=False), f"class {owner} of {source.path}"
    found, why = sole_definition(scope, name, where)
    if why or not isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef):
        return None, cls, why
    decorated = unknown_decorator(found, {**source.names, **scope})
    if decorated:
        return None, cls, (f"{function} is decorated with @{decorated}: the name holds what the "
                           f"decorator returns, which the source does not say")
    writes = source.attributes.get(name, [])
    if writes:
        return None, cls, (f"{source.path} writes an attribute named {name} (line {writes[0]}):"
                           f" it can replace {function} when it runs")
    return found, cls, ""


def _find_callee(
    sandbox: Sandbox, source: _Source, cls: ast.ClassDef | None, to: str
) -> _Callee | str:
    assert source.tree is not None
    if cls is not None:
        method, why = sole_definition(scope_bindings(cls.body, module=False), to,
                                      f"class {cls.name} of {source.path}")
        if why:
            return why
        if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            return _Callee(method, f"{source.path} line {method.lineno}",
                           modules=frozenset({cls.name}), method=True,
                           how=f"self.{to}(...) or {cls.name}.{to}(...)")
    bindings = source.names.get(to, [])
    if len(bindings) > 1:
        return (f"{to} is bound {len(bindings)} times at the top of {source.path}: which one "
                "the function calls cannot be told from the source")
    modules = frozenset(_module_aliases(source, to, sandbox))
    if bindings:
        stmt = bindings[0].node
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return _Callee(stmt, f"{source.path} line {stmt.lineno}", local=to, modules=modules,
                           how=f"{to}(...)")
        if isinstance(stmt, ast.ImportFrom):
            imported = next(a.name for a in stmt.names if (a.asname or a.name) == to)
            found = _definition(sandbox, _absolute(source.path, stmt), imported)
            if isinstance(found, str):
                return found
            return _Callee(found[0], found[1], local=to, modules=modules, how=f"{to}(...)")
        return f"{to} is not a function of {source.path} (bound by line {bindings[0].line})"
    for local, module in _imported_modules(source).items():
        found = _definition(sandbox, module, to)
        if not isinstance(found, str):
            return _Callee(found[0], found[1], modules=frozenset({local}) | modules,
                           how=f"{local}.{to}(...)")
    return f"the definition of {to} is not in the end state (not in {source.path}, not imported)"


def _module_aliases(source: _Source, to: str, sandbox: Sandbox) -> list[str]:
    return [alias for alias, module in _imported_modules(source).items()
            if not isinstance(_definition(sandbox, module, to), str)]


def _imported_modules(source: _Source) -> dict[str, str]:
    """Local name → dotted module, for ``import a.b as m`` and ``from a import b`` (b a
    module or not: only a module with ``to`` in it is ever used)."""
    assert source.tree is not None
    out: dict[str, str] = {}
    for stmt in source.tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname:
                    out[a.asname] = a.name
        elif isinstance(stmt, ast.ImportFrom):
            base = _absolute(source.path, stmt)
            for a in stmt.names:
                out[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
    # a module's name bound again (``core = other``) calls into whatever it holds last
    return {name: module for name, module in out.items() if len(source.names.get(name, [])) == 1}


def _absolute(path: str, stmt: ast.ImportFrom) -> str:
    """The dotted module an ``ImportFrom`` in the file ``path`` names (relative resolved)."""
    if not stmt.level:
        return stmt.module or ""
    package = list(PurePosixPath(path).parent.parts)
    package = package[: len(package) - (stmt.level - 1)] if stmt.level > 1 else package
    return ".".join([*package, *([stmt.module] if stmt.module else [])])


def _definition(
    sandbox: Sandbox, module: str, name: str, hops: int = 0
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | str:
    """``name``'s ``def`` in ``module`` of the end state, following re-exports."""
    base = module.replace(".", "/")
    for rel in (f"{base}.py", f"{base}/__init__.py"):
        if not sandbox.exists(rel):
            continue
        source = _read_module(sandbox, rel)
        if source.error or source.tree is None:
            return source.error
        if source.dynamic:
            line, what = source.dynamic[0]
            return (f"{rel} writes names at run time ({what}, line {line}): what {name} holds "
                    f"there cannot be told from the source")
        bindings = source.names.get(name, [])
        if len(bindings) != 1:
            break
        stmt = bindings[0].node
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return stmt, f"{rel} line {stmt.lineno}"
        if isinstance(stmt, ast.ImportFrom) and hops < MAX_HOPS:
            imported = next(a.name for a in stmt.names if (a.asname or a.name) == name)
            return _definition(sandbox, _absolute(rel, stmt), imported, hops + 1)
        break
    return f"the definition of {name} is not in the end state (looked in {module})"
