"""Numbers as a reader takes them: durations in the unit that shows them (61 µs, not 0.00 s),
and the one rule for when a set of values is a distribution worth a chart."""

from __future__ import annotations

import math
from collections.abc import Sequence

MIN_RUNS_FOR_CHART = 10
"""Fewer values than this are shown as numbers: a histogram of three runs is three bars."""
MIN_DISTINCT_FOR_CHART = 3
"""Fewer distinct values than this have no shape to show either."""


def is_distribution(values: Sequence[float]) -> bool:
    """Whether ``values`` are enough, and varied enough, for a histogram."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return len(finite) >= MIN_RUNS_FOR_CHART and len(set(finite)) >= MIN_DISTINCT_FOR_CHART


def time_unit(largest: float) -> tuple[str, float]:
    """(unit, factor) that shows durations up to ``largest`` seconds with few digits."""
    if largest >= 1:
        return "s", 1.0
    if largest >= 1e-3:
        return "ms", 1e3
    return "µs", 1e6


def seconds(value: float | None) -> str:
    """``1.24 s``, ``35.2 ms``, ``61 µs``; ``n/a`` for no value; never a rounded-away 0.00 s."""
    if value is None:
        return "n/a"
    if value == 0:
        return "0 s"
    unit, factor = time_unit(abs(value))
    scaled = value * factor
    return f"{scaled:.0f} {unit}" if unit == "µs" or scaled >= 100 else f"{scaled:.3g} {unit}"
