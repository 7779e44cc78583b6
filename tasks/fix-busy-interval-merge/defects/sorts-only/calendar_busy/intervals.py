"""Busy blocks and free slots, in minutes since midnight.

Every range is half-open, ``(start, end)`` meaning ``start <= t < end``, so a meeting that
ends at 10:00 and one that starts at 10:00 do not overlap but leave no gap either.
"""

from __future__ import annotations

Interval = tuple[int, int]


def merge_busy(meetings: list[Interval]) -> list[Interval]:
    """The fewest non-overlapping busy blocks covering ``meetings``, sorted by start."""
    merged: list[Interval] = []
    for start, end in sorted(meetings):
        if start >= end:
            raise ValueError(f"empty or reversed meeting: {(start, end)}")
        if merged and start < merged[-1][1]:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def free_slots(meetings: list[Interval], day: Interval, minimum: int = 1) -> list[Interval]:
    """Gaps of at least ``minimum`` minutes inside ``day`` that no meeting touches."""
    day_start, day_end = day
    slots: list[Interval] = []
    cursor = day_start
    for start, end in merge_busy(meetings):
        if start - cursor >= minimum:
            slots.append((cursor, min(start, day_end)))
        cursor = max(cursor, end)
    if day_end - cursor >= minimum:
        slots.append((cursor, day_end))
    return [slot for slot in slots if slot[0] < slot[1]]
