"""Process groups: how every command the harness starts is ended, with everything it started."""

from __future__ import annotations

import os
import signal
import time

GROUP_GONE_WAIT_S = 0.5
"""How long to wait, once the leader is reaped, for the rest of its killed group to be gone."""


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group; nothing happens when it is already empty."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def await_group_gone(pgid: int, limit_s: float = GROUP_GONE_WAIT_S) -> None:
    """Wait (bounded) until no process of the killed group is left.

    SIGKILL is delivered asynchronously: on a loaded machine a killed background child can
    still be listed for a moment after the command returned, and "nothing outlives its
    command" should hold when ``run`` returns, not shortly after. Members that are zombies
    waiting for their new parent to reap them still count, hence the bound.
    """
    deadline = time.monotonic() + limit_s
    pause = 0.0002  # as in await_gone: look soon, then less often
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.005)


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, read from ``/proc/<pid>/task/*/children``.

    A walled command's processes sit in a session and a PID namespace of their own, out of
    reach of its group: they die with the namespace's process 1 once the leader is killed,
    but asynchronously. Knowing them beforehand lets the harness wait until they are gone.
    """
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as handle:
                    children = [int(c) for c in handle.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            todo.extend(children)
    return found


def kill_tree(pid: int) -> list[int]:
    """SIGKILL ``pid``'s group and each of its descendants (also those in another session or
    PID namespace); returns the descendants, for :func:`await_gone`."""
    inner = descendants(pid)
    kill_group(pid)
    for child in inner:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return inner


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def await_gone(pids: list[int], limit_s: float = GROUP_GONE_WAIT_S) -> None:
    """Wait (bounded) until none of ``pids`` runs any more (gone, or a zombie: it ran its
    last instruction; what is left is its parent's reaping)."""
    deadline = time.monotonic() + limit_s
    left = [p for p in pids if _running(p)]
    pause = 0.0002  # a killed process is mostly gone within a millisecond: look soon, then less
    while left and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, 0.005)
        left = [p for p in left if _running(p)]
