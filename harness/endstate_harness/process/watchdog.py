"""Cleanup that survives SIGKILL: a watcher process removes what its dead owner left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

_lock = threading.Lock()
_pipe: tuple[int, int] | None = None  # (owner pid, write end)


def _start() -> None:
    """Start this process's watcher unless it has one (a forked child has its own pid)."""
    global _pipe
    if _pipe is not None and _pipe[0] == os.getpid():
        return
    read_end, write_end = os.pipe()
    try:
        subprocess.Popen(
            # -P: the working folder (a task repository, maybe) is not put on sys.path
            [sys.executable, "-P", "-m", "endstate_harness.sandbox.watcher"],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the owner's group must not stop it
            env={**os.environ, "PYTHONPATH": _harness_path()},
        ).wait()  # it forks the watcher and exits at once
    except OSError:
        os.close(write_end)
        return
    finally:
        os.close(read_end)
    _pipe = (os.getpid(), write_end)


def _send(line: str) -> None:
    """One line to this process's watcher, if it has one; never raises."""
    pipe = _pipe
    if pipe is None or pipe[0] != os.getpid():
        return
    try:
        os.write(pipe[1], line.encode("utf-8", "surrogateescape") + b"\n")
    except OSError:
        pass


def _harness_path() -> str:
    here = str(Path(__file__).resolve().parent.parent)
    rest = os.environ.get("PYTHONPATH", "")
    return f"{here}{os.pathsep}{rest}" if rest else here


def guard(*, docker: bool = False) -> None:
    """Make sure a watcher outlives this process; with ``docker``, it also removes the
    containers this process leaves (by their owner-pid label)."""
    with _lock:
        _start()
        _send("docker" if docker else "")


def protect(folder: Path | str) -> None:
    """Remove ``folder`` if this process dies before :func:`release` is called for it.

    Does nothing in a process without a watcher: sandboxes, zygotes and the judge register
    their folders unconditionally, and only a process that :func:`guard` ed itself (a
    cluster unit, which the engine may SIGKILL) pays for it."""
    _send(f"+{folder}")


def release(folder: Path | str) -> None:
    """``folder`` is gone (or no longer this process's to remove)."""
    _send(f"-{folder}")


def watched() -> bool:
    """Whether this process has a watcher (:func:`guard` was called in it)."""
    pipe = _pipe
    return pipe is not None and pipe[0] == os.getpid()
