"""Between endstate_author's positions and the protocol's: byte offsets and 1-based character
columns on one side, LSP positions (0-based lines, UTF-16 code units) on the other; and
between file URIs and paths.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp

from endstate_author.assist import utf16_column
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.engine.jsonpos import LineIndex
from endstate_author.engine.textsafe import shown

SOURCE = "endstate-author"
"""The ``source`` of every diagnostic the server publishes."""


class Lines:
    """One text's line index, for converting any number of its offsets and positions."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.index = LineIndex(data)

    def position(self, offset: int) -> lsp.Position:
        """A byte offset → an LSP position."""
        line, character = self.index.position(offset, utf16=True)
        return lsp.Position(line=line, character=character)

    def range(self, start: int, end: int) -> lsp.Range:
        """A byte range → an LSP range."""
        return lsp.Range(start=self.position(start), end=self.position(end))

    def char_position(self, line: int, column: int) -> lsp.Position:
        """A 1-based line and character column → an LSP position; past the last line, the
        column is kept as it is (a finding about a file that changed since)."""
        line0 = max(0, line - 1)
        if line0 >= len(self.index.line_starts):
            return lsp.Position(line=line0, character=max(0, column - 1))
        return lsp.Position(
            line=line0, character=utf16_column(self.index.line_text(line0), column - 1)
        )

    def offset(self, pos: lsp.Position) -> int:
        """An LSP position → a byte offset, clamped to the text."""
        return self.index.offset(pos.line, pos.character, utf16=True)


def to_lsp(diag: Diagnostic, lines: Lines) -> lsp.Diagnostic:
    """A finding → an LSP diagnostic on the text ``lines`` indexes (the finding's file)."""
    if diag.start_offset is not None and diag.end_offset is not None:
        rng = lines.range(diag.start_offset, diag.end_offset)
    else:
        rng = lsp.Range(
            start=lines.char_position(diag.line, diag.column),
            end=lines.char_position(diag.end_line, diag.end_column),
        )
    return lsp.Diagnostic(
        range=rng,
        # a prove finding quotes the end state: an editor drawing in a terminal shows its
        # escape sequences and bidirectional overrides as text, never obeys them
        message=shown(diag.message),
        severity=lsp.DiagnosticSeverity.Error
        if diag.severity == "error"
        else lsp.DiagnosticSeverity.Warning,
        code=diag.code,
        source=SOURCE,
    )


def overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    """Whether two ranges share a position (touching ends count)."""

    def key(p: lsp.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def uri_to_path(uri: str) -> Path | None:
    """A ``file:`` URI → its path; None for any other scheme (an unsaved buffer, a diff)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def path_to_uri(path: Path) -> str:
    return path.absolute().as_uri()
