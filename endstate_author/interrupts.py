"""Ctrl-C that cannot be lost, and SIGTERM/SIGHUP that unwind like it."""

from __future__ import annotations

import signal
import threading
from types import FrameType

from endstate_harness.process.cleanup import exit_on_signal, later_if_importing

INTERRUPTED = threading.Event()


def on_sigint(signum: int, frame: FrameType | None) -> None:
    INTERRUPTED.set()
    if not later_if_importing(signum, frame):  # never raised inside the import machinery
        raise KeyboardInterrupt


def install() -> None:
    """The command line's handlers: SIGTERM and SIGHUP (a CI cancel, ``kill``, a closed
    terminal) raise ``SystemExit(128 + signum)`` and SIGINT raises KeyboardInterrupt, recorded
    so a swallowed Ctrl-C still stops (:func:`check`). Both unwind, so every sandbox,
    container, warm interpreter and temporary folder is removed on the way out.

    Why before anything starts: the command's imports run with signals deferred
    (``defer_signals``), and a deferred signal is delivered to the handler in place before
    the section. Under SIGTERM's default handler, that delivery killed the process outright,
    with no exit handler run: what ``prove``'s early start had begun meanwhile (a walls probe,
    a warm interpreter behind bubblewrap) was left running (an interrupt stress run found
    one bubblewrap alive in 50). Main thread only (where handlers are set)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on_signal)
    signal.signal(signal.SIGINT, on_sigint)


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed, even if its first raise was swallowed."""
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt
