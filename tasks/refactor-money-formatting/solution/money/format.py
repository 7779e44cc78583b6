"""Display formatting of money amounts.

Amounts are integers of the currency's minor unit (cents for USD and EUR, yen for JPY)
because floats cannot represent 0.10 and invoices must add up to the cent. How each
currency looks lives in :mod:`money.currencies`; this module only applies those rules.
"""

from __future__ import annotations

from money.currencies import CURRENCIES


def format_money(amount_minor: int, currency: str) -> str:
    """Format ``amount_minor`` minor units of ``currency`` for display.

    Raises:
        ValueError: ``currency`` is not in the table.
    """
    try:
        rules = CURRENCIES[currency]
    except KeyError:
        raise ValueError(f"unknown currency {currency!r}") from None
    sign = "-" if amount_minor < 0 else ""
    whole, minor = divmod(abs(amount_minor), 10**rules.minor_digits)
    number = f"{whole:,}".replace(",", rules.thousands)
    if rules.minor_digits:
        number += f"{rules.decimal}{minor:0{rules.minor_digits}d}"
    if rules.symbol_first:
        return f"{sign}{rules.symbol}{number}"
    return f"{sign}{number}{rules.symbol}"


def format_usd(amount_minor: int) -> str:
    """``123456`` -> ``'$1,234.56'``; negatives as ``'-$1,234.56'``."""
    return format_money(amount_minor, "USD")


def format_eur(amount_minor: int) -> str:
    """``123456`` -> ``'1.234,56 €'``; negatives as ``'-1.234,56 €'``."""
    return format_money(amount_minor, "EUR")


def format_jpy(amount_minor: int) -> str:
    """``123456`` -> ``'¥123,456'``: the yen has no minor unit."""
    return format_money(amount_minor, "JPY")
