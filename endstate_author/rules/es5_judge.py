"""ES508 — a test that the judge cannot run, found statically."""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from endstate_author.astwalk import preorder
from endstate_author.diagnostics import Diagnostic
from endstate_author.lint.context import TaskContext
from endstate_author.rules.declare import rule
from endstate_author.rules.es3_assertions import graders_named
from endstate_harness.layout import FIXTURE_DIR, HOLDOUT_DIR

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

    def scan(self, nodes: list[ast.AST], ordered: list[ast.AST]) -> None:
        """``nodes`` in :func:`ast.walk`'s order, ``ordered`` depth first (the order
        :class:`ast.NodeVisitor` visits, so findings come in the order they always did)."""
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in self.modules:
                        self.package_names.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] in self.modules:
                    for alias in node.names:
                        self.package_names.add(alias.asname or alias.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if not _is_test_scaffolding(node):
                    self.local_defs.add(node.name)
        for node in ordered:
            kind = type(node)
            if kind is ast.Assign:
                self.visit_Assign(node)  # type: ignore[arg-type]
            elif kind is ast.Call:
                self.visit_Call(node)  # type: ignore[arg-type]

    def _is_package(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.package_names

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and self._is_package(target.value):
                self.found.append((target, "assigns to the package under test (monkeypatching)"))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("patch", "object") and _is_mock_patch(func):
            target = node.args[0] if node.args else None
            if target is not None and (
                self._is_package(target)
                or (isinstance(target, ast.Constant) and isinstance(target.value, str)
                    and target.value.split(".")[0] in self.modules)
            ):
                self.found.append((node, "patches the package under test with mock.patch"))
        elif self._is_package(func):
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
            if cname in _CANNOT_CROSS_CALLS and not self._is_package(callee):
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
    """A test run by `judged_tests` needs something that cannot cross the judge's boundary.

    ## What it checks
    For each `endstate_harness.graders:judged_tests` grader, the test files it runs (those
    matching `pattern` under `start_dir` in the holdout, and in the fixture unless
    `"visible": false`) are read with `ast`.
    A finding is each place that:
    - patches the package under test (`mock.patch("pkg.mod.f")`, `mock.patch.object(mod, …)`),
      or assigns to it (`pkg.mod.CONSTANT = 3`);
    - passes the package something that lives in the test's process: a `lambda`, a function
      or an instance of a class the test defines (a fake clock), an `io.StringIO`, a
      `pathlib.Path`, an open file, a `Mock`.

    ## Why it matters
    `judged_tests` keeps the expected values in a judge process and runs the package in another
    one, inside the sandbox; only plain values (numbers, strings, lists, dicts…) and the
    package's own objects cross. Each place above raises at grading on *every* end state, the
    reference solution's included, so the task cannot pass (prove reports ES902).

    ## Example
    ```python
    with mock.patch.object(policy, "backoff_delays", return_value=[1, 2]):
        retry(job)
    ```

    ## Fix
    Test behaviour through inputs and outputs: pass plain data (a list of timestamps rather
    than a clock object, the text rather than a stream, a path as `str` of a file the fixture
    ships), and compare plain values. If the test truly needs a double or a patch, grade it with
    the in-process `endstate_harness.graders:tests_pass` instead (weaker: it shares a process
    with the code under test), ideally beside a `judged_tests` on the tests that can cross.
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
        for tree, rel in _judged_files(ctx, args):
            module = ctx.python_module(tree, rel)
            if module is None:
                continue
            finder = _Finder(modules)
            nodes, starts = ctx.python_walk(tree, rel)
            finder.scan(nodes, preorder(nodes, starts))
            path = ctx.files(tree)[rel].path
            for node, why in finder.found:
                line = getattr(node, "lineno", 1)
                col = getattr(node, "col_offset", 0)
                end_col = getattr(node, "end_col_offset", None)
                yield ctx.at_file(
                    "ES508",
                    f"{tree}/{rel} {why}: judged_tests runs the package in another process, so "
                    "this fails at grading on every end state, the reference's included",
                    path,
                    line=line,
                    column=col + 1,
                    end_line=getattr(node, "end_lineno", None) or line,
                    end_column=(end_col + 1) if end_col is not None else col + 2,
                )
