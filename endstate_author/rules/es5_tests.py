"""ES509-ES511 — tests that look like tests but check less than they seem, found statically.

Each reads the task's test files (every holdout module, and the fixture's test files as the
task's test commands find them) with ``ast``, never importing them, and reports only a shape
whose meaning does not depend on what the package does: a method unittest never runs, an
expectation any crash meets, a comparison whose two sides come from the code under test.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from endstate_author.engine.astwalk import NodeIndex, walk
from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.rules.es3_assertions import fixture_test_files
from endstate_author.rules.es5_judge import _top_modules as top_modules
from endstate_harness.layout import FIXTURE_DIR, HOLDOUT_DIR


def _test_modules(
    ctx: TaskContext,
) -> Iterator[tuple[str, str, ast.Module, NodeIndex]]:
    """(tree, rel, module, its nodes) of every test file of the task that parses; the nodes
    are the context's one walk of the file, by class, shared with the other rules."""
    listed = [(HOLDOUT_DIR, rel) for rel in sorted(ctx.files(HOLDOUT_DIR))]
    listed += [(FIXTURE_DIR, rel) for rel in fixture_test_files(ctx)]
    for tree, rel in listed:
        if rel.endswith(".py"):
            module = ctx.python_module(tree, rel)
            if module is not None:
                yield tree, rel, module, ctx.python_index(tree, rel)


def _at(ctx: TaskContext, code: str, text: str, tree: str, rel: str, node: ast.AST) -> Diagnostic:
    line = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0)
    end_col = getattr(node, "end_col_offset", None)
    return ctx.at_file(
        code, f"{tree}/{rel}: {text}", ctx.files(tree)[rel].path, line=line, column=col + 1,
        end_line=getattr(node, "end_lineno", None) or line,
        end_column=(end_col + 1) if end_col is not None else col + 2,
    )


