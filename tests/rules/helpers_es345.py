"""Helpers shared by the ES3/ES4/ES5 rule tests: find a finding, its exact span, apply a fix."""

from __future__ import annotations

from pathlib import Path

from endstate_author.engine.diagnostics import Diagnostic, Fix
from tests.rules.conftest import lint


def found(task: Path, code: str) -> list[Diagnostic]:
    """The findings of ``code`` on ``task``; fails listing every finding when there is none."""
    every = lint(task)
    hits = [d for d in every if d.code == code]
    assert hits, f"{code} missing from {[(d.code, d.message) for d in every]}"
    return hits


def absent(task: Path, *codes: str) -> None:
    every = lint(task)
    hits = [(d.code, d.message) for d in every if d.code in codes]
    assert not hits, hits


def span(task: Path, needle: str, nth: int = 0) -> tuple[int, int, int, int]:
    """1-based (line, column, end_line, end_column) of the ``nth`` ``needle`` in task.json,
    end exclusive, as a Diagnostic reports a node written on one line."""
    text = (task / "task.json").read_text(encoding="utf-8")
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return line, col, line, col + len(needle)


def where(d: Diagnostic) -> tuple[int, int, int, int]:
    return d.line, d.column, d.end_line, d.end_column


def apply_fix(fix: Fix) -> None:
    """Apply a fix the way ``lint --fix`` must: splice edits from the end, create files."""
    by_file: dict[Path, list[tuple[int, int, str]]] = {}
    for edit in fix.edits:
        by_file.setdefault(edit.file, []).append((edit.start, edit.end, edit.new_text))
    for file, edits in by_file.items():
        data = file.read_bytes()
        for start, end, new in sorted(edits, reverse=True):
            data = data[:start] + new.encode("utf-8") + data[end:]
        file.write_bytes(data)
    for create in fix.creates:
        assert not create.file.exists()
        create.file.parent.mkdir(parents=True, exist_ok=True)
        create.file.write_text(create.content, encoding="utf-8")
