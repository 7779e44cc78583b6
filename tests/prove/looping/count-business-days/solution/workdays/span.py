"""Working days between two dates, for the payroll export."""

from datetime import date, timedelta


def business_days(start, end, holidays=()):
    """The days ``d`` with ``start <= d < end`` (ISO dates) that fall on Monday to Friday and
    are not among ``holidays``. One day at a time: the ranges payroll asks about are a month
    or two, and stepping keeps the weekend and holiday rules in one place."""
    first = date.fromisoformat(start)
    last = date.fromisoformat(end)
    if last < first:
        raise ValueError("the range ends before it starts")
    off = {date.fromisoformat(text) for text in holidays}
    step = timedelta(days=1)
    count = 0
    day = first
    while day < last:
        if day.weekday() < 5 and day not in off:
            count += 1
        day += step
    return count