@rule("ES509", "test-defined-twice")
def test_defined_twice(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A test method defined twice in one class (or a test function twice in one module).

    ## What it checks
    The statements of each class body, and of each test module's top level, of the task's
    test files (holdout/ and the fixture's tests): a `test*` name defined by two `def`s.
    Definitions under `if`/`try` are left alone (only one of them may run).

    ## Why it matters
    The class keeps the last definition; the first is never collected and never runs, so
    whatever it asserts is silently not asserted. A copied test renamed in its body but not
    in its name is the usual cause.

    ## Example
    Two `def test_rounding(self):` in one `TestCase`, the first checking halves, the second
    thirds: only thirds are tested.

    ## Fix
    Rename one of them (`test_rounding_halves`), or delete the one you meant to replace.
    """
    for tree, rel, module, nodes in _test_modules(ctx):
        bodies: list[list[ast.stmt]] = [module.body]
        bodies += [n.body for n in nodes.of(ast.ClassDef)]
        for body in bodies:
            first: dict[str, ast.AST] = {}
            for stmt in body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    stmt.name.startswith("test")
                ):
                    if stmt.name in first:
                        where = getattr(stmt, "lineno", 0)
                        yield _at(
                            ctx, "ES509",
                            f"{stmt.name} is defined again at line {where}: only the last "
                            "definition runs, so this one is never run and asserts nothing",
                            tree, rel, first[stmt.name],
                        )
                    first[stmt.name] = stmt


_RAISES = frozenset({"assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "raises"})
_TOO_WIDE = frozenset({"Exception", "BaseException"})


def _too_wide(node: ast.expr, shadowed: set[str]) -> str | None:
    """``Exception`` or ``BaseException`` named by ``node`` (alone or in a tuple), or None."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    for item in items:
        if isinstance(item, ast.Name) and item.id in _TOO_WIDE and item.id not in shadowed:
            return item.id
        if (isinstance(item, ast.Attribute) and item.attr in _TOO_WIDE
                and isinstance(item.value, ast.Name) and item.value.id == "builtins"):
            return item.attr
    return None


def _pattern(call: ast.Call, name: str) -> ast.expr | None:
    """The message pattern of an ``assertRaisesRegex`` / ``pytest.raises(match=…)`` call."""
    if name.startswith("assertRaisesRegex"):
        if len(call.args) > 1:
            return call.args[1]
        return next((k.value for k in call.keywords if k.arg == "expected_regex"), None)
    return next((k.value for k in call.keywords if k.arg == "match"), None)


def _narrows(pattern: ast.expr | None) -> bool:
    """Whether a message pattern rules out some crash: any pattern that is not a constant
    matching the empty message (``""``, ``".*"``) does, as far as can be read."""
    if pattern is None:
        return False
    if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str):
        try:
            return re.search(pattern.value, "") is None
        except re.error:
            return True
    return True


def _bound_names(nodes: NodeIndex) -> set[str]:
    """Names the module binds itself (a class, an assignment, an import): a test file's own
    ``Exception`` is not the builtin."""
    names: set[str] = {
        node.name for node in nodes.of(ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    }
    for node in nodes.of(ast.Assign):
        names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in nodes.of(ast.Import, ast.ImportFrom):
        names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


@rule("ES510", "raises-any-exception", "warning")
def raises_any_exception(ctx: TaskContext) -> Iterator[Diagnostic]:
    """An `assertRaises`, `assertRaisesRegex` or `pytest.raises` that accepts any Exception.

    ## What it checks
    Each such call in the task's test files (as a context manager or with a callable) whose
    exception is `Exception` or `BaseException`, alone or in a tuple of exception types. A
    message pattern that rules some messages out (`assertRaisesRegex(Exception, "must be
    positive")`, `match=`) narrows it enough.

    ## Why it matters
    The untouched fixture's own crash (a `NotImplementedError`, a `TypeError` from a missing
    argument, an `AttributeError`) is an `Exception` too, so the test passes before any work
    and after the wrong work. prove shows it when the fixture raises there (ES901).

    ## Example
    `with self.assertRaises(Exception): parse_duration("-5m")`

    ## Fix
    Name the exception the prompt asks for (`ValueError`), or check its message.
    """
    for tree, rel, _, nodes in _test_modules(ctx):
        if "aises" not in (ctx.read_tree_text(tree, rel) or ""):  # (r|R)aises: else, at once
            continue
        shadowed = _bound_names(nodes)
        for node in nodes.of(ast.Call):
            if not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else ""
            if name not in _RAISES:
                continue
            if name == "raises" and not (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "pytest"
            ):
                continue
            wide = _too_wide(node.args[0], shadowed)
            if wide is None or _narrows(_pattern(node, name)):
                continue
            yield _at(
                ctx, "ES510",
                f"{name}({wide}) is met by any crash, the untouched fixture's included (a "
                "NotImplementedError, a TypeError, an AttributeError): name the exception the "
                "task asks for",
                tree, rel, node,
            )


_EQUALITY = frozenset({
    "assertEqual", "assertEquals", "assertAlmostEqual", "assertListEqual", "assertDictEqual",
    "assertTupleEqual", "assertSetEqual", "assertSequenceEqual", "assertCountEqual",
    "assertMultiLineEqual", "assertIs",
})  # fmt: skip


def _package_names(nodes: NodeIndex, modules: set[str]) -> set[str]:
    """Local names the test module binds to the package (``import pkg``, ``from pkg import
    TABLE``)."""
    names: set[str] = set()
    for node in nodes.of(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in modules:
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in modules:
                names.update(alias.asname or alias.name for alias in node.names)
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _reads(node: ast.expr, package: set[str]) -> tuple[bool, bool]:
    """In one walk of an operand: whether it calls the package, and whether it reads an
    entry of a package's table (``TABLE[key]``, ``pkg.TABLE[key]``, ``2 * UNITS["km"]``)
    and calls nothing of the package."""
    table = False
    for n in walk(node):
        if isinstance(n, ast.Call) and _root(n.func) in package:
            return True, False
        if isinstance(n, ast.Subscript) and not table:
            table = _root(n) in package
    return False, table


def _one_reads_the_others_table(
    left_calls: bool, left_table: bool, right: ast.expr, package: set[str]
) -> bool:
    """Whether one operand reads the package's table while the other calls the package
    (``left``'s answers given, ``right`` walked only when they leave it open)."""
    if not (left_calls or left_table):
        return False
    right_calls, right_table = _reads(right, package)
    return (left_table and right_calls) or (right_table and left_calls)


def _same(left: object, right: object) -> bool:
    """Whether two operands are written alike: what comparing their ``ast.dump`` texts says
    (the same classes and fields, each value by its ``repr``, positions left out), without
    making the texts, and stopping at the first difference."""
    if isinstance(left, ast.AST):
        return type(left) is type(right) and all(
            _same(getattr(left, name, None), getattr(right, name, None))
            for name in left._fields)  # fmt: skip
    if isinstance(left, list):
        return isinstance(right, list) and len(left) == len(right) and all(map(_same, left, right))
    return type(left) is type(right) and repr(left) == repr(right)


def _compared(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """The two operands of an equality assertion (a ``self.assertEqual`` call or an
    ``assert a == b``), or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in _EQUALITY and len(node.args) >= 2:
            return node.args[0], node.args[1]
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        test = node.test
        if len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.Is):
            return test.left, test.comparators[0]
    return None


@rule("ES511", "expected-from-the-code-under-test", "warning")
def expected_from_code(ctx: TaskContext) -> Iterator[Diagnostic]:
    """An assertion compares a result with a value computed by the code under test itself.

    ## What it checks
    Equality assertions (`assertEqual` and its kin, `assert a == b`) of the task's test
    files whose two operands are the same expression calling the package
    (`assertEqual(f(x), f(x))`), or whose one side calls the package while the other reads
    an entry of the package's own table (`assertEqual(factor("km"), FACTORS["km"])`).

    ## Why it matters
    Both sides come from the code the agent writes: a wrong function agrees with itself, and
    a wrong table entry agrees with the function that reads it. The test passes whatever
    the code does.

    ## Example
    `self.assertEqual(to_metres(2, "km"), 2 * UNITS["km"])` with `UNITS` from the package.

    ## Fix
    Write the expected value out (`2000`), from the prompt or the specification, not from
    the package.
    """
    modules = top_modules(ctx, "")
    if not modules:
        return
    for tree, rel, _, nodes in _test_modules(ctx):
        package = _package_names(nodes, modules)
        # both findings need a call of the package among the file's calls: none, none here
        if not package or not any(_root(c.func) in package for c in nodes.of(ast.Call)):
            continue
        for node in nodes.of(ast.Call, ast.Assert):
            pair = _compared(node)
            if pair is None:
                continue
            left, right = pair
            left_calls, left_table = _reads(left, package)
            if left_calls and _same(left, right):
                why = "both sides are the same call into the code under test"
            elif _one_reads_the_others_table(left_calls, left_table, right, package):
                why = ("the expected side reads the package's own table, which the code under "
                       "test reads too")
            else:
                continue
            yield _at(
                ctx, "ES511",
                f"{why}: a wrong end state agrees with itself, so this passes whatever the "
                "code does; write the expected value out",
                tree, rel, node,
            )
