"""How a function's code runs and what it is made of, read with :mod:`ast`.

The parts of :func:`endstate_harness.graders.structure.delegates_to` that look inside one
function: which calls can run (:func:`reachable_calls`), whether every way out passes one
(:func:`always_calls`), and whether an expression is a copy of another function's
(:func:`first_copy`). Nothing here imports or runs the code it reads.
"""

import ast
from collections.abc import Callable


def reachable_calls(
    function: ast.FunctionDef | ast.AsyncFunctionDef, matches: Callable[[ast.Call], bool]
) -> list[tuple[ast.Call, bool]]:
    """Calls ``matches`` accepts in code of ``function`` that can run, each with whether it
    is a statement of its own (its result dropped). A name the function binds itself shadows
    the callee."""
    shadowed = _bound_names(function)
    out: list[tuple[ast.Call, bool]] = []
    for stmt, dropped_call in _live_statements(function.body):
        for node in _own_expressions(stmt):
            if isinstance(node, ast.Call) and matches(node):
                if isinstance(node.func, ast.Name) and node.func.id in shadowed:
                    continue
                out.append((node, node is dropped_call))
    return out


def _live_statements(body: list[ast.stmt]) -> list[tuple[ast.stmt, ast.AST | None]]:
    """The statements of ``body`` (nested blocks included) that can run, each with the call
    it drops when it is an expression statement of one call."""
    out: list[tuple[ast.stmt, ast.AST | None]] = []
    for stmt in body:
        dropped = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
            else None
        out.append((stmt, dropped))
        if isinstance(stmt, ast.If | ast.While):
            truth = _constant_truth(stmt.test)
            if truth is not False:
                out.extend(_live_statements(stmt.body))
            if truth is not True or isinstance(stmt, ast.While):
                out.extend(_live_statements(stmt.orelse))
        elif isinstance(stmt, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
            out.extend(_live_statements(stmt.body))
            out.extend(_live_statements(getattr(stmt, "orelse", [])))
        elif isinstance(stmt, ast.Try | ast.TryStar):
            for block in (stmt.body, stmt.orelse, stmt.finalbody,
                          *(h.body for h in stmt.handlers)):
                out.extend(_live_statements(block))
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                out.extend(_live_statements(case.body))
        if isinstance(stmt, ast.Return | ast.Raise | ast.Break | ast.Continue):
            break  # what follows in this block never runs
    return out


def always_calls(body: list[ast.stmt], calls: set[int]) -> bool:
    """Whether every way through ``body`` to a ``return`` or its end makes one of ``calls``
    (by node id) first; ways out by ``raise`` do not count."""
    for stmt in body:
        if _calls_first(stmt, calls):
            return True
        if any(isinstance(n, ast.Return) for n in _own_nodes_deep(stmt)):
            return False  # a way out before any sure call
    return False


def _calls_first(stmt: ast.stmt, calls: set[int]) -> bool:
    if isinstance(stmt, ast.If):
        return _sure(stmt.test, calls) or (always_calls(stmt.body, calls)
                                           and always_calls(stmt.orelse, calls))
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return any(_sure(w.context_expr, calls) for w in stmt.items) \
            or always_calls(stmt.body, calls)
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return _sure(stmt.iter, calls)
    if isinstance(stmt, ast.While):
        return _sure(stmt.test, calls)
    if isinstance(stmt, ast.Try | ast.TryStar):
        handled = all(always_calls(h.body, calls) or _raises(h.body) for h in stmt.handlers)
        return always_calls(stmt.finalbody, calls) or (always_calls(stmt.body, calls) and handled)
    if isinstance(stmt, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return):
        return stmt.value is not None and _sure(stmt.value, calls)
    return False


def _raises(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Raise) and not any(
        isinstance(n, ast.Return) for s in body for n in _own_nodes_deep(s))


def _sure(node: ast.AST, calls: set[int]) -> bool:
    """Whether evaluating ``node`` always evaluates one of ``calls``."""
    if id(node) in calls:
        return True
    if isinstance(node, ast.Lambda):
        return False
    if isinstance(node, ast.BoolOp):
        return _sure(node.values[0], calls)
    if isinstance(node, ast.IfExp):
        return _sure(node.test, calls) or (_sure(node.body, calls) and _sure(node.orelse, calls))
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        return _sure(node.generators[0].iter, calls)
    return any(_sure(child, calls) for child in ast.iter_child_nodes(node))


def _own_nodes_deep(stmt: ast.stmt) -> list[ast.AST]:
    """Every node of ``stmt`` but those of nested functions, lambdas and classes."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        out.append(node)
        if node is not stmt and isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
        ):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _constant_truth(test: ast.expr) -> bool | None:
    if isinstance(test, ast.Constant):
        return bool(test.value)
    return None


def _own_expressions(stmt: ast.stmt) -> list[ast.AST]:
    """The expression nodes of one statement itself (not of the blocks it holds, nor of
    nested functions, lambdas and classes)."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody", "handlers", "cases", "decorator_list"):
            continue
        items = value if isinstance(value, list) else [value]
        stack.extend(v for v in items if isinstance(v, ast.AST))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _bound_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names ``function`` binds in its own scope: parameters and every name stored."""
    args = function.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    body = function.body if isinstance(function.body, list) else [function.body]
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names


# --- copies ------------------------------------------------------------------------------


def first_copy(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    callee: ast.FunctionDef | ast.AsyncFunctionDef,
    callee_file: str,
    matches: Callable[[ast.Call], bool],
    min_nodes: int,
) -> str:
    """The first expression of ``function`` that is a copy of one of ``callee``'s
    (:func:`endstate_harness.graders.structure.delegates_to` says what a copy is), described
    with both places; "" when there is none. Calls ``matches`` accepts are the delegation:
    their arguments are not searched."""
    theirs = _callee_shapes(callee, min_nodes)
    if not theirs:
        return ""
    ours = _bound_names(function)
    skip = {id(arg) for call, _ in reachable_calls(function, matches)
            for arg in [*call.args, *(k.value for k in call.keywords)]}
    stack = [n for n in _top_expressions(function) if id(n) not in skip]
    while stack:
        node = stack.pop(0)
        shape, size = _shape(node, ours)
        if size < min_nodes:
            continue
        match = theirs.get(shape)
        if match is not None:
            return (f"`{ast.unparse(node)}` (line {node.lineno}) is `{ast.unparse(match)}` "  # type: ignore[attr-defined]
                    f"of {callee_file} "
                    f"line {getattr(match, 'lineno', '?')}")
        stack.extend(c for c in ast.iter_child_nodes(node)
                     if isinstance(c, ast.expr) and id(c) not in skip)
    return ""


_SEEN: dict[int, tuple[ast.AST, int, dict[tuple[object, ...], ast.AST]]] = {}
"""The last callees' shapes by the node itself (one ``delegates_to`` asks once per function
that delegates to the same callee)."""
_BY_TREE: dict[tuple[str, int], dict[tuple[object, ...], ast.AST]] = {}
"""Callees' shapes by their tree, positions included (prove grades every mutant of a module,
and nearly all of them leave the callee as it was). Both are small and cleared when full."""


def _callee_shapes(
    callee: ast.FunctionDef | ast.AsyncFunctionDef, min_nodes: int
) -> dict[tuple[object, ...], ast.AST]:
    """Each shape of ``callee``'s expressions of at least ``min_nodes`` nodes, with the first
    expression of that shape: what :func:`first_copy` looks for a copy of. The shapes of a
    function cost the square of its size, and the same callee is asked for again and again:
    remembered, by the node and by its tree (the expression kept for a shape is then one of an
    identical tree, at the same lines: the words of a finding are the same)."""
    seen = _SEEN.get(id(callee))
    if seen is not None and seen[0] is callee and seen[1] == min_nodes:
        return seen[2]
    key = (ast.dump(callee, include_attributes=True), min_nodes)
    found = _BY_TREE.get(key)
    if found is None:
        found = {}
        bound = _bound_names(callee)
        for node in _code_expressions(callee, None):
            shape, size = _shape(node, bound)
            if size >= min_nodes:
                found.setdefault(shape, node)
        if len(_BY_TREE) >= 64:
            _BY_TREE.clear()
        _BY_TREE[key] = found
    if len(_SEEN) >= 64:
        _SEEN.clear()
    _SEEN[id(callee)] = (callee, min_nodes, found)
    return found


def _top_expressions(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The outermost expressions of the function's code (docstring and ``raise`` left out),
    in source order."""
    out: list[ast.expr] = []
    for stmt in _statements(function):
        if isinstance(stmt, ast.Raise):
            continue
        for name, value in ast.iter_fields(stmt):
            if name in ("body", "orelse", "finalbody", "handlers", "cases", "decorator_list",
                        "returns", "args"):
                continue
            items = value if isinstance(value, list) else [value]
            out.extend(v for v in items if isinstance(v, ast.expr))
            out.extend(w.context_expr for w in items if isinstance(w, ast.withitem))
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def _statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    out: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        out.append(stmt)
        for name in ("body", "orelse", "finalbody"):
            stack.extend(reversed([s for s in getattr(stmt, name, []) if isinstance(s, ast.stmt)]))
        for handler in getattr(stmt, "handlers", []):
            stack.extend(reversed(handler.body))
        for case in getattr(stmt, "cases", []):
            stack.extend(reversed(case.body))
    return out


