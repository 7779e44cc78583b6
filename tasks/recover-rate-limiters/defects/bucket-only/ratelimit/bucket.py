"""A token bucket: steady refill, bounded bursts.

The clock is a callable returning seconds (``time.monotonic`` in production) so that
tests can move time by hand instead of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """Allow ``rate`` requests per second on average and at most ``capacity`` at once."""

    def __init__(
        self, rate: float, capacity: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError("rate must be positive and capacity at least 1")
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._tokens = float(capacity)
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.capacity), self._tokens + (now - self._last) * self.rate)
        self._last = now

    def available(self) -> float:
        """Tokens that could be spent right now."""
        self._refill()
        return self._tokens

    def try_acquire(self, cost: int = 1) -> bool:
        """Spend ``cost`` tokens if there are that many; never blocks."""
        self._refill()
        if self._tokens >= cost:
            self._tokens -= cost
            return True
        return False
