"""Finding a sandbox's processes from the host, whatever PID namespace they live in.

A walled command sees pids of its own namespace (its ``$!`` is 3, not the host's pid), so a
test marks the process it wants to find: a unique word in its command line (``sleep 30.417``)
or its name (a Python program writes ``/proc/self/comm``), and looks for that on the host.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path


def token() -> str:
    """A mark no other process carries: a ``sleep`` duration that is also a unique word."""
    return f"30.{secrets.randbelow(10**9):09d}"


def marked(mark: str) -> list[int]:
    """Host pids of live processes (zombies left out) whose command line or name holds
    ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            text = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            name = (entry / "comm").read_text()
        except OSError:
            continue
        if state not in ("Z", "X") and (mark in text or mark in name):
            found.append(int(entry.name))
    return found


def gone(mark: str, within_s: float = 5.0) -> bool:
    """Whether every process marked ``mark`` is dead within ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not marked(mark):
            return True
        time.sleep(0.05)
    return False


def kill_marked(mark: str) -> None:
    """SIGKILL whatever still carries ``mark`` (a test's cleanup)."""
    for pid in marked(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
