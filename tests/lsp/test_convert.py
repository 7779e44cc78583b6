"""Byte offsets ↔ LSP positions (UTF-16 columns), on one line index per text, no server."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from endstate_author.engine.diagnostics import Diagnostic
from endstate_lsp.convert import Lines, overlaps, path_to_uri, to_lsp, uri_to_path

TEXT = '{\n  "a": "é😀x",\r\n  "b": 1\n}'
DATA = TEXT.encode("utf-8")


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("{", pos(0, 0)),
        ('"a"', pos(1, 2)),
        ("é", pos(1, 8)),
        ("😀", pos(1, 9)),  # é is one UTF-16 unit
        ("x", pos(1, 11)),  # 😀 is two
        ('"b"', pos(2, 2)),
        ("}", pos(3, 0)),
    ],
)
def test_offset_to_position_and_back(needle: str, expected: lsp.Position) -> None:
    lines = Lines(DATA)
    offset = DATA.index(needle.encode("utf-8"))
    assert lines.position(offset) == expected
    assert lines.offset(expected) == offset


def test_range_and_clamping() -> None:
    lines = Lines(DATA)
    start = DATA.index("😀".encode())
    assert lines.range(start, start + 4) == lsp.Range(start=pos(1, 9), end=pos(1, 11))
    assert lines.position(10_000) == pos(3, 1)
    assert lines.offset(pos(99, 0)) == len(DATA)


@pytest.mark.parametrize(
    ("line", "column", "expected"),
    [
        (1, 1, pos(0, 0)),
        (2, 10, pos(1, 9)),
        (2, 11, pos(1, 11)),  # after 😀: two units
        (9, 4, pos(8, 3)),
        (0, 0, pos(0, 0)),
    ],
)
def test_character_columns(line: int, column: int, expected: lsp.Position) -> None:
    """1-based character columns (what findings without offsets carry) → UTF-16 units."""
    assert Lines(DATA).char_position(line, column) == expected


def test_finding_to_lsp(tmp_path: Path) -> None:
    lines = Lines(DATA)
    start = DATA.index(b'"b"')
    by_offset = Diagnostic(
        "ES101", "error", "unknown key", tmp_path, start_offset=start, end_offset=start + 3
    )
    assert to_lsp(by_offset, lines) == lsp.Diagnostic(
        range=lsp.Range(start=pos(2, 2), end=pos(2, 5)),
        message="unknown key",
        severity=lsp.DiagnosticSeverity.Error,
        code="ES101",
        source="endstate-author",
    )
    by_column = Diagnostic("ES9", "warning", "w", tmp_path, 2, 11, 2, 12)
    got = to_lsp(by_column, lines)
    assert (got.range, got.severity) == (
        lsp.Range(start=pos(1, 11), end=pos(1, 12)),
        lsp.DiagnosticSeverity.Warning,
    )


def test_overlaps() -> None:
    def rng(a: int, b: int, c: int, d: int) -> lsp.Range:
        return lsp.Range(start=pos(a, b), end=pos(c, d))

    assert overlaps(rng(1, 0, 1, 5), rng(1, 5, 2, 0))  # touching ends
    assert overlaps(rng(0, 0, 0, 0), rng(0, 0, 0, 0))
    assert not overlaps(rng(1, 0, 1, 4), rng(1, 5, 2, 0))
    assert not overlaps(rng(3, 0, 3, 1), rng(1, 0, 2, 9))


def test_uris(tmp_path: Path) -> None:
    path = tmp_path / "a b" / "task.json"
    assert uri_to_path(path_to_uri(path)) == path
    assert uri_to_path("untitled:Untitled-1") is None
