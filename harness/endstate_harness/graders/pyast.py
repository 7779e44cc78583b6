"""``ast.parse`` that threads may call at once.

Why it exists: CPython 3.11 before 3.11.8 keeps the AST converter's recursion depth in state
shared by all threads, so two threads parsing at the same moment can fail with
``SystemError: AST constructor recursion depth mismatch`` (gh-106905). prove runs checks in
threads, and several of them parse Python (the hardened grader reading the pristine tests, the
probes finding where to inject, the mutants being made); one such error would turn a sound
task into a finding. Parsing is fast, so one lock costs nothing measurable; a parse in code
that does not take it (the vendored grader keeps its own copy, see ``unittest_grader``) can
still collide, so a spurious SystemError is retried too.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`ast.parse`, one thread at a time."""
    for attempt in range(RETRIES):
        try:
            with _LOCK:
                return ast.parse(source, filename)
        except SystemError:
            if attempt == RETRIES - 1:
                raise
    raise AssertionError("unreachable")


RETRIES = 5
