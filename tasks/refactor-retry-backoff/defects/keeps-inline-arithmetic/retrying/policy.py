"""Call a function until it succeeds or the attempts run out.

``sleep`` is injectable so that tests and simulations do not wait for real.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from retrying.backoff import backoff_delays

T = TypeVar("T")


class RetryError(RuntimeError):
    """Every attempt failed; ``__cause__`` is the last failure."""


def retry(
    call: Callable[[], T],
    *,
    attempts: int = 4,
    base: float = 0.5,
    factor: float = 2.0,
    cap: float = 30.0,
    retry_on: tuple[type[BaseException], ...] = (OSError,),
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Return ``call()``'s result, retrying on ``retry_on`` with capped exponential backoff.

    Raises:
        ValueError: ``attempts`` is less than 1.
        RetryError: the last attempt failed too.
    """
    backoff_delays(attempts, base, factor, cap)  # validates; the loop still computes its own
    for attempt in range(attempts):
        try:
            return call()
        except retry_on as exc:
            if attempt == attempts - 1:
                raise RetryError(f"gave up after {attempts} attempts") from exc
            delay = base * factor**attempt
            if delay > cap:
                delay = cap
            sleep(delay)
    raise AssertionError("unreachable")
