"""Where a judged test lets the package's own operators decide, found statically (ES508).

In the judge, an object the package returns that is not plain data is a reference, and the
judge refuses to let its operators decide an assertion. :class:`OperandScanner` finds the
same places before anything runs: an assertion operand, a comparison or a truth test that is
for sure such an object (:mod:`endstate_author.rules.judge_package` says when it is sure),
and the package's dunders that do not cross. Anything unsure is never reported: a false
ES508 on a sound holdout is worse than a miss (the judge still refuses it at grading).
"""

from __future__ import annotations

import ast
from itertools import repeat

from endstate_author.engine.astwalk import walk_spans
from endstate_author.rules.judge_package import PackageModel, Ref
from endstate_harness.graders.judge.proxies import ALLOWED, MODULE_DATA, OBJECT_DATA

MSG_POSITIONS: dict[str, int] = {
    "assertAlmostEqual": 3, "assertCountEqual": 2, "assertDictContainsSubset": 2,
    "assertDictEqual": 2, "assertEqual": 2, "assertFalse": 1, "assertGreater": 2,
    "assertGreaterEqual": 2, "assertIn": 2, "assertIs": 2, "assertIsInstance": 2,
    "assertIsNone": 1, "assertIsNot": 2, "assertIsNotNone": 1, "assertLess": 2,
    "assertLessEqual": 2, "assertListEqual": 2, "assertMultiLineEqual": 2,
    "assertNotAlmostEqual": 3, "assertNotEqual": 2, "assertNotIn": 2, "assertNotIsInstance": 2,
    "assertNotRegex": 2, "assertRegex": 2, "assertSequenceEqual": 2, "assertSetEqual": 2,
    "assertTrue": 1, "assertTupleEqual": 2, "fail": 0,
    # no ``msg`` among the positional operands (context managers, the deprecated aliases)
    "assertAlmostEquals": -1, "assertEquals": -1, "assertLogs": -1, "assertNoLogs": -1,
    "assertNotAlmostEquals": -1, "assertNotEquals": -1, "assertNotRegexpMatches": -1,
    "assertRaises": -1, "assertRaisesRegex": -1, "assertRaisesRegexp": -1,
    "assertRegexpMatches": -1, "assertWarns": -1, "assertWarnsRegex": -1, "assert_": -1,
    "failIf": -1, "failIfAlmostEqual": -1, "failIfEqual": -1, "failUnless": -1,
    "failUnlessAlmostEqual": -1, "failUnlessEqual": -1, "failUnlessRaises": -1,
}
"""Where ``msg`` sits among the positional operands of each ``TestCase`` assertion (the judge
refuses references in all of them but ``ALLOWED``); -1: it takes no ``msg`` there. Written
out rather than read from :mod:`unittest` by :mod:`inspect` at each start (30 ms of a 200 ms
lint of one task); the tests hold it to the running Python's ``unittest``."""


_CROSSING = {
    "module": MODULE_DATA | {"__doc__", "__name__"},
    "class": OBJECT_DATA | {"__module__", "__class__"},
    "function": OBJECT_DATA | {"__class__"},
    "instance": OBJECT_DATA | {"__class__", "__module__"},
}
"""The dunders of a reference the judge reads as values (or answers itself, rightly)."""

_BINDS = frozenset({ast.Name, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign})
"""The nodes :meth:`OperandScanner._bindings` reads (the parser's own classes, never
subclassed, so a node's ``type`` is looked up instead of asking isinstance four times)."""

_CHECKS = frozenset({ast.Call, ast.Compare, ast.UnaryOp, ast.If, ast.While, ast.IfExp,
                     ast.Assert, ast.BoolOp, ast.Attribute})
"""The nodes :meth:`OperandScanner._check` reads (likewise)."""

OPERATORS = "operators"
BOUNDARY = "boundary"


