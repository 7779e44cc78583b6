"""ES508 — a test that the judge cannot run, or will refuse, found statically."""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from endstate_author.engine.astwalk import NodeIndex
from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.rules.es3_assertions import graders_named
from endstate_author.rules.judge_arguments import (
    arguments_read_after_the_call,
    may_assert_on_arguments,
)
from endstate_author.rules.judge_operands import BOUNDARY, OperandScanner
from endstate_author.rules.judge_package import PackageModel
from endstate_harness.graders.judge.proxies import PLAIN_VALUES_FIX
from endstate_harness.layout import FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR

_CANNOT_CROSS_CALLS = frozenset(
    {"StringIO", "BytesIO", "open", "Path", "PurePath", "PosixPath", "Mock", "MagicMock",
     "TemporaryFile", "NamedTemporaryFile"}
)  # fmt: skip
"""Constructors of objects that live in the test's process and cannot be sent as values."""


def _top_modules(ctx: TaskContext, start_top: str) -> set[str]:
    """Top-level modules and packages of the fixture and solution: the code under test."""
    found: set[str] = set()
    for tree in (ctx.fixture, ctx.solution):
        for rel, entry in tree.items():
            first, _, rest = rel.partition("/")
            if entry.is_dir:
                continue
            if rest and rel.endswith(".py"):
                found.add(first)
            elif not rest and first.endswith(".py"):
                found.add(first[:-3])
    return {m for m in found if m.isidentifier() and m != start_top}


def _package_model(ctx: TaskContext, modules: set[str], helpers: object) -> PackageModel:
    """The code under test (the fixture with the solution over it) and the child helpers, as
    the judge's child would import them."""
    sources: dict[str, tuple[ast.Module, bool]] = {}
    yield_free: set[str] = set()
    for tree in (FIXTURE_DIR, SOLUTION_DIR):
        for rel in sorted(ctx.files(tree)):
            top = rel.split("/", 1)[0].removesuffix(".py")
            if rel.endswith(".py") and top in modules:
                _add_source(ctx, sources, yield_free, tree, rel)
    for rel in helpers if isinstance(helpers, list) else []:
        rel = str(rel).strip("/")
        for tree in (FIXTURE_DIR, HOLDOUT_DIR):
            if rel.endswith(".py") and rel in ctx.files(tree):
                _add_source(ctx, sources, yield_free, tree, rel)
    return PackageModel(sources, frozenset(yield_free))


def _add_source(
    ctx: TaskContext, sources: dict[str, tuple[ast.Module, bool]], yield_free: set[str],
    tree: str, rel: str,
) -> None:
    module = ctx.python_module(tree, rel)
    if module is None:
        return
    parts = rel[:-3].split("/")
    is_package = parts[-1] == "__init__"
    dotted = ".".join(parts[:-1] if is_package else parts)
    if dotted and all(p.isidentifier() for p in dotted.split(".")):
        sources[dotted] = (module, is_package)
        text = ctx.read_tree_text(tree, rel)  # the text the module was parsed from
        if text is not None and "yield" not in text:
            yield_free.add(dotted)
        else:  # a later tree's file (the solution over the fixture) decides
            yield_free.discard(dotted)


def _judged_files(ctx: TaskContext, args: dict[str, Any]) -> list[tuple[str, str]]:
    """(tree, rel) of each Python file the judge loads for one ``judged_tests`` entry."""
    start = str(args.get("start_dir", "tests")).strip("/")
    pattern = args.get("pattern", "test*.py")
    pattern = pattern if isinstance(pattern, str) and pattern else "test*.py"
    out: list[tuple[str, str]] = []
    trees = [HOLDOUT_DIR] + ([FIXTURE_DIR] if args.get("visible", True) is not False else [])
    for tree in trees:
        for rel, entry in sorted(ctx.files(tree).items()):
            path = PurePosixPath(rel)
            if entry.is_dir or path.suffix != ".py" or not fnmatch.fnmatch(path.name, pattern):
                continue
            if not start or path.is_relative_to(start):
                out.append((tree, rel))
    return out


