"""What an attempt changed, and whether the change holds the reference's behaviour."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.sandbox.snapshot import Snapshot
from endstate_harness.task import Task

MIN_LINE_CHARS = 6
"""A reference line shorter than this (``else:``, ``pass``, ``)``) says nothing about behaviour."""

REFERENCE_PRESENT = 0.5
"""The share of the reference's meaningful added lines an end state must hold to count as
containing the reference behaviour."""


@dataclass(frozen=True)
class Change:
    """One path the attempt added, edited or deleted (None: absent on that side)."""

    path: str
    before: bytes | None
    after: bytes | None


def end_state_files(snapshot: Snapshot) -> dict[str, bytes]:
    return {rel: e.data for rel, e in snapshot.entries.items() if e.kind == "f"}


def changes(fixture: dict[str, bytes], end: dict[str, bytes]) -> list[Change]:
    """Every file that differs between the fixture and the end state, by path."""
    out = []
    for rel in sorted(set(fixture) | set(end)):
        before, after = fixture.get(rel), end.get(rel)
        if before != after:
            out.append(Change(rel, before, after))
    return out


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _is_binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:8192]


def unified_diff(items: list[Change]) -> str:
    """A ``git diff``-shaped text of the changes (binary files named, not shown)."""
    parts: list[str] = []
    for change in items:
        a = f"a/{change.path}" if change.before is not None else "/dev/null"
        b = f"b/{change.path}" if change.after is not None else "/dev/null"
        if _is_binary(change.before) or _is_binary(change.after):
            parts.append(f"Binary files {a} and {b} differ\n")
            continue
        body = list(difflib.unified_diff(_lines(change.before), _lines(change.after), a, b))
        parts.extend(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in body
        )
    return "".join(parts)


def _meaningful(line: str) -> bool:
    text = line.strip()
    return len(text) >= MIN_LINE_CHARS and not text.startswith("#")


def reference_lines(task: Task) -> dict[str, list[str]]:
    """Per file the solution changes, the meaningful lines it adds to the fixture's version."""
    solution = task.solution
    if solution is None:
        return {}
    out: dict[str, list[str]] = {}
    for path in sorted(solution.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(solution).as_posix()
        if any(part in PRUNED_NAMES for part in Path(rel).parts):
            continue
        fixture_file = task.fixture / rel
        before = fixture_file.read_bytes() if fixture_file.is_file() else None
        after = path.read_bytes()
        if _is_binary(after):
            continue
        have = Counter(line.strip() for line in _lines(before))
        added = []
        for line in _lines(after):
            key = line.strip()
            if have[key] > 0:
                have[key] -= 1
            elif _meaningful(line):
                added.append(key)
        if added:
            out[rel] = added
    return out


@dataclass(frozen=True)
class Coverage:
    """How much of the reference's added lines the end state holds."""

    found: int
    total: int
    missing: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        return self.found / self.total if self.total else 0.0

    @property
    def present(self) -> bool:
        return self.total > 0 and self.share >= REFERENCE_PRESENT

    def describe(self) -> str:
        if not self.total:
            return "the reference solution adds no line to compare with"
        return (
            f"the end state holds {self.found} of the reference solution's {self.total} "
            f"added lines ({self.share:.0%})"
        )


def reference_coverage(reference: dict[str, list[str]], end: dict[str, bytes]) -> Coverage:
    found = 0
    total = 0
    missing: list[str] = []
    for rel, lines in reference.items():
        have = Counter(line.strip() for line in _lines(end.get(rel)))
        for line in lines:
            total += 1
            if have[line] > 0:
                have[line] -= 1
                found += 1
            else:
                missing.append(f"{rel}: {line}")
    return Coverage(found, total, tuple(missing[:5]))