class OperandScanner:
    """Finds, in one test module, where a reference would be an assertion's operand (or a
    comparison's, or a truth value), and the dunders of the package that do not cross."""

    def __init__(self, model: PackageModel) -> None:
        self.model = model
        self.found: list[tuple[ast.AST, str, str]] = []  # (node, why, OPERATORS | BOUNDARY)

    def scan(self, module: ast.Module,
             spans: tuple[list[ast.AST], list[int]] | None = None) -> None:
        """``spans``: the module's :func:`~endstate_author.engine.astwalk.walk_spans`, when the
        caller has them (lint's context keeps one per file)."""
        own, functions = _scopes(module, spans or walk_spans(module))
        env = self._bindings(own[id(module)], {})
        self._check(own[id(module)], env)
        for node in functions:
            nodes = own[id(node)]
            local = self._bindings(nodes, env, params=_params(node))
            if any(ref is not None for ref in local.values()):  # else nothing is the package's
                self._check(nodes, local)

    # --- types of names and expressions ---------------------------------------------------

    def _bindings(
        self, nodes: list[ast.AST], outer_env: dict[str, Ref | None], *,
        params: set[str] | None = None,
    ) -> dict[str, Ref | None]:
        """The names a scope binds, each with its type when every binding agrees on it (an
        import of the package, or an assignment of a sure reference); any other binding (a
        parameter, a loop variable, unpacking) makes the name unknown. Flow-insensitive."""
        sources: dict[str, list[Ref | ast.expr | None]] = {name: [None] for name in params or ()}
        direct: set[int] = set()
        stores: list[ast.Name] = []
        for node in nodes:
            if type(node) not in _BINDS:  # most nodes bind nothing: one look-up says so
                continue
            if isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    stores.append(node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    sources.setdefault(bound, []).append(
                        self.model.resolve(alias.name if alias.asname else bound))
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    ref = self.model.resolve(f"{node.module}.{alias.name}") \
                        if node.level == 0 and node.module else None
                    sources.setdefault(alias.asname or alias.name, []).append(ref)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        direct.add(id(target))
                        sources.setdefault(target.id, []).append(node.value)
        for name_node in stores:  # any other binding of a name makes it unknown
            if id(name_node) not in direct:
                sources.setdefault(name_node.id, []).append(None)
        env = dict(outer_env)
        for name in sources:
            env[name] = None  # a local shadows the outer name, whatever it is bound to
        for _ in range(2):  # twice: ``y = x`` after ``x = Money(1)`` sees x's type
            for name, bindings in sources.items():
                kinds = [b if isinstance(b, Ref) or b is None else self.type_of(b, env)
                         for b in bindings]
                first = kinds[0]
                env[name] = first if first is not None and all(k == first for k in kinds) \
                    else None
        return env

    def type_of(self, node: ast.AST, env: dict[str, Ref | None]) -> Ref | None:
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.type_of(node.value, env)
            return self.model.member(owner, node.attr) if owner is not None else None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "type" and len(node.args) == 1:
                of = self.type_of(node.args[0], env)
                ok = of is not None and of.kind == "instance" and of.target in self._classes()
                return Ref("class", of.target) if ok and of is not None else None
            callee = self.type_of(func, env)
            return self.model.call(callee) if callee is not None else None
        return None

    def _classes(self) -> set[str]:
        return {f"{m}.{n}" for m, e in self.model.modules.items()
                for n, d in e.names.items() if isinstance(d, ast.ClassDef)}

    # --- findings ------------------------------------------------------------------------

    def _check(self, nodes: list[ast.AST], env: dict[str, Ref | None]) -> None:
        for node in nodes:
            if type(node) not in _CHECKS:
                continue
            if isinstance(node, ast.Call):
                self._call(node, env)
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                sides = [(operands[i + k], op) for i, op in enumerate(node.ops) for k in (0, 1)
                         if not isinstance(op, ast.Is | ast.IsNot)]
                for side, op in sides:  # one finding per comparison
                    if self._operand(side, env, f"compares ({_OPS.get(type(op), '?')})"):
                        break
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                self._operand(node.operand, env, "takes the truth (not) of")
            elif isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
                self._operand(node.test, env, "takes the truth of")
            elif isinstance(node, ast.BoolOp):
                for value in node.values:
                    self._operand(value, env, "takes the truth (and/or) of")
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self._dunder(node, env)

    def _call(self, node: ast.Call, env: dict[str, Ref | None]) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        positions = MSG_POSITIONS if name.startswith(("assert", "fail")) else {}
        if isinstance(func, ast.Attribute) and name in positions and name not in ALLOWED:
            msg_at = positions[name]
            operands = [a for i, a in enumerate(node.args) if i != msg_at]
            operands += [k.value for k in node.keywords if k.arg != "msg"]
            parts = [part for operand in operands for part in _parts(operand)]
            for part in parts:  # one finding per assertion
                if self._operand(part, env, f"gives {name}"):
                    break
        elif name == "bool" and isinstance(func, ast.Name) and node.args:
            self._operand(node.args[0], env, "takes the truth (bool) of")
        elif name in ("vars", "dir") and isinstance(func, ast.Name) and node.args:
            self._boundary(node.args[0], env, f"{name}()")
        elif isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "inspect":
            for arg in node.args[:1]:
                self._boundary(arg, env, f"inspect.{name}()")

    def _operand(self, node: ast.AST, env: dict[str, Ref | None], what: str) -> bool:
        ref = self.type_of(node, env)
        if ref is not None:
            self.found.append((node, f"{what} {ref.describe()}", OPERATORS))
        return ref is not None

    def _dunder(self, node: ast.Attribute, env: dict[str, Ref | None]) -> None:
        attr = node.attr
        if not (attr.startswith("__") and attr.endswith("__")):
            return
        ref = self.type_of(node.value, env)
        if ref is not None and attr not in _CROSSING.get(ref.kind, frozenset()):
            self.found.append((node, f"reads {attr} of {ref.describe()}", BOUNDARY))

    def _boundary(self, node: ast.AST, env: dict[str, Ref | None], what: str) -> None:
        ref = self.type_of(node, env)
        if ref is not None:
            self.found.append((node, f"applies {what} to {ref.describe()}", BOUNDARY))


_OPS = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}


