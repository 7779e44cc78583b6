"""How each currency is displayed, as data.

Adding a currency is adding an entry here; the formatting code never changes for it.
"""

from __future__ import annotations

from typing import NamedTuple


class Currency(NamedTuple):
    """Display rules of one currency."""

    symbol: str
    symbol_first: bool
    minor_digits: int
    thousands: str
    decimal: str


CURRENCIES: dict[str, Currency] = {
    "USD": Currency(symbol="$", symbol_first=True, minor_digits=2, thousands=",", decimal="."),
    "EUR": Currency(symbol=" €", symbol_first=False, minor_digits=2, thousands=".", decimal=","),
    # endstate: equivalent mcc8ecaf8 JPY has no minor digits, so its decimal separator is never written
    "JPY": Currency(symbol="¥", symbol_first=True, minor_digits=0, thousands=",", decimal=""),
}
