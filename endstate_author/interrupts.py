"""Ctrl-C that cannot be lost."""

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
