"""``ast.parse`` that threads may call at once.

Why: CPython 3.11 before 3.11.8 keeps one counter of the AST constructor's depth for every
thread (gh-106905); two threads building syntax trees at once can make either raise
``SystemError: AST constructor recursion depth mismatch``. prove grades in threads, so every
tree the host builds goes through here: one thread at a time, retried should the error come
anyway (a vendored grader's own parse takes no lock). ``tests/test_pyast_only.py`` holds the
packages to it."""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`ast.parse`, one thread at a time."""
    tree = _parsed(source, filename, "exec")
    assert isinstance(tree, ast.Module)
    return tree


def expression(source: str | bytes, filename: str = "<unknown>") -> ast.Expression:
    """``ast.parse(source, mode="eval")``, one thread at a time."""
    tree = _parsed(source, filename, "eval")
    assert isinstance(tree, ast.Expression)
    return tree


def literal_eval(text: str) -> Any:
    """:func:`ast.literal_eval` of a text, its parse one thread at a time."""
    return ast.literal_eval(expression(text.lstrip(" \t")))


def _parsed(source: str | bytes, filename: str, mode: str) -> ast.AST:
    for attempt in range(RETRIES):
        try:
            with _LOCK:
                return ast.parse(source, filename, mode)
        except SystemError:
            if attempt == RETRIES - 1:
                raise
    raise AssertionError("unreachable")


RETRIES = 5
