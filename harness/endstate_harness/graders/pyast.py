"""``ast.parse`` that threads may call at once."""

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
