"""Padded GitHub-flavoured Markdown tables.

Padding is not needed by Markdown renderers, but the tables are also read as plain text in
terminals and diffs, where aligned columns are what makes them readable.
"""

from __future__ import annotations

MIN_WIDTH = 3


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def column_widths(headers: list[str], rows: list[list[object]]) -> list[int]:
    """The width of each column: its widest cell or header, and at least MIN_WIDTH."""
    widths = [max(MIN_WIDTH, len(_cell(h))) for h in headers]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells, expected {len(headers)}")
        for index, value in enumerate(row):
            widths[index] = max(widths[index], len(_cell(value)))
    return widths


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


_SEPARATORS = {
    "left": lambda w: ":" + "-" * (w - 1),
    "right": lambda w: "-" * (w - 1) + ":",
    "center": lambda w: ":" + "-" * (w - 1),
}


def _pad(text: str, width: int, how: str) -> str:
    if how == "right":
        return text.rjust(width)
    return text.ljust(width)


def render_table(
    headers: list[str], rows: list[list[object]], *, align: list[str] | None = None
) -> str:
    """The table as text, one line per row, without a trailing newline.

    Raises:
        ValueError: a row or ``align`` does not have one entry per column, or an alignment
            is not one of left, right, center.
    """
    if align is None:
        align = ["left"] * len(headers)
    if len(align) != len(headers):
        raise ValueError(f"align has {len(align)} entries, expected {len(headers)}")
    for how in align:
        if how not in _SEPARATORS:
            raise ValueError(f"unknown alignment {how!r}; use left, right or center")
    widths = column_widths(headers, rows)
    lines = [_line([_pad(_cell(h), w, a) for h, w, a in zip(headers, widths, align)])]
    lines.append(_line([_SEPARATORS[a](w) for w, a in zip(widths, align)]))
    for row in rows:
        lines.append(_line([_pad(_cell(v), w, a) for v, w, a in zip(row, widths, align)]))
    return "\n".join(lines)
