"""Parse and format compact durations such as ``2d4h`` or ``1h30m15s``.

Values are whole seconds: the scheduler has no use for sub-second timeouts, and integers
make config diffs exact.
"""

from __future__ import annotations

import re

UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_FORMAT = re.compile(r"^(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?$")
_COMPONENT = re.compile(r"(\d+)([dhms])")


def parse_duration(text: str) -> int:
    """Seconds in ``text``; units d, h, m, s, each at most once, largest first.

    Raises:
        ValueError: ``text`` is empty or not of that form.
    """
    compact = text.strip().lower()
    if not compact or not _FORMAT.match(compact):
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(count) * UNIT_SECONDS[unit] for count, unit in _COMPONENT.findall(compact))


def format_duration(seconds: int) -> str:
    """The shortest compact form of ``seconds`` (``5400`` -> ``'1h30m'``, ``0`` -> ``'0s'``)."""
    if seconds < 0:
        raise ValueError(f"negative duration: {seconds}")
    parts = []
    for unit, size in UNIT_SECONDS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