def _parts(node: ast.AST) -> list[ast.AST]:
    """An operand and, when it is a list/tuple/set/dict display, what it is made of."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [node, *(p for item in node.elts for p in _parts(item))]
    if isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None] + list(node.values)
        return [node, *(p for item in items for p in _parts(item))]
    return [node]


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in every}


_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef
_SCOPE_EDGES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})
"""Where :func:`_scopes` does not simply descend: a function opens a scope, a class's methods
do, a lambda's body is left out."""


def _scopes(module: ast.Module, spans: tuple[list[ast.AST], list[int]]
            ) -> tuple[dict[int, list[ast.AST]], list[_Function]]:
    """In one pass over the module's walk: each scope's own nodes, by the id of the module or
    function that owns them (not descending into nested functions, classes' methods or
    lambdas, which are their own scope; a class body's other statements belong to the
    enclosing scope), and every function of the module (each scanned with the module's
    names)."""
    nodes, starts = spans
    index = {id(node): i for i, node in enumerate(nodes)}
    own: dict[int, list[ast.AST]] = {id(module): []}
    functions: list[_Function] = []
    stack: list[tuple[int, list[ast.AST]]] = [
        (index[id(node)], own[id(module)]) for node in reversed(module.body)]
    while stack:
        i, into = stack.pop()
        node = nodes[i]
        into.append(node)
        if type(node) not in _SCOPE_EDGES:  # most nodes: their children are this scope's
            stack.extend(zip(range(starts[i + 1] - 1, starts[i] - 1, -1), repeat(into)))
        elif isinstance(node, _FUNCTION):
            _open(node, index, own, functions, stack)
        elif isinstance(node, ast.ClassDef):
            for statement in reversed(node.body):
                if isinstance(statement, _FUNCTION):
                    _open(statement, index, own, functions, stack)
                else:
                    stack.append((index[id(statement)], into))
    return own, functions


def _open(function: ast.FunctionDef | ast.AsyncFunctionDef, index: dict[int, int],
          own: dict[int, list[ast.AST]], functions: list[_Function],
          stack: list[tuple[int, list[ast.AST]]]) -> None:
    """A function's scope: its body's nodes are its own."""
    nodes: list[ast.AST] = []
    own[id(function)] = nodes
    functions.append(function)
    stack.extend((index[id(statement)], nodes) for statement in reversed(function.body))
