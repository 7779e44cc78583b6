"""What the judge's report says of each test, as the grader hands it on.

The judge (:mod:`endstate_harness.graders.judge.main`) reports every test it ran with its file,
its outcome, the assertions it executed and, for one that did not pass, the message and the
line. Here that report becomes the verdict's per-test evidence
(:class:`~endstate_harness.verdict.Evidence`: which tests came from the holdout, and which
holdout test modules gave no test at all) and the one-line account of each failing test a
check's detail carries. Stdlib only: ``endstate-author vendor`` copies it with the grader.
"""

import ast
from typing import Any

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


def defines_tests(data: bytes, name: str = "") -> bool:
    """Whether a trusted Python file is a test module: it defines a ``TestCase`` class (or a
    pytest-style ``Test…`` class with ``test…`` methods), or, when its file ``name`` reads as
    a test's (``test*.py``, ``*_test.py``), a ``test…`` function. A helper whose function
    only happens to start with "test" is not one."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return True  # it cannot even load: a test module in trouble, not a helper
    base = name.rsplit("/", 1)[-1]
    test_named = base.startswith("test") or base.endswith("_test.py")
    top = set(map(id, tree.body))
    for node in ast.walk(tree):  # classes anywhere (under an ``if``), functions at the top
        if isinstance(node, ast.ClassDef):
            bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")
                     for b in node.bases]  # fmt: skip
            if any(b.endswith("TestCase") for b in bases):
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
    silent = sorted(
        rel for rel, data in holdout.items()
        if rel.endswith(".py") and rel not in seen and defines_tests(data, rel)
    )
    return {"tests": tests, "silent": silent}
