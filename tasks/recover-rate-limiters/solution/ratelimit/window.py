"""A sliding-window log: at most ``limit`` requests in any ``window`` seconds.

Exact rather than approximate: the gateway's per-user limits are small, so keeping one
timestamp per request is cheap and avoids the boundary bursts of fixed windows.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class SlidingWindow:
    """Admit a request when fewer than ``limit`` were admitted in the last ``window`` s."""

    def __init__(
        self, limit: int, window: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be at least 1 and window positive")
        self.limit = limit
        self.window = window
        self._clock = clock
        self._admitted: deque[float] = deque()

    def _evict(self, now: float) -> None:
        while self._admitted and self._admitted[0] <= now - self.window:
            self._admitted.popleft()

    def in_window(self) -> int:
        """Requests currently counted against the limit."""
        self._evict(self._clock())
        return len(self._admitted)

    def try_acquire(self) -> bool:
        """Admit and record a request if the window has room."""
        now = self._clock()
        self._evict(now)
        if len(self._admitted) < self.limit:
            self._admitted.append(now)
            return True
        return False
