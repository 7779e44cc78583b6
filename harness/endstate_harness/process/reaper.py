"""Deleting closed sandboxes' scratch folders off the caller's path: renamed now, removed by a
background thread.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from pathlib import Path

import endstate_harness.process.watchdog as watchdog
from endstate_harness.fdtree import remove_tree
from endstate_harness.process.cleanup import OPEN_SANDBOXES, at_exit_section

_PREFIX = ".endstate-removing-"


class _Reaper:
    """One background thread deleting the folders it is handed, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._exiting = False

    def remove_later(self, path: Path) -> None:
        if self._exiting:  # past this module's exit handler: nobody would wait for a thread
            remove_tree(path)
            return
        hidden = path.with_name(f"{_PREFIX}{path.name}")
        watchdog.protect(hidden)  # registered before it exists: a kill in between is covered
        try:
            os.rename(path, hidden)
        except OSError:
            remove_tree(path)
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="endstate-reaper", daemon=True
                )
                self._thread.start()
                OPEN_SANDBOXES.add(self)
            self._queue.put(hidden)

    def _work(self) -> None:
        while True:
            path = self._queue.get()
            try:
                if path is None:
                    return
                try:
                    remove_tree(path)
                except OSError:
                    pass
                watchdog.release(path)
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Return once every folder handed over so far is deleted."""
        self._queue.join()

    def close(self) -> None:
        """Delete what is pending and stop the thread (at exit, or on SIGTERM/SIGHUP)."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()
        OPEN_SANDBOXES.discard(self)


    def at_exit(self) -> None:
        """The interpreter ends: what is pending is deleted now, whatever comes is at once.
        (The open-sandbox registry's own exit handler may run before or after this one, and
        close sandboxes after it; the daemon thread would not outlive the interpreter.)"""
        self._exiting = True
        with at_exit_section():
            self.close()


_REAPER = _Reaper()
atexit.register(_REAPER.at_exit)


def remove_later(path: Path) -> None:
    """Make ``path`` disappear now (renamed) and delete it in the background."""
    _REAPER.remove_later(path)


def drain() -> None:
    """Wait until every folder given to :func:`remove_later` so far is deleted."""
    _REAPER.drain()
