"""Findings: what lint, prove and the editor show an author."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace bytes ``start:end`` of ``file`` with ``new_text``."""

    file: Path
    start: int
    end: int
    new_text: str


@dataclass(frozen=True, slots=True)
class FileCreate:
    """Create ``file`` with ``content`` (never overwrites an existing file)."""

    file: Path
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...] = ()
    creates: tuple[FileCreate, ...] = ()
    safe: bool = True


@dataclass(slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    file: Path
    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    start_offset: int | None = None
    end_offset: int | None = None
    fix: Fix | None = None
    rule: str = ""
    related: list[str] = field(default_factory=list)
    hint: str = ""
    """What to do about it, for people (the first sentence of its rule's Fix, set where the
    rules run, so a cached lint prints it without loading the rules' documentation)."""
    pointer: tuple[str | int, ...] | None = None
    """Where in task.json the finding is, as a JSON path (``("graders", 2)``), when it is about
    a node of it: an editor re-places it on its buffer, which may have moved since."""
    counterexample: dict[str, Any] | None = None
    """A surviving mutant's evidence (prove's ES911: the call, both outcomes, the ready
    assertion, the called name's module): on the finding itself, so a consumer of the
    findings (JSON, the editor's "add this check to the holdout") need not join them with
    prove's checks."""
    evidence: dict[str, Any] | None = None
    """A flaky grading's evidence (prove's ES909: each grading's hash seed and test order, and
    each flipped test's outcomes), on the finding for the same reason."""

    def sort_key(self) -> tuple[str, int, int, str]:
        return (str(self.file), self.line, self.column, self.code)

    def to_json(self, relative_to: Path | None = None) -> dict[str, object]:
        data: dict[str, object] = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": display_path(self.file, relative_to),
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }
        if self.pointer is not None:
            data["pointer"] = list(self.pointer)
        if self.counterexample is not None:
            data["counterexample"] = self.counterexample
        if self.evidence is not None:
            data["evidence"] = self.evidence
        return data


def display_path(path: Path, relative_to: Path | None = None) -> str:
    """The path as the user gave it, or relative to the working directory when below it; a
    name that is not UTF-8 as :func:`escaped`."""
    base = relative_to or Path.cwd()
    try:
        if path.is_absolute():
            return escaped(path.relative_to(base).as_posix())
    except ValueError:
        pass
    return escaped(path.as_posix())


def escaped(text: str) -> str:
    """``text`` with the bytes of a name that is not UTF-8 shown as ``\\xe9`` escapes.

    Why: Python reads such a name as lone surrogates (``caf\\udce9``), which text output would
    write as a raw byte or refuse, JSON as a lone-surrogate escape no strict parser accepts,
    and a message as whatever the formatter chose; one rendering, the same in text, JSON,
    SARIF and the editor, is the one an author can search for."""
    if text.isascii():
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to: its own bytes, escaped
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


SNIPPET_MAX_BYTES = 1 << 20


def read_source_lines(path: Path, limit: int = SNIPPET_MAX_BYTES) -> list[str] | None:
    """The lines of the file a finding is on, for a snippet; None when it must not be shown.

    A finding may sit on a symlink (ES410: a fixture link to ``/etc/passwd``), and the
    snippet would print a line of whatever the link points at into the terminal, CI logs and
    every other output. So a snippet is read only from a regular file that really is where
    its path says: no link on the way from its task folder (the nearest folder above holding
    ``task.json``; for a file outside any task, its own folder) down to it, the path's real
    location inside that folder, and opened with ``O_NOFOLLOW`` (and ``O_NONBLOCK``, so a
    fifo cannot hang the output) and checked to be a regular file of at most ``limit`` bytes
    on the open descriptor itself. Links *above* the task folder are the author's own layout
    and are allowed.
    """
    absolute = os.path.abspath(path)
    root = _owning_folder(absolute)
    try:
        inside = os.path.realpath(absolute) == os.path.join(
            os.path.realpath(root), os.path.relpath(absolute, root)
        )
        if not inside:
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(absolute, flags | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            return None
        return b"".join(chunks).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    finally:
        os.close(fd)


def _owning_folder(absolute: str) -> str:
    """The nearest folder above ``absolute`` holding task.json, else its own folder."""
    folder = os.path.dirname(absolute)
    while True:
        if os.path.lexists(os.path.join(folder, "task.json")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.dirname(absolute)
        folder = parent


def describe_json(value: Any) -> str:
    """A JSON value as a message names it: `the string "20"`, `a boolean`, `an array`."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        text = value if len(value) <= 60 else value[:57] + "..."
        return f"the string {json.dumps(text)}"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    return "an object"
