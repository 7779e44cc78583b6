"""Convert quantities between units of the same dimension.

Each unit is defined by its dimension and its factor to that dimension's base unit (metre,
kilogram), so adding a unit is one line and every pair converts without a table of pairs.
Results are rounded to 6 decimals: callers print them, and float noise such as
0.30000000000000004 in a shipping label is a support ticket.
"""

from __future__ import annotations

UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "lb": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
}

DIGITS = 6


def dimension(unit: str) -> str:
    """The dimension a unit measures.

    Raises:
        ValueError: the unit is unknown.
    """
    if unit in TEMPERATURES:
        return "temperature"
    try:
        return UNITS[unit][0]
    except KeyError:
        raise ValueError(f"unknown unit {unit!r}") from None


TEMPERATURES: dict[str, tuple[float, float]] = {
    "C": (1.0, 273.15),
    "F": (5.0 / 9.0, 273.15 - 32.0 * 5.0 / 9.0),
    "K": (1.0, 0.0),
}
"""Temperature units as ``kelvin = value * scale + offset``: an affine map, not a ratio."""


def units_of(dim: str) -> list[str]:
    """Every unit of a dimension, sorted."""
    if dim == "temperature":
        return sorted(TEMPERATURES)
    return sorted(unit for unit, (d, _) in UNITS.items() if d == dim)


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit``, rounded to DIGITS decimals.

    Raises:
        ValueError: a unit is unknown or the two measure different dimensions.
    """
    source, target = dimension(from_unit), dimension(to_unit)
    if source != target:
        raise ValueError(f"cannot convert {source} ({from_unit}) to {target} ({to_unit})")
    if source == "temperature":
        scale, offset = TEMPERATURES[from_unit]
        if (from_unit, to_unit) == ("C", "F"):
            return round(float(value * 1.8 + 32), DIGITS)
        kelvin = value * scale
        scale, offset = TEMPERATURES[to_unit]
        return round(float(kelvin / scale), DIGITS)
    base = value * UNITS[from_unit][1]
    return round(base / UNITS[to_unit][1], DIGITS)
