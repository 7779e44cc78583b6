"""What the judge saw each test do: its file, and the assertions it executed.

The judge counts the ``TestCase`` (and mock) assertion methods it calls, and the ``assert``
statements of the trusted modules, which it compiles from an instrumented syntax tree. The code
under test runs in the child and answers with values only: it cannot reach the counter.
"""

from __future__ import annotations

import ast
import functools
import importlib.abc
import importlib.machinery
import os
import re
import sys
import types
import unittest
import unittest.mock
from collections.abc import Callable, Mapping, Sequence
from typing import Any

COUNTER = "__endstate_witness__"
"""The name the instrumented modules call; bound in each trusted module's namespace."""


@functools.lru_cache(maxsize=4096)
def _real(path: str) -> str:
    """``os.path.realpath``, once per path: the judge asks it of the same few files for every
    frame of every failure, and neither the trusted files nor the standard library move
    while it runs."""
    return os.path.realpath(path)


class Tally:
    """The assertions executed so far in this process."""

    def __init__(self) -> None:
        self.count = 0
        self.depth = 0

    def hit(self) -> None:
        self.count += 1


def _fails(body: Sequence[ast.stmt]) -> bool:
    """A branch that fails the test: ``raise ...`` or a call of ``fail``/``self.fail``."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "fail":
                return True
    return False


def _counts(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, ast.If):
        return _fails(stmt.body) or _fails(stmt.orelse)
    if isinstance(stmt, ast.Try):
        return any(_fails(handler.body) for handler in stmt.handlers)
    return False


def instrument(tree: ast.Module) -> ast.Module:
    """Put a call of the counter before every statement that asserts: an ``assert``, and an
    ``if`` or ``try`` whose branch fails the test (``self.fail(...)``, ``raise ...``), counted
    when it is reached."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list) or not any(
                isinstance(s, ast.stmt) and _counts(s) for s in stmts
            ):
                continue
            out: list[ast.stmt] = []
            for stmt in stmts:
                if isinstance(stmt, ast.stmt) and _counts(stmt):
                    call = ast.Expr(ast.Call(ast.Name(COUNTER, ast.Load()), [], []))
                    out.append(ast.copy_location(call, stmt))
                out.append(stmt)
            setattr(node, field, out)
    return ast.fix_missing_locations(tree)


_COMPILED: dict[tuple[str, bytes, int], types.CodeType] = {}
"""Instrumented code by (path, source, optimisation): the judge compiles a trusted module
once, and the processes it forks for prove's variants import it without compiling again."""


def instrumented_code(data: bytes, path: str, optimize: int = -1) -> types.CodeType:
    """``data`` (a trusted module's source) compiled with its assertions counted."""
    key = (path, data, optimize)
    code = _COMPILED.get(key)
    if code is None:
        tree = instrument(ast.parse(data, filename=path))
        code = _COMPILED[key] = compile(tree, path, "exec", dont_inherit=True,
                                        optimize=optimize)
    return code


def precompile(files: Mapping[str, bytes]) -> None:
    """Compile every trusted Python file now (before forking the variants' judges); a file
    that does not compile is left for its import to report."""
    for path, data in files.items():
        if path.endswith(".py"):
            try:
                instrumented_code(data, path)
            except (SyntaxError, ValueError):
                pass


class _CountingLoader(importlib.machinery.SourceFileLoader):
    """A trusted module, compiled from its instrumented source (never from a cache)."""

    tally: Tally

    files: Mapping[str, bytes] | None = None
    """The trusted files as the judge read them at its start; None: read them from disk."""

    def get_data(self, path: str) -> bytes:
        if self.files is None:
            return super().get_data(path)
        data = self.files.get(os.path.abspath(path))
        if data is None:
            raise ImportError(f"{path} is not a trusted file of the judge", path=path)
        return data

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def source_to_code(  # type: ignore[override]
        self, data: bytes, path: str, *, _optimize: int = -1
    ) -> types.CodeType:
        return instrumented_code(data, path, _optimize)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__[COUNTER] = self.tally.hit
        super().exec_module(module)


class TrustedFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of the trusted folder as usual and loads them instrumented."""

    def __init__(
        self, trusted: str, tally: Tally, files: Mapping[str, bytes] | None = None
    ) -> None:
        self.trusted = _real(trusted)
        self.tally = tally
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        if spec is None or not origin or not origin.endswith(".py"):
            return None
        if not _real(origin).startswith(self.trusted + os.sep):
            return None
        loader = _CountingLoader(fullname, origin)
        loader.tally = self.tally
        loader.files = self.files
        spec.loader = loader
        return spec


def _counted(method: Callable[..., Any], tally: Tally) -> Callable[..., Any]:
    @functools.wraps(method)
    def counted(*args: Any, **kwargs: Any) -> Any:
        if tally.depth:
            return method(*args, **kwargs)
        tally.depth += 1
        tally.count += 1
        try:
            return method(*args, **kwargs)
        finally:
            tally.depth -= 1

    return counted


def watch(trusted: str, files: Mapping[str, bytes] | None = None) -> Tally:
    """Count every assertion the trusted tests execute from now on (this process only): the
    assertion methods of ``unittest.TestCase`` and of ``unittest.mock``'s mocks, and the
    ``assert`` statements of the trusted modules."""
    tally = Tally()
    for cls, prefixes in ((unittest.TestCase, ("assert", "fail")),
                          (unittest.mock.NonCallableMock, ("assert_",))):  # fmt: skip
        for name in dir(cls):
            if not name.startswith(prefixes) or name == "failureException":
                continue
            method = getattr(cls, name)
            if callable(method):
                setattr(cls, name, _counted(method, tally))
    sys.meta_path.insert(0, TrustedFinder(trusted, tally, files))
    return tally


def file_of(test: Any, trusted: str) -> str:
    """The trusted file (relative, forward slashes) a test or a loader's stand-in comes from;
    "" when it cannot be told."""
    inner = getattr(test, "test_case", None)  # a subtest: its test's file
    if inner is not None:
        test = inner
    module = type(test).__module__
    if module.startswith("unittest"):
        # a module that failed to import or was skipped whole: its dotted name is the
        # stand-in's method name; a class or module fixture's failure names it in brackets
        name = getattr(test, "_testMethodName", "") or ""
        description = getattr(test, "description", "") or ""
        if "(" in description and description.endswith(")"):
            dotted = description[description.rfind("(") + 1 : -1]
            name = dotted if dotted in sys.modules else dotted.rpartition(".")[0]
        module = name
    root = _real(trusted)
    found = sys.modules.get(module)
    path = getattr(found, "__file__", None) if found is not None else None
    if not path:
        base = os.path.join(root, *module.split("."))
        path = next((p for p in (base + ".py", os.path.join(base, "__init__.py"))
                     if os.path.isfile(p)), "")  # fmt: skip
    path = _real(path) if path else ""
    if not path.startswith(root + os.sep):
        return ""
    return os.path.relpath(path, root).replace(os.sep, "/")


def where_failed(tb: types.TracebackType | None, trusted: str) -> tuple[str, int | None]:
    """(trusted file, line) of the last frame of a traceback that is in the trusted code."""
    root = _real(trusted)
    found: tuple[str, int | None] = ("", None)
    while tb is not None:
        name = _real(tb.tb_frame.f_code.co_filename)
        if name.startswith(root + os.sep):
            found = (os.path.relpath(name, root).replace(os.sep, "/"), tb.tb_lineno)
        tb = tb.tb_next
    return found


def message_of(kind: type[BaseException], value: BaseException | None, limit: int) -> str:
    """The assertion's message, or the exception's type and message, on one line, bounded
    between words. A module that failed to import carries its own traceback in its message:
    its last line (the real exception) is what is kept."""
    text = str(value) if value is not None else ""
    if "Traceback (most recent call last):" in text:
        last = [line for line in text.splitlines() if line.strip()]
        return bounded(" ".join(last[-1].split()), limit) if last else kind.__name__
    if not issubclass(kind, AssertionError) or not text:
        text = f"{kind.__name__}: {text}" if text else kind.__name__
    return bounded(" ".join(text.split()), limit)


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def embedded_line(value: BaseException | None, file: str, trusted: str) -> int | None:
    """The line of ``file`` in a traceback carried as text (a module that failed to import)."""
    root = _real(trusted)
    found = None
    for path, line in _FRAME.findall(str(value) if value is not None else ""):
        real = _real(path)
        if real.startswith(root + os.sep) and os.path.relpath(real, root).replace(
            os.sep, "/"
        ) == file:
            found = int(line)
    return found


def bounded(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a space, marked with how much was left
    out; never mid-word (one word longer than the limit is kept whole)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    head = text[:cut] if cut > 0 else text.split(" ", 1)[0]
    return f"{head} … ({len(text) - len(head)} more characters)"
