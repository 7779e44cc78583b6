"""The backoff schedule as a pure function, so it can be shown, logged and tested."""

from __future__ import annotations


def backoff_delays(attempts: int, base: float, factor: float, cap: float) -> list[float]:
    """Seconds to wait after each failed attempt but the last: ``base * factor**n``, capped.

    Raises:
        ValueError: ``attempts`` is less than 1.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    return [float(min(base * factor**n, cap)) for n in range(attempts - 1)]