def _code_expressions(
    function: ast.FunctionDef | ast.AsyncFunctionDef, skip: set[int] | None
) -> list[ast.expr]:
    """Every expression of the function's code, nested ones included."""
    out: list[ast.expr] = []
    stack: list[ast.AST] = list(_top_expressions(function))
    while stack:
        node = stack.pop()
        if skip and id(node) in skip:
            continue
        if isinstance(node, ast.expr):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


_NOT_NODES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _shape(node: ast.AST, bound: set[str]) -> tuple[tuple[object, ...], int]:
    """``node`` normalised (see :func:`delegates_to`) and its size in expression nodes."""
    renamed: dict[str, str] = {}

    def walk(item: ast.AST) -> tuple[tuple[object, ...], int]:
        if isinstance(item, ast.Name):
            if item.id in bound:
                label = renamed.setdefault(item.id, f"_{len(renamed)}")
            else:
                label = item.id
            return ("Name", label), 1
        parts: list[object] = [type(item).__name__]
        size = 1 if isinstance(item, ast.expr) else 0
        for field_name, value in ast.iter_fields(item):
            if field_name in ("ctx", "type_comment"):
                continue
            if isinstance(value, list):
                inner: list[object] = []
                for element in value:
                    if isinstance(element, ast.AST):
                        shape, n = walk(element)
                        inner.append(shape)
                        size += n
                    else:
                        inner.append(element)
                parts.append((field_name, tuple(inner)))
            elif isinstance(value, ast.AST):
                if isinstance(value, _NOT_NODES):
                    parts.append((field_name, type(value).__name__))
                else:
                    shape, n = walk(value)
                    parts.append((field_name, shape))
                    size += n
            else:
                parts.append((field_name, value if not isinstance(value, float) else repr(value)))
        return tuple(parts), size

    return walk(node)
