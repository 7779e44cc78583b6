"""Ctrl-C that cannot be lost.

Python turns SIGINT into a KeyboardInterrupt raised wherever the main thread happens to be.
When that is inside a finalizer or an import-lock callback, the exception is printed as
"Exception ignored" and swallowed, and the program runs on as if nothing happened. The CLI's
handler therefore also *records* the interrupt, and long-running work (prove's checks) calls
:func:`check` between units, so a swallowed Ctrl-C still stops the run within one unit.
"""

from __future__ import annotations

import threading
from types import FrameType

INTERRUPTED = threading.Event()


def on_sigint(_signum: int, _frame: FrameType | None) -> None:
    INTERRUPTED.set()
    raise KeyboardInterrupt


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed, even if its first raise was swallowed."""
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt
