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
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.005)
