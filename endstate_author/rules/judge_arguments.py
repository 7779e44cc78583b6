"""ES508's argument check: a test that asserts on its own argument after the package's call.

Why: ``judged_tests`` sends arguments to the code under test as copies (values cross the
judge's boundary; objects of the test's process do not), and what the call does to its copy
never comes back. A test such as "the function leaves its input unchanged"
(``items = [3, 1]; sort_copy(items); self.assertEqual(items, [3, 1])``) then passes whatever
the code does, and "the function fills the list it is given" fails on every end state: the
same test run in process would tell a wrong solution from the right one. The judge cannot
reflect such effects back for every kind of value, so the assertion is refused statically.

Only what is certain is reported: a local name bound in the test to a mutable value built
there (a list, dict or set display or comprehension, ``list()``, ``dict()``, ``set()``,
``bytearray()``), passed itself (not a copy of it) to a call into the package, and read by a
later assertion of the same test with no binding of that name in between — an assertion about
the argument alone: one that also reads what a package call returned
(``assertEqual(total, sum(items))``) uses the argument to say what to expect, which the judge
has as it was.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from endstate_author.engine.astwalk import NodeIndex, walk

_MUTABLE_CALLS = frozenset({"list", "dict", "set", "bytearray", "deque", "defaultdict",
                            "OrderedDict", "Counter"})
_MUTABLE_NODES = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _mutable(value: ast.AST) -> bool:
    if isinstance(value, _MUTABLE_NODES):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _MUTABLE_CALLS
    return False


def _is_assertion(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Attribute) and func.attr.startswith("assert")
    return False


def _bound(nodes: list[ast.AST]) -> set[str]:
    """Names a statement binds (assignments, loops, with, walrus, del); ``nodes``: its walk."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
    return out


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a test's body in order, nested blocks (if, for, with, try) included."""
    for stmt in body:
        yield stmt
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, block, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) and not \
                    isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", None) or []:
            if isinstance(handler, ast.ExceptHandler):
                yield from _statements(handler.body)


def may_assert_on_arguments(nodes: NodeIndex) -> bool:
    """Whether any test of a file may be reported: some name is bound to a mutable value and
    some name so bound given to a call, anywhere in the file. Each test's own first check
    (below) asks the same of the test alone, a part of the file: when the file says no, every
    test would, and the file's index answers at once where a walk of each test would not."""
    built = {t.id for node in nodes.of(ast.Assign) if _mutable(node.value)
             for t in node.targets if isinstance(t, ast.Name)}
    return bool(built) and any(
        isinstance(a, ast.Name) and a.id in built
        for call in nodes.of(ast.Call) for a in [*call.args, *(k.value for k in call.keywords)])


def arguments_read_after_the_call(
    test: ast.FunctionDef | ast.AsyncFunctionDef, is_package: Callable[[ast.AST], bool]
) -> Iterator[tuple[ast.AST, str]]:
    """(assertion, why) for each assertion of ``test`` on a mutable argument it gave the
    package earlier (see the module's docstring)."""
    # one walk to rule most tests out at once (lint's time: a thousand tasks' tests): no
    # mutable value bound to a name, or none of those names given to a call of the package
    built: set[str] = set()
    given_any: set[str] = set()
    for node in walk(test):
        if isinstance(node, ast.Assign) and _mutable(node.value):
            built.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call) and (node.args or node.keywords):
            given_any.update(a.id for a in [*node.args, *(k.value for k in node.keywords)]
                             if isinstance(a, ast.Name))
    if not built & given_any:
        return
    mutable: set[str] = set()
    passed: dict[str, int] = {}  # name -> line of the package call it was given to
    results: set[str] = set()  # names bound to what a call of the package returned
    for stmt in _statements(test.body):
        inner = walk(stmt)  # one walk of the statement for every question below
        if _is_assertion(stmt):
            read = {n.id for n in inner if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Load)}
            if read & results or any(isinstance(n, ast.Call) and is_package(n.func)
                                     for n in inner):
                # about what the package returned (`assertEqual(total, sum(items))`): the
                # argument only helps say what to expect, and the judge has it as it was
                continue
            for name in sorted(read & set(passed)):
                yield stmt, (
                    f"asserts on `{name}` after giving it to the package under test (line "
                    f"{passed[name]}): judged_tests sends the package a copy, so what the call "
                    "does to it is never seen here, and the assertion holds or fails whatever "
                    "the code does"
                )
            continue
        calls = [n for n in inner if isinstance(n, ast.Call) and is_package(n.func)]
        given = {a.id for c in calls for a in [*c.args, *(k.value for k in c.keywords)]
                 if isinstance(a, ast.Name) and a.id in mutable}
        rebound = _bound(inner)
        # the test changing the value itself (items.append(4), items[0] = 1): what it then
        # asserts is its own doing, not the package's
        rebound |= {n.func.value.id for n in inner if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and not is_package(n.func)}
        rebound |= {t.value.id for n in inner
                    if isinstance(n, ast.Assign | ast.AugAssign)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Subscript | ast.Attribute)
                    and isinstance(t.value, ast.Name)}
        for name in rebound:
            passed.pop(name, None)
            mutable.discard(name)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
            stmt.targets[0], ast.Name
        ) and _mutable(stmt.value):
            mutable.add(stmt.targets[0].id)
        for name in given - rebound:
            passed[name] = getattr(stmt, "lineno", 0)
        if calls and isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            results.update(n.id for n in inner if isinstance(n, ast.Name)
                           and isinstance(n.ctx, ast.Store))
