"""Per-category totals of an expense export.

Exports come from two places: the expense app (header ``date,category,amount`` and nothing
else) and the bank, whose exports end with a ``TOTAL`` footer row that must not be counted
as an expense. Amounts use thousands separators and accounting negatives, e.g. ``(12.00)``.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal


def parse_amount(text: str) -> Decimal:
    """Parse ``'1,234.50'`` or the accounting negative ``'(12.00)'`` into a Decimal."""
    cleaned = text.strip().replace(",", "")
    if cleaned.startswith("(") and cleaned.endswith(")"):
        return -Decimal(cleaned[1:-1])
    return Decimal(cleaned)


def category_totals(csv_text: str) -> dict[str, str]:
    """Return ``{category: total}`` with categories lower-cased and sorted.

    Totals are strings with exactly two decimals so that they can be written to a report
    without float rounding surprises.
    """
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    totals: dict[str, Decimal] = {}
    for row in rows:
        key = row["category"].strip().lower()
        totals[key] = totals.get(key, Decimal("0")) + parse_amount(row["amount"])
    return {key: f"{value:.2f}" for key, value in sorted(totals.items())}