class _Finder:
    """Collects the places in one test module where the boundary would be crossed."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules
        self.package_names: set[str] = set()  # local names bound to the package's things
        self.local_defs: set[str] = set()  # functions and classes defined by the test
        self.found: list[tuple[ast.AST, str]] = []

    def scan(self, nodes: NodeIndex) -> None:
        """``nodes``: the file's index. The findings come depth first (the order
        :class:`ast.NodeVisitor` visits, so they come in the order they always did); the
        index's lists by class are read first, and the depth-first order made only when
        they find more than one (one finding is in that order already)."""
        for node in nodes.of(ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in self.modules:
                    self.package_names.add((alias.asname or alias.name).split(".")[0])
        for node in nodes.of(ast.ImportFrom):
            if node.level == 0 and node.module and node.module.split(".")[0] in self.modules:
                for alias in node.names:
                    self.package_names.add(alias.asname or alias.name)
        for node in nodes.of(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if not _is_test_scaffolding(node):
                self.local_defs.add(node.name)
        for node in nodes.of(ast.Assign):
            self.visit_Assign(node)
        for node in nodes.of(ast.Call):
            self.visit_Call(node)
        if len(self.found) < 2:
            return
        self.found.clear()
        for node in nodes.preorder:
            kind = type(node)
            if kind is ast.Assign:
                self.visit_Assign(node)  # type: ignore[arg-type]
            elif kind is ast.Call:
                self.visit_Call(node)  # type: ignore[arg-type]

    def is_package(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.package_names

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and self.is_package(target.value):
                self.found.append((target, "assigns to the package under test (monkeypatching)"))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("patch", "object") and _is_mock_patch(func):
            target = node.args[0] if node.args else None
            if target is not None and (
                self.is_package(target)
                or (isinstance(target, ast.Constant) and isinstance(target.value, str)
                    and target.value.split(".")[0] in self.modules)
            ):
                self.found.append((node, "patches the package under test with mock.patch"))
        elif self.is_package(func):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                why = self._uncrossable(arg)
                if why:
                    self.found.append((arg, f"passes {why} to the package under test"))

    def _uncrossable(self, arg: ast.AST) -> str:
        if isinstance(arg, ast.Lambda):
            return "a lambda"
        if isinstance(arg, ast.Name) and arg.id in self.local_defs:
            return f"the test's own {arg.id!r}"
        if isinstance(arg, ast.Call):
            callee = arg.func
            cname = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            if cname in self.local_defs:
                return f"an instance of the test's own class {cname!r}"
            if cname in _CANNOT_CROSS_CALLS and not self.is_package(callee):
                return f"a {cname}(...) object of the test's process"
        return ""


def _is_mock_patch(func: ast.expr) -> bool:
    text = ast.unparse(func)
    return text.endswith(("mock.patch", "patch", "mock.patch.object", "patch.object"))


def _is_test_scaffolding(node: ast.AST) -> bool:
    """Test classes and test methods are not things a test would hand to the package."""
    if isinstance(node, ast.ClassDef):
        return any(ast.unparse(b).endswith("TestCase") for b in node.bases)
    return getattr(node, "name", "").startswith(("test", "setUp", "tearDown"))


@rule("ES508", "judge-cannot-cross")
def judge_cannot_cross(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A test run by `judged_tests` needs something the judge will not do.

    ## What it checks
    For each `endstate_harness.graders:judged_tests` grader, the test files it runs (those
    matching `pattern` under `start_dir` in the holdout, and in the fixture unless
    `"visible": false`) are read with `ast`.
    A finding is each place that:
    - patches the package under test (`mock.patch("pkg.mod.f")`, `mock.patch.object(mod, …)`),
      or assigns to it (`pkg.mod.CONSTANT = 3`);
    - passes the package something that lives in the test's process: a `lambda`, a function
      or an instance of a class the test defines (a fake clock), an `io.StringIO`, a
      `pathlib.Path`, an open file, a `Mock`;
    - gives an assertion an object of the package as an operand (`assertEqual`,
      `assertAlmostEqual`, `assertIn`, `assertLess`, `assertTrue`, `assertCountEqual`…, also
      inside a list or dict written in the call), compares one (`==`, `<`, `in`; `is` is
      fine) or takes its truth (`if x`, `not x`, `bool(x)`);
    - reads a dunder of the package that does not cross (`pkg.__file__`, `f.__code__`), or
      applies `vars()`, `dir()` or `inspect` to the package's objects;
    - asserts on a mutable value the test built (a list, dict or set) after giving it to the
      package: the package gets a copy, so "the function leaves its input unchanged" holds
      and "the function fills the list it is given" fails whatever the code does.

    An expression is taken for an object of the package only when the sources say so for
    sure: the package's modules, classes and functions; `Money(…)` for a class `Money` of
    the package; what a function returns when its annotation names one of the package's
    classes (`-> Money`, `-> Self`) or an iterator, or when it is a generator. Unannotated
    results are not guessed at (the judge still refuses them at grading).

    ## Why it matters
    `judged_tests` keeps the expected values in a judge process and runs the package in another
    one, inside the sandbox; only plain values (numbers, strings, lists, dicts…) and the
    package's own objects cross. An object of the package is a reference there, and the judge
    never lets its operators decide a verdict: `assertAlmostEqual(x, 21.0)` would compute
    `x - 21.0` with the agent's `__sub__`, `assertIn(5, x)` would ask its `__contains__`, so
    an object that answers anything would pass. The judge refuses instead, on *every* end
    state, the reference solution's included: the task cannot pass (prove reports ES902).
    Module data (`__all__`, `__version__`, constants), `__doc__` and `__name__` cross as
    values; `__file__`, `__dict__`, `__code__` describe the child's interpreter and do not.

    ## Example
    ```python
    with mock.patch.object(policy, "backoff_delays", return_value=[1, 2]):
        retry(job)
    self.assertAlmostEqual(convert(Temperature(70, "F"), "C"), 21.1, places=1)
    ```
    (`convert` is annotated `-> Temperature`).

    ## Fix
    Test behaviour through inputs and outputs: pass plain data (a list of timestamps rather
    than a clock object, the text rather than a stream, a path as `str` of a file the fixture
    ships), and compare plain values: `str(x)`, `len(x)`, an attribute or a method that
    returns plain data (`x.amount`, `x.to_dict()`), `list(x)`, or `json.dumps` of those;
    `assertIs` for identity and `assertIsInstance` for a type. A structural requirement
    (this function delegates to that one) is checked from the source by
    `endstate_harness.graders:delegates_to`, not by patching. A test double the package must
    call goes to the child as a `child_helpers` module.
    """
    for _index, args, _node in graders_named(ctx, "judged_tests"):
        start_top = str(args.get("start_dir", "tests")).strip("/").split("/")[0]
        explicit = args.get("modules")
        if isinstance(explicit, list) and all(isinstance(m, str) for m in explicit):
            modules = {m.split(".")[0] for m in explicit}
        else:
            modules = _top_modules(ctx, start_top)
        if not modules:
            continue
        model: PackageModel | None = None
        for tree, rel in _judged_files(ctx, args):
            module = ctx.python_module(tree, rel)
            if module is None:
                continue
            finder = _Finder(modules)
            index = ctx.python_index(tree, rel)
            finder.scan(index)
            found = [(node, f"{why}: {_CROSSING}") for node, why in finder.found]
            if may_assert_on_arguments(index):
                found += [
                    (node, why) for test in index.of(ast.FunctionDef, ast.AsyncFunctionDef)
                    if test.name.startswith("test")
                    for node, why in arguments_read_after_the_call(test, finder.is_package)
                ]
            if model is None:
                model = _package_model(ctx, modules, args.get("child_helpers"))
            scanner = OperandScanner(model)
            scanner.scan(module, (index.nodes, index.starts))
            found += [(node, f"{why}: {_OPERATOR if kind != BOUNDARY else _UNREADABLE}")
                      for node, why, kind in scanner.found]
            path = ctx.files(tree)[rel].path
            for node, why in found:
                line = getattr(node, "lineno", 1)
                col = getattr(node, "col_offset", 0)
                end_col = getattr(node, "end_col_offset", None)
                yield ctx.at_file(
                    "ES508",
                    f"{tree}/{rel} {why}",
                    path,
                    line=line,
                    column=col + 1,
                    end_line=getattr(node, "end_lineno", None) or line,
                    end_column=(end_col + 1) if end_col is not None else col + 2,
                )


_CROSSING = (
    "judged_tests runs the package in another process, so this fails at grading on every "
    "end state, the reference's included"
)
_OPERATOR = (
    "in judged_tests the package's own operators never decide an assertion (an object "
    "whose __eq__, __sub__ or __contains__ answers anything would pass it), so this fails "
    f"at grading on every end state; {PLAIN_VALUES_FIX} (for identity assertIs, for a "
    "type assertIsInstance)"
)
_UNREADABLE = (
    "it does not cross the judge's boundary (it describes the child's interpreter, not a "
    "value), so this fails at grading on every end state; read plain module data "
    "(__all__, __version__, constants) or test behaviour instead"
)
