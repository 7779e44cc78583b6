"""Byte offsets to (line, column) and back: the one conversion every position goes through.

Diagnostics are found at byte offsets of task.json; editors speak in lines and columns
counted in characters (the command line, SARIF) or in UTF-16 units (the language server
protocol). Split from :mod:`endstate_author.engine.jsonpos`, which re-exports it.
"""

from __future__ import annotations

from bisect import bisect_right


class LineIndex:
    """Byte offsets to (line, column) in characters or UTF-16 units, all 0-based."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        starts = [0]
        pos = data.find(b"\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = data.find(b"\n", pos + 1)
        self.line_starts = starts
        self._ascii: dict[int, bool] = {}

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset) - 1

    def _ascii_line(self, line: int) -> bool:
        known = self._ascii.get(line)
        if known is None:
            end = self.line_starts[line + 1] if line + 1 < len(self.line_starts) else len(self.data)
            known = self._ascii[line] = self.data[self.line_starts[line] : end].isascii()
        return known

    def position(self, offset: int, *, utf16: bool = False) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.data)))
        line = self.line_of(offset)
        if self._ascii_line(line):  # bytes are characters are UTF-16 units: no decoding
            return line, offset - self.line_starts[line]
        prefix = self.data[self.line_starts[line] : offset].decode("utf-8", errors="replace")
        if utf16:
            return line, len(prefix.encode("utf-16-le")) // 2
        return line, len(prefix)

    def offset(self, line: int, column: int, *, utf16: bool = False) -> int:
        """The byte offset of a 0-based (line, column); clamped to the text."""
        if line >= len(self.line_starts):
            return len(self.data)
        start = self.line_starts[max(0, line)]
        end = self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts) else len(self.data)
        text = self.data[start:end].decode("utf-8", errors="replace")
        if utf16:
            units = 0
            for i, ch in enumerate(text):
                if units >= column:
                    return start + len(text[:i].encode("utf-8"))
                units += 2 if ord(ch) > 0xFFFF else 1
            return end
        return start + len(text[:column].encode("utf-8"))

    def line_text(self, line: int) -> str:
        start = self.line_starts[line]
        end = self.line_starts[line + 1] if line + 1 < len(self.line_starts) else len(self.data)
        return self.data[start:end].decode("utf-8", errors="replace").rstrip("\r\n")
