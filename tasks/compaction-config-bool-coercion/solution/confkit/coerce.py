"""Turn configuration strings into typed values.

Everything in a configuration file is text; the schema says what a field should be, and
the functions here convert. Each converter raises :class:`CoercionError` with the
offending text rather than guessing, because a silently wrong type (a port of 0, a
timeout of None) fails much later and far away from the line that caused it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from confkit.errors import CoercionError

TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0"})

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$")
_DURATION_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def to_bool(text: str) -> bool:
    """Read a boolean the way people write them in config files.

    Only the listed words count; anything else is an error rather than True, because a
    typo such as ``debug = of`` must not switch a feature on.
    """
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise CoercionError(f"not a boolean (on/off, yes/no, true/false, 1/0): {text!r}")


def to_int(text: str) -> int:
    """An integer; underscores as digit separators (``1_000``) are allowed."""
    try:
        return int(text.strip().replace("_", ""))
    except ValueError:
        raise CoercionError(f"not an integer: {text!r}") from None


def to_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise CoercionError(f"not a number: {text!r}") from None


def to_list(text: str) -> list[str]:
    """Comma- or newline-separated items, stripped, empty items dropped."""
    return [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]


def to_duration(text: str) -> float:
    """Seconds in ``250ms``, ``30s``, ``5m`` or ``1.5h``."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise CoercionError(f"not a duration (e.g. 30s, 5m): {text!r}")
    return float(match.group(1)) * _DURATION_SECONDS[match.group(2)]


CONVERTERS: dict[str, Callable[[str], object]] = {
    "str": str,
    "bool": to_bool,
    "int": to_int,
    "float": to_float,
    "list": to_list,
    "duration": to_duration,
}


def coerce(text: str, kind: str) -> object:
    """Convert ``text`` to ``kind``, one of the keys of CONVERTERS.

    Raises:
        CoercionError: the text does not fit the kind, or the kind is unknown.
    """
    try:
        converter = CONVERTERS[kind]
    except KeyError:
        raise CoercionError(f"unknown field type {kind!r}") from None
    return converter(text)
