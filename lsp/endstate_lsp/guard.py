"""The wrapper every handler is registered with: a failure is logged, never fatal.

Why this module exists: a suite opened in an editor is untrusted, often half-written input,
and a language server that dies on it takes every feature down with it. :func:`guarded`
turns an exception in a handler into a log message and the handler's empty answer.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from endstate_author.engine.textsafe import shown


def log(ls: LanguageServer, message: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
    """A window/logMessage; a client that is gone is not an error."""
    with contextlib.suppress(Exception):
        # a log line may quote prove's stderr: shown, never obeyed (textsafe)
        ls.window_log_message(lsp.LogMessageParams(type=kind, message=shown(message)))


def guarded(
    empty: Callable[[], Any] = lambda: None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a handler ``(ls, params)``: an exception becomes a log message and ``empty()``."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def wrapper(ls: LanguageServer, params: Any) -> Any:
            try:
                result = fn(ls, params)
                if inspect.isawaitable(result):
                    result = await result
                return result
            except Exception as exc:
                log(ls, f"{fn.__name__} failed: {type(exc).__name__}: {exc}", lsp.MessageType.Error)
                return empty()

        return wrapper

    return deco
