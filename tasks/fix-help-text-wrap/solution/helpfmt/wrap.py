"""Greedy word wrapping for help text.

Runs of whitespace collapse to one space. A word longer than the width is cut into
width-sized pieces rather than overflowing, because an overlong line wraps badly in a
terminal and breaks alignment of everything after it.
"""

from __future__ import annotations


def _pieces(word: str, width: int) -> list[str]:
    return [word[i : i + width] for i in range(0, len(word), width)]


def wrap(text: str, width: int) -> list[str]:
    """Split ``text`` into lines of at most ``width`` characters.

    Raises:
        ValueError: ``width`` is less than 1.
    """
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    lines: list[str] = []
    line = ""
    for word in text.split():
        for piece in _pieces(word, width):
            if not line:
                line = piece
            elif len(line) + 1 + len(piece) <= width:
                line = f"{line} {piece}"
            else:
                lines.append(line)
                line = piece
    if line:
        lines.append(line)
    return lines


def fill(text: str, width: int, prefix: str = "") -> str:
    """Wrap ``text`` so that each line, ``prefix`` included, fits in ``width``.

    Raises:
        ValueError: the prefix leaves no room for text.
    """
    room = width - len(prefix)
    if room < 1:
        raise ValueError(f"prefix {prefix!r} leaves no room in width {width}")
    return "\n".join(prefix + line for line in wrap(text, room))
