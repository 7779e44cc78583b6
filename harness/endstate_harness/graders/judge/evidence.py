"""The judge's report, test by test, as the verdict's evidence and as a failing check's words.

Stdlib only: ``endstate-author vendor`` copies it with the grader.
"""

import ast
from typing import Any

import endstate_harness.graders.pyast as pyast

MAX_LISTED = 8
"""Tests that did not pass, listed by name in a failing check's detail (the rest counted)."""


def one_test(outcome: dict[str, Any]) -> str:
    """``test_x (tests/test_a.py:12) failed: the assertion's message`` for one test."""
    test_id, _, params = str(outcome.get("id", "")).partition(" ")
    short = test_id.rsplit(".", 2)
    name = ".".join(short[-2:]) if len(short) >= 2 else test_id
    params = " ".join(params.split())  # a subtest's parameters, on one line, bounded
    if len(params) > 60:
        params = params[: params.rfind(" ", 0, 58) if " " in params[:58] else 58] + " …]"
    name += f" {params}" if params else ""
    where = str(outcome.get("file") or "")
    if where and isinstance(outcome.get("line"), int):
        where += f":{outcome['line']}"
    message = str(outcome.get("message") or "").strip()
    text = f"{name} ({where})" if where else name
    text += f" {outcome.get('outcome', 'failed')}"
    return f"{text}: {message}" if message else text


def tail_words(text: str, limit: int) -> str:
    """The end of ``text`` on one line, at most ``limit`` characters, starting at a word."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    start = flat.find(" ", len(flat) - limit)
    tail = flat[start + 1:] if start >= 0 else flat[-limit:]
    return f"({len(flat) - len(tail)} characters before) … {tail}"


def _base_names(node: ast.ClassDef) -> list[str]:
    return [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]


def defines_tests(data: bytes, name: str = "", cases: frozenset[str] = frozenset()) -> bool:
    """Whether a trusted Python file is a test module: it defines a ``TestCase`` class (one
    deriving from ``…TestCase`` or from a class named in ``cases``), a pytest-style ``Test…``
    class with ``test…`` methods, or, when its file ``name`` reads as a test's (``test*.py``,
    ``*_test.py``), a ``test…`` function. A helper whose function only happens to start with
    "test" is not one."""
    try:
        tree = pyast.parse(data)
    except (SyntaxError, ValueError):
        return True  # it cannot even load: a test module in trouble, not a helper
    base = name.rsplit("/", 1)[-1]
    test_named = base.startswith("test") or base.endswith("_test.py")
    top = set(map(id, tree.body))
    for node in ast.walk(tree):  # classes anywhere (under an ``if``), functions at the top
        if isinstance(node, ast.ClassDef):
            if any(b.endswith("TestCase") or b in cases for b in _base_names(node)):
                return True
            if node.name.startswith("Test") and any(
                isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name.startswith("test") for n in node.body
            ):
                return True
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and test_named and (
            id(node) in top and node.name.startswith("test")
        ):
            return True
    return False


def _case_classes(trees: list[ast.Module]) -> frozenset[str]:
    """Names of the classes that derive, through any of the files, from a ``TestCase``."""
    classes = [(n.name, _base_names(n)) for t in trees for n in ast.walk(t)
               if isinstance(n, ast.ClassDef)]  # fmt: skip
    known: set[str] = set()
    grew = True
    while grew:
        grew = False
        for cls, bases in classes:
            if cls not in known and any(b.endswith("TestCase") or b in known for b in bases):
                known.add(cls)
                grew = True
    return frozenset(known)


def _imported(files: dict[str, bytes]) -> set[str]:
    """Dotted names (and bare names) the Python files import, relative imports resolved."""
    out: set[str] = set()
    for rel, data in files.items():
        if not rel.endswith(".py"):
            continue
        try:
            tree = pyast.parse(data)
        except (SyntaxError, ValueError):
            continue
        package = rel.split("/")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - (node.level - 1)] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                if module:
                    out.add(module)
                out.update(f"{module}.{a.name}" if module else a.name for a in node.names)
    return out


def test_modules(files: dict[str, bytes]) -> list[str]:
    """The test modules among trusted files (:func:`defines_tests`), except those another of
    the files imports: a base class's module runs through the modules that import it."""
    trees = []
    for rel, data in files.items():
        if not rel.endswith(".py"):
            continue
        try:
            trees.append(pyast.parse(data))
        except (SyntaxError, ValueError):
            continue
    cases = _case_classes(trees)
    found = [rel for rel, data in files.items()
             if rel.endswith(".py") and defines_tests(data, rel, cases)]  # fmt: skip
    imported = _imported(files)
    out = []
    for rel in sorted(found):
        dotted = rel[:-3].replace("/", ".").removesuffix(".__init__")
        if dotted in imported or dotted.rsplit(".", 1)[-1] in imported:
            continue
        out.append(rel)
    return out


def evidence(report: dict[str, Any], holdout: dict[str, bytes]) -> dict[str, Any]:
    """The judge's per-test evidence: every test it ran (file, id, outcome, assertions
    executed, and for one that did not pass the message and the line), whether it came from
    the holdout or the fixture, and the holdout's test modules that gave no test at all."""
    tests = []
    for o in report.get("outcomes", []):
        if not isinstance(o, dict):
            continue
        file = str(o.get("file") or "")
        tests.append({
            "id": str(o.get("id", "")), "file": file,
            "source": "holdout" if file in holdout else ("fixture" if file else ""),
            "outcome": str(o.get("outcome", "")), "assertions": o.get("assertions"),
            "message": str(o.get("message") or ""), "line": o.get("line"),
        })
    seen = {t["file"] for t in tests}
    silent = [rel for rel in test_modules(holdout) if rel not in seen]
    return {"tests": tests, "silent": silent}
