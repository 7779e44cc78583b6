"""Calendar quarters: Q1 is January to March, Q4 October to December.

Fiscal quarters (:mod:`periods.fiscal`) are calendar quarters shifted by a number of
months, so they are built on the functions here.
"""

from __future__ import annotations

import datetime as dt

from periods.dates import add_months
from periods.ranges import DateRange, split_at


def quarter_of(day: dt.date) -> int:
    """1 to 4."""
    return (day.month - 1) // 3 + 1


def quarter_start(day: dt.date) -> dt.date:
    """The first day of the calendar quarter holding ``day``."""
    first_month = (day.month // 3) * 3 + 1
    return dt.date(day.year, first_month, 1) if first_month <= 12 else dt.date(day.year + 1, 1, 1)


def quarter_range(day: dt.date) -> DateRange:
    """The whole calendar quarter holding ``day``."""
    start = quarter_start(day)
    return DateRange(start, add_months(start, 3) - dt.timedelta(days=1))


def split_quarters(whole: DateRange) -> list[DateRange]:
    """``whole`` cut into pieces that each lie within one calendar quarter."""
    starts: list[dt.date] = []
    first = dt.date(whole.start.year, (whole.start.month - 1) // 3 * 3 + 1, 1)
    current = add_months(first, 3)
    while current <= whole.end:
        starts.append(current)
        current = add_months(current, 3)
    return split_at(whole, starts)
